"""Divergence: how far the target's vectors drift apart across sentences, layer by layer.

The lesson's worked example: "bank" in two sentences starts from the same input row (cosine
exactly 1.0, as does the static vector) and its hidden states diverge as context is mixed in.
For three or more sentences the per-layer result is a pairwise cosine matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from contextlens.analyses.lesson.sense_gap import same_and_cross
from contextlens.core import arguments
from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.extraction import OccurrenceEncoding, Pooling
from contextlens.core.jsonable import plain_json
from contextlens.core.occurrences import Occurrence
from contextlens.core.resources import DEFAULT_CONTEXTUAL
from contextlens.core.similarity import cosine_matrix
from contextlens.core.static_models import StaticModel, as_static
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

    @plain_json
    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "model": self.model,
            **self.backend.to_dict(),
            "static_model": self.static_model,
            "pooling": self.pooling,
            "sentences": [
                {**o.to_dict(), "tokens": toks, "truncated": tr}
                for o, toks, tr in zip(self.occurrences, self.target_tokens, self.truncated, strict=True)
            ],
            "layers": [
                {"layer": layer, "cosine": cos} | ({"matrix": m.tolist()} if self.n > 2 else {})
                for layer, cos, m in zip(self.layers, self.layer_cosines, self.matrices, strict=True)
            ],
            "static_cosine": self.static_cosine,
            "input_row_cosine": self.input_row_cosine,
            "most_divergent_layer": self.most_divergent_layer,
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
) -> Comparison:
    """Compare one target across two or more sentences, layer by layer.

    Sentences may be given in marker syntax (``"The river [bank] flooded."``) and models by
    name (``"minilm"``, ``"glove-50d"``). Raises :class:`~contextlens.errors.InputError` for fewer
    than two sentences or wrong types and :class:`~contextlens.errors.OutOfVocabularyError` when a
    target has no static vector.
    """
    occurrences, model, static = _check_inputs(occurrences, model, static, layers)
    static_matrix = None
    if static is not None:
        static_vectors = [static.vector(o.word) for o in occurrences]
        static_matrix = cosine_matrix(static_vectors)
    encodings: list[OccurrenceEncoding] = model.encode_occurrences(occurrences, layers=layers, pooling=pooling)
    wanted = list(encodings[0].layers)
    # provenance-checked: hidden states of one model at one layer, input rows with input rows
    matrices = np.stack([cosine_matrix([e.hidden_state(layer) for e in encodings]) for layer in wanted])
    input_rows = cosine_matrix([e.input_row() for e in encodings])
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
