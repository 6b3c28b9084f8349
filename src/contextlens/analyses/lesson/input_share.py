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

from contextlens.core.contextual_models import ContextualModel, as_contextual
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
    precision: str = "fp32"  # the model's: fp32 (exact) or int8 (see core/precision.py)
    runtime: str = "torch"  # the model's: torch, or onnx (see core/onnx_runtime.py)

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "precision": self.precision,
            "runtime": self.runtime,
            "corpus": self.corpus,
            "texts": self.texts,
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


def input_row_share(model: ContextualModel | str, texts: Sequence[str], corpus: str = "sentences") -> InputRowShare:
    """Per layer, the mean cosine of every non-special token's hidden state to its input and position rows."""
    started = time.perf_counter()
    m = as_contextual(model)
    texts = [t for t in texts if t.strip()]
    if len(texts) < MIN_TEXTS:
        raise InputError(f"the input-row share needs at least {MIN_TEXTS} texts, got {len(texts)}")
    own, other, pos, n = [], [], [], 0
    for text in texts:
        start = len(text) - len(text.lstrip())
        fp = m.forward_one(Occurrence(text, start, len(text.rstrip())))
        keep = [i for i, s in enumerate(fp.tokenized.special) if not s]
        if len(keep) < 2:
            continue
        hidden = np.stack([normalize_rows(h[keep].astype(np.float64)) for h in fp.hidden_states])  # (L+1, t, d)
        rows = normalize_rows(fp.input_rows[keep].astype(np.float64))
        shifted = np.roll(rows, 1, axis=0)  # each token against its neighbour's row
        own.append(np.einsum("ltd,td->l", hidden, rows))
        other.append(np.einsum("ltd,td->l", hidden, shifted))
        if fp.position_rows is not None:
            pos.append(np.einsum("ltd,td->l", hidden, normalize_rows(fp.position_rows[keep].astype(np.float64))))
        n += len(keep)
    if n == 0:
        raise InputError("no text had two or more tokens; give longer texts")
    return InputRowShare(
        model=m.name,
        precision=m.precision,
        runtime=m.runtime,
        corpus=corpus,
        texts=len(texts),
        tokens=n,
        layers=list(range(m.num_layers + 1)),
        to_input_row=(np.sum(own, axis=0) / n).tolist(),
        to_other_row=(np.sum(other, axis=0) / n).tolist(),
        to_position_row=(np.sum(pos, axis=0) / n).tolist() if pos else None,
        seconds=time.perf_counter() - started,
    )
