"""Trace one target through the model: the seeds' pipeline from token to contextual hidden state.

Tokenize -> token ids -> input rows (the static embedding table) -> position information -> one
hidden state per layer. For each layer the trace reports how much of the input row is left
(cosine of the target's hidden state to its input row), the hidden state's norm, and the tokens
the target attended to most in the block that produced it (head mean).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from contextlens.analyses.lesson.attention import check_top_k, renormalise_without
from contextlens.analyses.lesson.left_context import left_context_note
from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.jsonable import plain_json
from contextlens.core.occurrences import Occurrence
from contextlens.core.similarity import cosine_values
from contextlens.core.token_text import display_tokens, is_byte_level

# What "cosine to the input row" is: not a comparison of two embeddings of one kind (a hidden
# state and an input row are different kinds, and core.similarity.cosine refuses to compare
# them as such), but a probe of one vector space: the hidden state and the input row are both
# vectors of this model's residual stream, so their raw cosine says how much of the token's
# static row the stream still carries after each block.
INPUT_ROW_COSINE_MEANS = (
    "raw cosine between the target's hidden state and its own input row, both vectors of this model's "
    "residual stream: how much of the static row the stream still carries; not a similarity of two embeddings"
)


@dataclass
class TraceLayer:
    layer: int  # hidden state index: 0 = embedding output, l = after block l
    cosine_to_input_row: float
    norm: float
    top_attended: list[tuple[str, float]]  # from block ``layer``'s attention; empty at layer 0
    top_display: list[str] = field(default_factory=list)  # the same tokens for reading (Ġ decoded)

    @plain_json
    def to_dict(self) -> dict[str, object]:
        return {
            "layer": self.layer,
            "cosine_to_input_row": self.cosine_to_input_row,
            "norm": self.norm,
            "top_attended": [
                {"token": t, "display": d, "weight": w}
                for (t, w), d in zip(
                    self.top_attended, self.top_display or [t for t, _ in self.top_attended], strict=True
                )
            ],
        }


@dataclass
class Trace:
    """The whole pipeline for one target occurrence."""

    model: str
    occurrence: Occurrence
    tokens: list[str]
    token_ids: list[int]
    special: list[bool]
    target_positions: list[int]
    input_row_norms: list[float]  # per token
    target_input_row_norm: float
    has_learned_positions: bool
    position_row_norms: list[float] | None  # per token, where the model has learned positions
    position_cosine_to_input_row: float | None  # target's position row vs its input row
    layer0_cosine_to_row_plus_position: float | None  # embedding output vs (input row + position row)
    layers: list[TraceLayer]
    attention_rows: np.ndarray = field(repr=False)  # (L, seq): head-mean attention of the target
    exclude_special: bool = False
    truncated: bool = False
    window: tuple[int, int] | None = None  # characters of the sentence kept when it was cut to fit
    backend: Backend = REFERENCE  # the model's precision and runtime (core/backend.py)
    shown: list[str] | None = None  # the tokens for reading (core/token_text.py: Ġbank -> ␣bank)
    left_context_only: bool = False  # a decoder: the target sees only the words to its left

    @property
    def display_tokens(self) -> list[str]:
        return self.tokens if self.shown is None else self.shown

    @property
    def target_tokens(self) -> list[str]:
        return [self.tokens[p] for p in self.target_positions]

    @property
    def display_target_tokens(self) -> list[str]:
        return [self.display_tokens[p] for p in self.target_positions]

    @property
    def notes(self) -> list[str]:
        """What the reader must know to read the result (a decoder's blind right side)."""
        note = left_context_note(self.model, [self.occurrence]) if self.left_context_only else None
        return [note] if note else []

    @plain_json
    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            **self.backend.to_dict(),
            **self.occurrence.to_dict(),
            "truncated": self.truncated,
            "window": None if self.window is None else list(self.window),
            "tokens": [
                {
                    "position": i,
                    "token": t,
                    "display": shown,
                    "id": d,
                    "special": s,
                    "target": i in self.target_positions,
                    "input_row_norm": n,
                    "position_row_norm": None if self.position_row_norms is None else self.position_row_norms[i],
                }
                for i, (t, shown, d, s, n) in enumerate(
                    zip(
                        self.tokens,
                        self.display_tokens,
                        self.token_ids,
                        self.special,
                        self.input_row_norms,
                        strict=True,
                    )
                )
            ],
            "target_tokens": self.target_tokens,
            "target_input_row_norm": self.target_input_row_norm,
            "has_learned_positions": self.has_learned_positions,
            "position_cosine_to_input_row": self.position_cosine_to_input_row,
            "layer0_cosine_to_row_plus_position": self.layer0_cosine_to_row_plus_position,
            "exclude_special": self.exclude_special,
            "cosine_to_input_row_means": INPUT_ROW_COSINE_MEANS,
            "layers": [layer.to_dict() for layer in self.layers],
            "left_context_only": self.left_context_only,
            "notes": self.notes,
        }


def trace(occurrence: Occurrence, model: ContextualModel | str, top_k: int = 3, exclude_special: bool = False) -> Trace:
    """Follow the target from its tokens to its last hidden state."""
    model = as_contextual(model)
    check_top_k(top_k)
    fp = model.forward_one(occurrence, attentions=True)
    tok = fp.tokenized
    targets = list(tok.target_positions)
    rows = fp.input_rows.astype(np.float64)
    target_row = rows[targets].mean(axis=0)
    pos_norms = pos_cos = layer0 = None
    if fp.position_rows is not None:
        positions = fp.position_rows.astype(np.float64)
        pos_norms = np.linalg.norm(positions, axis=1).tolist()
        target_pos = positions[targets].mean(axis=0)
        pos_cos = cosine_values(target_pos, target_row)
        layer0 = cosine_values(fp.hidden_states[0][targets].astype(np.float64).mean(axis=0), target_row + target_pos)
    att_rows = fp.attentions.astype(np.float64)[:, :, targets, :].mean(axis=(1, 2))  # (L, seq)
    if exclude_special:
        att_rows = renormalise_without(att_rows, tok.special)
    layers = []
    shown = display_tokens(tok.tokens, is_byte_level(model.tokenizer))
    for layer in range(fp.hidden_states.shape[0]):
        state = fp.hidden_states[layer][targets].astype(np.float64).mean(axis=0)
        top: list[tuple[str, float]] = []
        if layer > 0:
            row = att_rows[layer - 1]
            candidates = [i for i in range(len(row)) if not (exclude_special and tok.special[i])]
            order = sorted(candidates, key=lambda i: -row[i])[:top_k]
            top = [(tok.tokens[i], float(row[i])) for i in order]
            shown_top = [shown[i] for i in order]
        else:
            shown_top = []
        layers.append(TraceLayer(layer, cosine_values(state, target_row), float(np.linalg.norm(state)), top, shown_top))
    return Trace(
        model=model.name,
        backend=model.backend,
        occurrence=occurrence,
        tokens=list(tok.tokens),
        token_ids=list(tok.input_ids),
        special=list(tok.special),
        target_positions=targets,
        input_row_norms=np.linalg.norm(rows, axis=1).tolist(),
        target_input_row_norm=float(np.linalg.norm(target_row)),
        has_learned_positions=fp.position_rows is not None,
        position_row_norms=pos_norms,
        position_cosine_to_input_row=pos_cos,
        layer0_cosine_to_row_plus_position=layer0,
        layers=layers,
        attention_rows=att_rows,
        exclude_special=exclude_special,
        truncated=tok.truncated,
        window=tok.window if tok.truncated else None,
        shown=shown,
        left_context_only=bool(getattr(model, "is_decoder", False)),
    )
