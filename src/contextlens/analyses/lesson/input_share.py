"""How much of each layer is still the input row? Averaged over a corpus, not one sentence.

The seeds: "the embedding table is not useless once attention runs". :mod:`.trace` shows it for
one target; this module measures it for every (non-special) token of many texts: per layer, the
mean cosine of the hidden state to the token's own input row (its row of the embedding table)
and, where the model has learned absolute positions, to its position row. A high cosine means
the layer still carries the static row; the drop across layers is the context written over it.
Random tokens' rows are the floor: the cosine of a hidden state to the input row of *another*
token of the same text (the anisotropy every layer has anyway).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextlens.core.alignment import TokenizedOccurrence, tokenize_many
from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.extraction import TokenStates
from contextlens.core.jsonable import plain_json
from contextlens.core.occurrences import Occurrence
from contextlens.core.similarity import normalize_rows
from contextlens.errors import InputError

MIN_TEXTS = 5


@dataclass
class InputRowShare:
    model: str
    corpus: str
    texts: int
    tokens: int
    layers: list[int]
    to_input_row: list[float]  # mean cosine of layer l's hidden state to the token's own input row
    to_other_row: list[float]  # ... to another token's input row (same text): the floor
    to_position_row: list[float] | None  # ... to the token's position row (learned positions only)
    seconds: float
    backend: Backend = REFERENCE  # the model's precision and runtime (core/backend.py)
    truncated: int = 0  # texts longer than one forward pass, read up to the last token that fits

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            **self.backend.to_dict(),
            "corpus": self.corpus,
            "texts": self.texts,
            "truncated": self.truncated,
            "tokens": self.tokens,
            "layers": [
                {
                    "layer": layer,
                    "cosine_to_input_row": self.to_input_row[i],
                    "cosine_to_other_input_row": self.to_other_row[i],
                    "cosine_to_position_row": None if self.to_position_row is None else self.to_position_row[i],
                }
                for i, layer in enumerate(self.layers)
            ],
            "seconds": self.seconds,
        }


def input_row_share(
    model: ContextualModel | str,
    texts: Sequence[str],
    corpus: str = "sentences",
    batch_size: int = 32,
    states: Sequence[TokenStates] | None = None,
) -> InputRowShare:
    """Per layer, the mean cosine of every non-special token's hidden state to its input and position rows.

    The texts are tokenized as :func:`forward_one` does (a text is the occurrence of its stripped
    span) and run in batches of ``batch_size`` (sorted by length, padded; the texts with fewer than
    two non-special tokens are not run); per batch, each layer keeps only the non-special tokens'
    rows. The numbers are the per-text :func:`forward_one` loop's (tests/test_input_share.py).
    ``states``: the texts' token states at every layer, already computed with the same
    ``batch_size`` (the lesson shares them with CKA: analyses/lesson/shared_states.py); no
    forward runs here, and the result is the one its own forward pass gives, bit for bit when
    every text has two or more tokens (else its own batches would differ: to float rounding).
    """
    started = time.perf_counter()
    m = as_contextual(model)
    texts = [t for t in texts if t.strip()]
    if len(texts) < MIN_TEXTS:
        raise InputError(f"the input-row share needs at least {MIN_TEXTS} texts, got {len(texts)}")
    spans = _spans_that_fit(m, texts)
    toks = tokenize_many(m, [Occurrence(t, start, end) for t, (start, end) in zip(texts, spans, strict=True)])
    kept = [[i for i, s in enumerate(tok.special) if not s] for tok in toks]
    items = [(k, tok.input_ids) for k, tok in enumerate(toks) if len(kept[k]) >= 2]
    layers = tuple(range(m.num_layers + 1))
    table = m.position_rows(max((len(ids) for _, ids in items), default=0))
    given = None if states is None else _checked_states(states, texts, toks, kept, layers)
    own, other, pos, n = np.zeros(len(layers)), np.zeros(len(layers)), np.zeros(len(layers)), 0
    for batch in m.batches(items, batch_size, False, "input-row share"):
        sums = _batch_sums(m, batch, kept, given, layers, table)
        own, other, pos, n = own + sums[0], other + sums[1], pos + sums[2], n + sums[3]
    if n == 0:
        raise InputError("no text had two or more tokens; give longer texts")
    return InputRowShare(
        model=m.name, backend=m.backend,
        truncated=sum(end < len(t.rstrip()) for t, (_, end) in zip(texts, spans, strict=True)),
        corpus=corpus, texts=len(texts), tokens=n, layers=list(layers),
        to_input_row=(own / n).tolist(), to_other_row=(other / n).tolist(),
        to_position_row=(pos / n).tolist() if table is not None else None, seconds=time.perf_counter() - started,
    )  # fmt: skip


def _batch_sums(m, batch, kept, given, layers, table) -> tuple[np.ndarray, np.ndarray, np.ndarray | float, int]:
    """One batch's per-layer sums of cosines to each kept token's own row, a neighbour's row and its
    position row, and how many tokens they sum over."""
    ids, mask = m.pad([seq for _, seq in batch])
    sizes = np.array([len(kept[k]) for k, _ in batch])
    at = np.concatenate([kept[k] for k, _ in batch])  # each kept token's position in its text
    positions = np.repeat(np.arange(len(batch)), sizes) * ids.shape[1] + at  # ... in the batch
    flat = m.arrays.index(positions)
    if given is None:
        kept_states = m.run_layers(ids, mask, layers, keep=lambda h, flat=flat: h.reshape(-1, h.shape[-1])[flat])
        stacked = m.arrays.to_numpy(m.arrays.stack(kept_states))
    else:  # the same rows of the same batches' forward, computed before
        stacked = np.concatenate([given[k].states for k, _ in batch], axis=1)
    hidden = normalize_rows(stacked.astype(np.float64))  # (L+1, t, d)
    rows = normalize_rows(m.input_rows(np.asarray(ids).reshape(-1)[positions]).astype(np.float64))
    # each token against its neighbour's row (the one before it in its text; the first, the last's)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    shifted = rows[starts + (np.arange(len(at)) - starts - 1) % np.repeat(sizes, sizes)]
    own = np.einsum("ltd,td->l", hidden, rows)
    other = np.einsum("ltd,td->l", hidden, shifted)
    pos = 0.0 if table is None else np.einsum("ltd,td->l", hidden, normalize_rows(table[at].astype(np.float64)))
    return own, other, pos, len(flat)


def _checked_states(
    states: Sequence[TokenStates],
    texts: Sequence[str],
    toks: Sequence[TokenizedOccurrence],
    kept: Sequence[Sequence[int]],
    layers: tuple[int, ...],
) -> list[TokenStates]:
    """``states`` when each is its text's, at every layer, of the tokens this analysis keeps (a
    text cut to fit is tokenized differently by the two); else InputError."""
    states = list(states)
    if len(states) != len(texts) or any(
        s.text != text or s.layers != layers or s.token_ids != tuple(tok.input_ids[i] for i in keep)
        for s, text, tok, keep in zip(states, texts, toks, kept, strict=False)
    ):
        raise InputError("`states` must be the token states of the texts, in order, at every layer, none cut to fit")
    return states


def _spans_that_fit(model: ContextualModel, texts: Sequence[str]) -> list[tuple[int, int]]:
    """Each text's stripped span, cut after the last token that fits in one forward pass (a corpus
    document can be longer than the model reads: its first tokens are measured, and counted).
    One tokenizer call for all texts."""
    bounds = [(len(t) - len(t.lstrip()), len(t.rstrip())) for t in texts]
    room = model.max_length - model.tokenizer.num_special_tokens_to_add()
    offsets = model.tokenizer(
        [t[a:b] for t, (a, b) in zip(texts, bounds, strict=True)],
        add_special_tokens=False,
        return_offsets_mapping=True,
        verbose=False,
    )["offset_mapping"]
    pairs = zip(bounds, offsets, strict=True)
    return [(a, b) if len(off) <= room else (a, a + off[room - 1][1]) for (a, b), off in pairs]
