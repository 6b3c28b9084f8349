"""Encode many character spans over a shared set of texts: each text goes through the model once.

The benchmarks (WiC, WSD, word similarity, contextuality) all ask for hidden states of words
in sentences, often the same sentences. :func:`encode_spans` runs every distinct text once
(:meth:`ContextualModel.encode_tokens`, all layers), pools the tokens that overlap each span
(mean, as :meth:`ContextualModel.encode_occurrences` does) and keeps only those vectors. The
result is cached on disk (float16) per model and span set.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from contextlens.core.contextual_models import ContextualModel
from contextlens.core.disk_cache import cache_key, cached_arrays
from contextlens.errors import InputError

Span = tuple[int, int, int]  # (text index, start, end)
Progress = Callable[[int, int], None]  # (done, total)

SPAN_ENCODING_VERSION = 1


@dataclass
class SpanEncoding:
    """``hidden[i, layer]`` is span i's hidden state after ``layer`` (0 = embedding output)."""

    model: str
    hidden: np.ndarray  # (n_spans, num_layers + 1, d), float32
    input_rows: np.ndarray  # (n_spans, d): mean input-embedding row of the span's tokens

    @property
    def num_layers(self) -> int:
        return self.hidden.shape[1] - 1

    def layer(self, layer: int) -> np.ndarray:
        return self.hidden[:, layer, :]


def encode_spans(
    model: ContextualModel,
    texts: Sequence[str],
    spans: Sequence[Span],
    *,
    chunk_size: int = 64,
    progress: Progress | None = None,
    use_cache: bool = True,
) -> SpanEncoding:
    """Hidden states (all layers) and input rows of every span, one forward pass per text."""
    key = cache_key("spans", SPAN_ENCODING_VERSION, model.name, str(model.source), list(texts), list(spans))

    def compute() -> dict[str, np.ndarray]:
        hidden, rows = _encode(model, texts, spans, chunk_size, progress)
        return {"hidden": hidden.astype(np.float16), "input_rows": rows.astype(np.float32)}

    arrays = cached_arrays(f"spans-{_safe(model.name)}", key, compute, enabled=use_cache)
    return SpanEncoding(model.name, arrays["hidden"].astype(np.float32), arrays["input_rows"])


def _encode(
    model: ContextualModel, texts: Sequence[str], spans: Sequence[Span], chunk_size: int, progress: Progress | None
) -> tuple[np.ndarray, np.ndarray]:
    by_text: dict[int, list[int]] = defaultdict(list)
    for i, (t, start, end) in enumerate(spans):
        if not 0 <= t < len(texts) or not 0 <= start < end <= len(texts[t]):
            raise InputError(f"span {i} ({t}, {start}, {end}) lies outside its text; give valid character spans")
        by_text[t].append(i)
    n_layers = model.num_layers + 1
    hidden = np.zeros((len(spans), n_layers, model.hidden_size), dtype=np.float32)
    rows = np.zeros((len(spans), model.hidden_size), dtype=np.float32)
    weight = model.model.get_input_embeddings().weight.detach().float().numpy()
    order = sorted(by_text, key=lambda t: (len(texts[t]), t))  # similar lengths batch together
    done = 0
    for c in range(0, len(order), chunk_size):
        chunk = order[c : c + chunk_size]
        states = model.encode_tokens([texts[t] for t in chunk], layers=None, batch_size=chunk_size)
        for t, ts in zip(chunk, states, strict=True):
            for i in by_text[t]:
                _, start, end = spans[i]
                positions = [p for p, (a, b) in enumerate(ts.offsets) if a < end and b > start and b > a]
                if not positions:
                    raise InputError(
                        f"span {start}:{end} of {texts[t]!r} covers no token of {model.name} (cut by truncation?)"
                    )
                hidden[i] = ts.states[:, positions, :].mean(axis=1)
                rows[i] = weight[[ts.token_ids[p] for p in positions]].mean(axis=0)
        done += len(chunk)
        if progress is not None:
            progress(done, len(order))
    return hidden, rows


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[-60:]
