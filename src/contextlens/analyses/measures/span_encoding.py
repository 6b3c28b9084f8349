"""Encode many character spans over a shared set of texts, cached on disk.

The benchmarks (WiC, WSD, word similarity, contextuality) all ask for hidden states (all
layers) of words in sentences, often the same sentences. :func:`encode_spans` is the core's
occurrence path (:func:`~contextlens.core.alignment.tokenize_many` then
:func:`~contextlens.core.extraction.extract_targets`, mean pooling), so a span gets exactly
the vectors :meth:`ContextualModel.encode_occurrences` gives it, windowing included; each
distinct text still runs once. What this module adds is the disk cache (float16) per model
and span set; the calibrations' encodings (``shared``) are keyed by the model's shared identity:
fp32 on torch and fp32 on ONNX Runtime whose export check passed read one entry
(:attr:`~contextlens.core.backbone.Backbone.shared_identity`), and the entry says which of them
computed it (:class:`MadeOn`); the benchmarks' own encodings stay per runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contextlens.core.alignment import tokenize_many
from contextlens.core.contextual_models import ContextualModel
from contextlens.core.disk_cache import cache_key, cache_path, cached_arrays
from contextlens.core.extraction import Progress, extract_targets
from contextlens.core.occurrences import Occurrence
from contextlens.errors import InputError

Span = tuple[int, int, int]  # (text index, start, end)

# 2: spans go through the core's alignment and extraction (a too long text is windowed around
# the span instead of cut at its end).
SPAN_ENCODING_VERSION = 2


class SpanRows:
    """Collects texts and spans, giving each distinct one a stable row (the suite and the WiC
    pair sets each index their spans this way)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.text_index: dict[str, int] = {}
        self.spans: list[Span] = []
        self.span_index: dict[Span, int] = {}

    def text(self, text: str) -> int:
        if text not in self.text_index:
            self.text_index[text] = len(self.texts)
            self.texts.append(text)
        return self.text_index[text]

    def span(self, text: str, start: int, end: int) -> int:
        key = (self.text(text), start, end)
        if key not in self.span_index:
            self.span_index[key] = len(self.spans)
            self.spans.append(key)
        return self.span_index[key]


@dataclass(frozen=True)
class MadeOn:
    """Which backend computed a calibration that fp32 on torch and on ONNX Runtime share, and the
    export check that makes sharing it honest (the ONNX graph's largest difference from torch on
    the drift set; None where this machine has no passing one)."""

    backend: str  # "torch fp32", "onnx fp32", "torch int8", "onnx int8"
    export_check: float | None = None

    @property
    def note(self) -> str:
        check = "" if self.export_check is None else f", export check max diff {self.export_check:.2g}"
        return f"computed on {self.backend}{check}"

    def to_dict(self) -> dict[str, object]:
        return {"computed_on": self.backend, "export_check_max_abs_diff": self.export_check, "note": self.note}


def backend_label(model: ContextualModel) -> str:
    return f"{model.backend.runtime} {model.backend.precision}"


def made_on_arrays(model: ContextualModel) -> dict[str, np.ndarray]:
    """What a shared cache entry stores of who computed it."""
    return {"made_on": np.array(backend_label(model))}


def read_made_on(arrays: dict[str, np.ndarray], model: ContextualModel) -> MadeOn:
    """Who computed a shared entry; an entry from before the record was kept was computed by the
    backend whose identity its key holds (torch fp32 for the shared fp32 key)."""
    if "made_on" in arrays:
        made = str(arrays["made_on"])
    else:
        made = "torch fp32" if model.shared_identity == str(model.source) else backend_label(model)
    return MadeOn(made, model.export_check_diff)


@dataclass
class SpanEncoding:
    """``hidden[i, layer]`` is span i's hidden state after ``layer`` (0 = embedding output)."""

    model: str
    hidden: np.ndarray  # (n_spans, num_layers + 1, d), float32
    input_rows: np.ndarray  # (n_spans, d): mean input-embedding row of the span's tokens
    made_on: MadeOn | None = None  # which backend computed it (a shared entry: fp32 on torch or ONNX Runtime)

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
    shared: bool = False,
) -> SpanEncoding:
    """Hidden states (all layers) and input rows of every span, one forward pass per text.

    ``shared``: keyed by the model's shared identity (the calibrations same-sense and the sense
    layer choice read: fp32 on torch and on ONNX Runtime read one entry); else by its identity
    (the benchmarks' own encodings stay per runtime)."""
    key = _key(model, texts, spans, shared)

    def compute() -> dict[str, np.ndarray]:
        hidden, rows = _encode(model, texts, spans, chunk_size, progress)
        return {"hidden": hidden.astype(np.float16), "input_rows": rows.astype(np.float32), **made_on_arrays(model)}

    arrays = cached_arrays(f"spans-{_safe(model.name)}", key, compute, enabled=use_cache)
    made = read_made_on(arrays, model)
    return SpanEncoding(model.name, arrays["hidden"].astype(np.float32), arrays["input_rows"], made)


def _key(model: ContextualModel, texts: Sequence[str], spans: Sequence[Span], shared: bool) -> str:
    identity = model.shared_identity if shared else model.identity
    return cache_key("spans", SPAN_ENCODING_VERSION, model.name, identity, list(texts), list(spans))


def is_encoded(model: ContextualModel, texts: Sequence[str], spans: Sequence[Span], shared: bool = False) -> bool:
    """Whether :func:`encode_spans` would read these spans from the disk cache (no forward pass)."""
    return cache_path(f"spans-{_safe(model.name)}", _key(model, texts, spans, shared)).exists()


def _encode(
    model: ContextualModel, texts: Sequence[str], spans: Sequence[Span], chunk_size: int, progress: Progress | None
) -> tuple[np.ndarray, np.ndarray]:
    occurrences = []
    for i, (t, start, end) in enumerate(spans):
        if not 0 <= t < len(texts) or not 0 <= start < end <= len(texts[t]):
            raise InputError(f"span {i} ({t}, {start}, {end}) lies outside its text; give valid character spans")
        occurrences.append(Occurrence(texts[t], start, end))
    toks = tokenize_many(model, occurrences)
    layers = model.check_layers(None)
    return extract_targets(model, toks, layers, "mean", batch_size=chunk_size, progress=progress)


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[-60:]
