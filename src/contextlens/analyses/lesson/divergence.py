"""Divergence: how far the target's vectors drift apart across sentences, layer by layer.

The lesson's worked example: "bank" in two sentences starts from the same input row (cosine
exactly 1.0, as does the static vector) and its hidden states diverge as context is mixed in.
For three or more sentences the per-layer result is a pairwise cosine matrix.

Each cosine comes with the model's random-word baseline at that layer
(analyses/measures/word_baseline.py): its mean, the cosine's percentile among random pairs of
different words, and the anisotropy-adjusted value (cosine - baseline mean, Ethayarajh 2019),
because 0.6 is high in one layer of one model and ordinary in another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from contextlens.analyses.lesson.left_context import left_context_note
from contextlens.analyses.lesson.sense_gap import same_and_cross
from contextlens.analyses.measures.word_baseline import CosineBaseline, baseline_or_reason
from contextlens.core import arguments
from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.extraction import OccurrenceEncoding, Pooling
from contextlens.core.jsonable import plain_json
from contextlens.core.model_kinds import ModelKind, model_kind
from contextlens.core.occurrences import Occurrence
from contextlens.core.resources import DEFAULT_CONTEXTUAL
from contextlens.core.similarity import cosine_matrix
from contextlens.core.static_models import StaticModel, as_static
from contextlens.core.token_text import display_tokens, is_byte_level
from contextlens.errors import InputError


@dataclass
class Comparison:
    """Per-layer cosines of one target across sentences, with the static baselines beside them."""

    model: str
    static_model: str | None
    occurrences: list[Occurrence]
    target_tokens: list[list[str]]
    layers: list[int]
    matrices: np.ndarray = field(repr=False)  # (layers, n, n) hidden-state cosines
    static_matrix: np.ndarray | None = field(repr=False)
    input_row_matrix: np.ndarray = field(repr=False)
    truncated: list[bool]
    pooling: str = "mean"
    backend: Backend = REFERENCE  # the model's precision and runtime (core/backend.py)
    target_positions: list[list[int]] | None = None  # token positions of each target
    baseline: CosineBaseline | None = field(default=None, repr=False)  # random-word cosines
    baseline_missing: str | None = None  # why there is no baseline (WordNet not installed)
    left_context_only: bool = False  # a decoder: each target sees only the words to its left
    byte_level: bool = False  # the tokenizer is byte-level BPE: tokens are shown decoded (core/token_text.py)

    @property
    def display_target_tokens(self) -> list[list[str]]:
        """Each target's tokens for reading (Ġbank -> ␣bank); ``target_tokens`` stay raw."""
        return [display_tokens(t, self.byte_level) for t in self.target_tokens]

    static_composed: list[str] = field(default_factory=list)  # how an unseen word's static vector was made

    @property
    def model_kind(self) -> ModelKind | None:
        """What the model is (a sentence-similarity fine-tune, a decoder), when contextlens knows."""
        return model_kind(self.model)

    @property
    def n(self) -> int:
        return len(self.occurrences)

    def mean_offdiagonal(self, m: np.ndarray) -> float:
        """Mean cosine over distinct pairs (the single cosine for two sentences)."""
        iu = np.triu_indices(self.n, k=1)
        return float(m[iu].mean())

    @property
    def layer_cosines(self) -> list[float]:
        """Mean pairwise cosine per layer (exactly the pair's cosine for two sentences)."""
        return [self.mean_offdiagonal(m) for m in self.matrices]

    @property
    def static_cosine(self) -> float | None:
        return None if self.static_matrix is None else self.mean_offdiagonal(self.static_matrix)

    @property
    def input_row_cosine(self) -> float:
        return self.mean_offdiagonal(self.input_row_matrix)

    @property
    def most_divergent_layer(self) -> int:
        """The layer where the target's vectors are least alike (lowest mean cosine)."""
        return self.layers[int(np.argmin(self.layer_cosines))]

    @property
    def most_divergent_cosine(self) -> float:
        """The mean cosine at :attr:`most_divergent_layer`."""
        return min(self.layer_cosines)

    @property
    def lowest_pair_cosines(self) -> list[float]:
        """Per layer, the cosine of the least alike pair of sentences."""
        return [float(m.min()) for m in self.matrices]

    @property
    def lowest_pairs(self) -> list[tuple[int, int]]:
        """Per layer, which pair of sentences (1-based, as printed) is the least alike."""
        iu = np.triu_indices(self.n, k=1)
        return [(int(iu[0][k]) + 1, int(iu[1][k]) + 1) for k in (int(np.argmin(m[iu])) for m in self.matrices)]

    @property
    def same_word(self) -> bool:
        """Whether every target is the same word (case aside): only then are the static vectors equal."""
        return len({o.word.lower() for o in self.occurrences}) == 1

    @property
    def same_input_row(self) -> bool:
        """Whether every target has the same tokens, hence the same input-embedding rows."""
        return self.input_row_cosine >= 1.0 - 1e-6 and float(self.input_row_matrix.min()) >= 1.0 - 1e-6

    @property
    def same_static(self) -> bool | None:
        if self.static_matrix is None:
            return None
        return float(self.static_matrix.min()) >= 1.0 - 1e-6

    def layer_baselines(self) -> list[dict[str, float] | None]:
        """Per layer: the random-word baseline (mean, std, p5, p50, p95), the cosine's percentile
        in it and cosine - mean; None per layer when there is no baseline."""
        if self.baseline is None:
            return [None] * len(self.layers)
        return [self.baseline.beside(layer, cos) for layer, cos in zip(self.layers, self.layer_cosines, strict=True)]

    def notes(self) -> list[str]:
        """What the numbers under the table mean for these sentences (never a fixed sentence that
        the numbers contradict)."""
        out = []
        words = ", ".join(dict.fromkeys(o.word for o in self.occurrences))
        if self.same_input_row and self.same_static is not False:
            what = f"static vector ({self.static_model}) and input row are" if self.static_model else "input row is"
            out.append(f"{what} the same in every sentence (one fixed row per word), so their cosine is 1.0")
        else:
            parts = []
            if self.same_static is False:
                parts.append(f"static vectors ({self.static_model})")
            if not self.same_input_row:
                parts.append("input rows")
            reason = "the targets' tokens differ" if self.same_word else f"the targets are different words ({words})"
            out.append(f"{' and '.join(parts)} differ: {reason}, so the paths start apart")
        out.extend(self.static_composed)
        if 0 in self.layers and self.same_input_row:
            cos0 = self.layer_cosines[self.layers.index(0)]
            if cos0 < 1.0 - 5e-5:
                where = ""
                if self.target_positions is not None:
                    starts = sorted({p[0] for p in self.target_positions if p})
                    if len(starts) > 1:
                        where = f" (the target sits at token positions {', '.join(str(s) for s in starts)})"
                out.append(
                    f"layer 0 is {cos0:.4f}, not 1.0: it is the embedding layer's output, the input row plus a "
                    f"position embedding{where}, layer-normalised, before any attention"
                )
        if self.left_context_only and (note := left_context_note(self.model, self.occurrences)):
            out.append(note)
        if self.n > 2:
            out.append("lowest pair: the least alike pair of sentences at that layer, numbered as above")
        if self.baseline is not None:
            out.append(
                "random: mean cosine of random pairs of different words in unrelated sentences at that layer; "
                "pct: the share of those pairs at or below this cosine; − random: cosine minus that mean"
                + (" (the mean pairwise cosine, placed among single pairs)" if self.n > 2 else "")
            )
        elif self.baseline_missing:
            out.append(f"no random-word baseline: {self.baseline_missing}")
        return out

    @plain_json
    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "model": self.model,
            **self.backend.to_dict(),
            "static_model": self.static_model,
            "pooling": self.pooling,
            "sentences": [
                {**o.to_dict(), "tokens": toks, "display_tokens": shown, "truncated": tr}
                for o, toks, shown, tr in zip(
                    self.occurrences, self.target_tokens, self.display_target_tokens, self.truncated, strict=True
                )
            ],
            "layers": [
                {"layer": layer, "cosine": cos}
                | ({"baseline": base} if base is not None else {})
                | (
                    {"matrix": m.tolist(), "lowest_pair": {"sentences": list(pair), "cosine": low}}
                    if self.n > 2
                    else {}
                )
                for layer, cos, m, base, pair, low in zip(
                    self.layers,
                    self.layer_cosines,
                    self.matrices,
                    self.layer_baselines(),
                    self.lowest_pairs,
                    self.lowest_pair_cosines,
                    strict=True,
                )
            ],
            "static_cosine": self.static_cosine,
            "input_row_cosine": self.input_row_cosine,
            "most_divergent_layer": self.most_divergent_layer,
            "same_static_vector": self.same_static,
            "same_input_row": self.same_input_row,
            "model_kind": None if self.model_kind is None else self.model_kind.to_dict(),
            "baseline": None if self.baseline is None else self.baseline.to_dict(),
            "baseline_missing": self.baseline_missing,
            "input_row_percentile": None
            if self.baseline is None
            else self.baseline.percentile(None, self.input_row_cosine),
            "notes": self.notes(),
        }
        if self.n > 2:
            out["static_matrix"] = None if self.static_matrix is None else self.static_matrix.tolist()
            out["input_row_matrix"] = self.input_row_matrix.tolist()
        return out


def compare(
    occurrences: Sequence[Occurrence | str],
    model: ContextualModel | str = DEFAULT_CONTEXTUAL,
    static: StaticModel | str | None = None,
    layers: Sequence[int] | None = None,
    pooling: Pooling = "mean",
    baseline: bool = True,
) -> Comparison:
    """Compare one target across two or more sentences, layer by layer.

    Sentences may be given in marker syntax (``"The river [bank] flooded."``) and models by
    name (``"minilm"``, ``"glove-50d"``). Raises :class:`~contextlens.errors.InputError` for fewer
    than two sentences or wrong types and :class:`~contextlens.errors.OutOfVocabularyError` when a
    target has no static vector. ``baseline=True`` sets the model's random-word cosine baseline
    beside each layer (computed once per model, backend and pooling, then read from disk); without
    WordNet installed the result says why it has none.
    """
    occurrences, model, static = _check_inputs(occurrences, model, static, layers)
    static_matrix, composed = None, []
    if static is not None:
        static_vectors = [static.vector(o.word) for o in occurrences]
        static_matrix = cosine_matrix(static_vectors)
        composed = [static.composition_note(w) for w in dict.fromkeys(o.word for o in occurrences)]
    encodings: list[OccurrenceEncoding] = model.encode_occurrences(occurrences, layers=layers, pooling=pooling)
    wanted = list(encodings[0].layers)
    # provenance-checked: hidden states of one model at one layer, input rows with input rows
    matrices = np.stack([cosine_matrix([e.hidden_state(layer) for e in encodings]) for layer in wanted])
    input_rows = cosine_matrix([e.input_row() for e in encodings])
    base, missing = baseline_or_reason(model, pooling) if baseline else (None, None)
    return Comparison(
        model=model.name,
        backend=model.backend,
        static_model=static.name if static is not None else None,
        occurrences=list(occurrences),
        target_tokens=[e.target_tokens for e in encodings],
        layers=wanted,
        matrices=matrices,
        static_matrix=static_matrix,
        input_row_matrix=input_rows,
        truncated=[e.truncated for e in encodings],
        pooling=pooling,
        target_positions=[list(e.tokenized.target_positions) for e in encodings],
        baseline=base,
        baseline_missing=missing,
        left_context_only=bool(getattr(model, "is_decoder", False)),
        byte_level=is_byte_level(model.tokenizer),
        static_composed=[c for c in composed if c is not None],
    )


def _check_inputs(
    occurrences: object, model: object, static: object, layers: object
) -> tuple[list[Occurrence], ContextualModel, StaticModel | None]:
    """Accept the obvious forms (marked strings, model names); refuse the rest with one line,
    before any model loads."""
    if isinstance(occurrences, Occurrence | str) or not isinstance(occurrences, Sequence):
        raise InputError(
            "compare needs a list of two or more occurrences (or marked sentences like "
            f"'The river [bank] flooded.'), got {type(occurrences).__name__}"
        )
    occs = arguments.occurrence_list(occurrences)
    arguments.layer_numbers(layers)  # the type here; the range once the model is known
    arguments.sentences_to_compare(occs)
    return occs, as_contextual(model), None if static is None else as_static(static)


def same_minus_cross(matrix: np.ndarray, labels: Sequence[str]) -> tuple[float, float]:
    """Mean cosine over same-label pairs and over cross-label pairs (distinct pairs only)."""
    same, cross = same_and_cross(matrix[None], labels)
    return float(same[0]), float(cross[0])


def same_and_cross_by_layer(result: Comparison, labels: Sequence[str]) -> list[tuple[int, float, float, float]]:
    """Per layer: (layer, mean same-label cosine, mean cross-label cosine, their gap), e.g. bank by sense."""
    rows = []
    for layer, m in zip(result.layers, result.matrices, strict=True):
        same, cross = same_minus_cross(m, labels)
        rows.append((layer, same, cross, same - cross))
    return rows
