"""Attention attribution: which tokens the target attends to, per layer and head (mini-project 3).

Layers of attention are numbered 1..L: layer ``l`` is the attention inside block ``l``, the one
that turns hidden state ``l-1`` into hidden state ``l``. Heads are numbered 0..H-1 as in the
model's tensors (and BertViz). For a word split into several tokens the target's row is the mean
of its tokens' rows.

Raw attention of one head says little about where information ends up after many layers, so
**attention rollout** (Abnar & Zuidema, 2020) is given too: average the heads, add the identity for
the residual connection, renormalise the rows, and multiply the layers' matrices together.

Special tokens ([CLS], [SEP], <s>) often soak up most of the attention. With ``exclude_special``
their columns are dropped and every row renormalised over the remaining tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.jsonable import plain_json
from contextlens.core.model_facts import attention_layer
from contextlens.core.occurrences import Occurrence
from contextlens.core.token_text import display_tokens, is_byte_level
from contextlens.errors import InputError


@dataclass
class AttentionMap:
    """Attention of one target occurrence. Arrays run over layers 1..L (index ``l - 1``)."""

    occurrence: Occurrence
    tokens: list[str]
    special: list[bool]
    target_positions: list[int]
    weights: np.ndarray = field(repr=False)  # (L, H, seq): the target's row per layer and head
    head_mean: np.ndarray = field(repr=False)  # (L, seq)
    rollout: np.ndarray = field(repr=False)  # (L, seq): the target's row of the rollout up to layer l
    full: np.ndarray = field(repr=False)  # (L, H, seq, seq): every row, for token x token views
    exclude_special: bool = False
    truncated: bool = False
    window: tuple[int, int] | None = None  # characters of the sentence kept when it was cut to fit
    shown: list[str] | None = None  # the tokens for reading (core/token_text.py: Ġbank -> ␣bank)

    @property
    def display_tokens(self) -> list[str]:
        return self.tokens if self.shown is None else self.shown

    @property
    def num_layers(self) -> int:
        return int(self.weights.shape[0])

    @property
    def num_heads(self) -> int:
        return int(self.weights.shape[1])

    @property
    def target_tokens(self) -> list[str]:
        return [self.tokens[p] for p in self.target_positions]

    @property
    def display_target_tokens(self) -> list[str]:
        return [self.display_tokens[p] for p in self.target_positions]

    def row(self, layer: int, head: int | None = None) -> np.ndarray:
        """The target's attention at ``layer`` (1..L), one head or (None) the head mean."""
        return self.head_mean[layer - 1] if head is None else self.weights[layer - 1, head]

    def matrix(self, layer: int, head: int | None = None) -> np.ndarray:
        """Token x token attention at ``layer``, one head or the head mean."""
        m = self.full[layer - 1]
        return m.mean(axis=0) if head is None else m[head]

    def top(self, layer: int, k: int = 3, head: int | None = None, display: bool = False) -> list[tuple[str, float]]:
        """The ``k`` tokens the target attends to most at ``layer`` (``display``: as read, Ġ decoded)."""
        row = self.row(layer, head)
        candidates = [i for i in range(len(row)) if not (self.exclude_special and self.special[i])]
        order = sorted(candidates, key=lambda i: -row[i])[:k]
        tokens = self.display_tokens if display else self.tokens
        return [(tokens[i], float(row[i])) for i in order]

    @plain_json
    def to_dict(self, layer: int | None = None, head: int | None = None) -> dict[str, object]:
        out: dict[str, object] = {
            **self.occurrence.to_dict(),
            "tokens": self.tokens,
            "display_tokens": self.display_tokens,
            "special": self.special,
            "target_positions": self.target_positions,
            "target_tokens": self.target_tokens,
            "exclude_special": self.exclude_special,
            "truncated": self.truncated,
            "window": None if self.window is None else list(self.window),
            "head_mean": self.head_mean.tolist(),
            "rollout": self.rollout.tolist(),
            "per_head": self.weights.tolist(),
        }
        if layer is not None and head is not None:
            out["selected"] = {
                "layer": layer,
                "head": head,
                "target_row": self.row(layer, head).tolist(),
                "matrix": self.matrix(layer, head).tolist(),
            }
        return out


@dataclass
class AttentionResult:
    """One or more sentences (side by side), with the layer and head picked for close-ups."""

    model: str
    layer: int
    head: int
    maps: list[AttentionMap]
    top_k: int = 3  # tokens listed per layer by a face
    backend: Backend = REFERENCE  # the model's precision and runtime (core/backend.py)

    @plain_json
    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            **self.backend.to_dict(),
            "layer_convention": "attention layer l = block l (1..L); heads 0..H-1",
            "layer": self.layer,
            "head": self.head,
            "rollout": "Abnar & Zuidema 2020: head mean + identity, rows renormalised, multiplied through layers",
            "sentences": [m.to_dict(self.layer, self.head) for m in self.maps],
        }


def check_top_k(top_k: int) -> None:
    """How many most-attended tokens to list: at least one."""
    if top_k < 1:
        raise InputError(f"`top_k` must be at least 1, got {top_k}")


def check_layer_head(model: ContextualModel, layer: int, head: int) -> int:
    """Attention layers are 1..L (negative from the top) and heads 0..H-1; anything else is a
    user error. Returns the block 1..L."""
    real = attention_layer(layer, model.num_layers, model.name)
    if not 0 <= head < model.num_heads:
        raise InputError(f"head {head} is out of range for {model.name}: it has heads 0..{model.num_heads - 1}")
    return real


def rollout(attentions: np.ndarray) -> np.ndarray:
    """Attention rollout of (L, H, seq, seq) weights: (L, seq, seq), entry l is the product up to layer l+1."""
    n_layers, _, seq, _ = attentions.shape
    eye = np.eye(seq)
    out = np.zeros((n_layers, seq, seq))
    joint = eye
    for layer in range(n_layers):
        a = attentions[layer].astype(np.float64).mean(axis=0) + eye
        a = a / a.sum(axis=-1, keepdims=True)
        joint = a @ joint
        out[layer] = joint
    return out


def renormalise_without(rows: np.ndarray, drop: Sequence[bool]) -> np.ndarray:
    """Zero the columns flagged in ``drop`` and rescale every row to sum to 1 again."""
    keep = ~np.asarray(drop, dtype=bool)
    out = rows * keep
    total = out.sum(axis=-1, keepdims=True)
    return np.divide(out, total, out=np.zeros_like(out), where=total > 0)


def attend(
    occurrences: Sequence[Occurrence],
    model: ContextualModel | str,
    layer: int = 6,
    head: int = 3,
    exclude_special: bool = False,
    top_k: int = 3,
    through: int | None = None,
) -> AttentionResult:
    """Attention from each target to every token of its sentence, layers 1..``through`` (default
    all) and every head.

    The defaults are the lesson's close-up (layer 6, head 3). With ``through`` (>= ``layer``)
    only blocks 1..``through`` run and the maps (rollout included) stop there; the weights are
    those of the full forward. Raises InputError for a layer or head out of range.
    """
    model = as_contextual(model)
    if not occurrences:
        raise InputError("no sentences given; pass one or two sentences like 'The river [bank] flooded.'")
    check_top_k(top_k)
    layer = check_layer_head(model, layer, head)
    if through is not None and not layer <= through <= model.num_layers:
        raise InputError(f"through={through} must lie between the close-up layer {layer} and {model.num_layers}")
    maps = [_attention_map(o, model, exclude_special, through) for o in occurrences]
    return AttentionResult(model.name, layer, head, maps, top_k, backend=model.backend)


def _attention_map(
    occ: Occurrence, model: ContextualModel, exclude_special: bool, through: int | None = None
) -> AttentionMap:
    fp = model.forward_one(occ, attentions=True, through=through)
    att = fp.attentions.astype(np.float64)  # (L, H, seq, seq)
    tok = fp.tokenized
    targets = list(tok.target_positions)
    roll = rollout(att)
    weights = att[:, :, targets, :].mean(axis=2)
    head_mean = weights.mean(axis=1)
    roll_row = roll[:, targets, :].mean(axis=1)
    full = att
    if exclude_special:
        weights = renormalise_without(weights, tok.special)
        head_mean = renormalise_without(head_mean, tok.special)
        roll_row = renormalise_without(roll_row, tok.special)
        full = renormalise_without(att, tok.special)
    return AttentionMap(
        occurrence=occ,
        tokens=list(tok.tokens),
        special=list(tok.special),
        target_positions=targets,
        weights=weights,
        head_mean=head_mean,
        rollout=roll_row,
        full=full,
        exclude_special=exclude_special,
        truncated=tok.truncated,
        window=tok.window if tok.truncated else None,
        shown=display_tokens(tok.tokens, is_byte_level(model.tokenizer)),
    )
