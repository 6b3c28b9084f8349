"""The dev-tuned cosine threshold that tells "same sense" from "different sense" on WiC pairs.

For one set of pair cosines, the threshold with the best accuracy on the dev pairs is chosen and
scored on the test pairs (whose lemmas never occur in dev). Why a measure: `eval wic` reports it per
layer, ``--layer auto``'s sense choice takes the layer with the best dev accuracy, and same-sense
applies the threshold of its layer; all three compute it here, so their numbers agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contextlens.analyses.measures.datasets import WicData
from contextlens.core.similarity import row_cosines


@dataclass(frozen=True)
class Threshold:
    value: float
    dev_accuracy: float


def tune_threshold(cosines: Sequence[float], same: Sequence[bool]) -> Threshold:
    """The threshold ``t`` (predict "same" when cosine >= t) with the best accuracy.

    Candidates are midpoints between consecutive distinct cosines plus one below and one above
    all of them; ties go to the lowest threshold.
    """
    c = np.asarray(cosines, dtype=np.float64)
    y = np.asarray(same, dtype=bool)
    if len(c) == 0:
        raise ValueError("no pairs to tune a threshold on")
    values = np.unique(c)
    candidates = np.concatenate([[values[0] - 1.0], (values[:-1] + values[1:]) / 2, [values[-1] + 1.0]])
    best = Threshold(float(candidates[0]), -1.0)
    for t in candidates:
        acc = float(np.mean((c >= t) == y))
        if acc > best.dev_accuracy:
            best = Threshold(float(t), acc)
    return best


def accuracy(cosines: Sequence[float], same: Sequence[bool], threshold: float) -> float:
    return float(np.mean((np.asarray(cosines) >= threshold) == np.asarray(same, dtype=bool)))


def pair_cosines(vectors: np.ndarray, index: Sequence[tuple[int, int]]) -> np.ndarray:
    """Cosine of each pair's two rows of ``vectors`` (``index[k]``: pair k's two rows)."""
    a = vectors[[i for i, _ in index]]
    b = vectors[[j for _, j in index]]
    return row_cosines(a, b)


@dataclass(frozen=True)
class WicSplits:
    """Which pairs are dev and which test (indices into ``WicData.pairs``), with their labels."""

    dev: list[int]
    test: list[int]
    dev_same: list[bool]
    test_same: list[bool]


def wic_splits(data: WicData) -> WicSplits:
    dev = [k for k, p in enumerate(data.pairs) if p.split == "dev"]
    test = [k for k, p in enumerate(data.pairs) if p.split == "test"]
    return WicSplits(dev, test, [data.pairs[k].same for k in dev], [data.pairs[k].same for k in test])


@dataclass(frozen=True)
class SplitScore:
    """A threshold tuned on the dev pairs' cosines, its dev accuracy and its test accuracy."""

    threshold: float
    dev_accuracy: float
    test_accuracy: float


def score_split(cosines: np.ndarray, splits: WicSplits) -> SplitScore:
    """``cosines``: one per pair of the data ``splits`` came from."""
    th = tune_threshold(cosines[splits.dev], splits.dev_same)
    return SplitScore(th.value, th.dev_accuracy, accuracy(cosines[splits.test], splits.test_same, th.value))


def layer_scores(data: WicData, pair_spans: Sequence[tuple[int, int]], hidden: np.ndarray) -> list[SplitScore]:
    """The threshold and accuracies at every layer: ``hidden`` is ``(n_spans, layers + 1, d)`` and
    ``pair_spans[k]`` the rows of pair k's two occurrences."""
    splits = wic_splits(data)
    return [score_split(pair_cosines(hidden[:, layer, :], pair_spans), splits) for layer in range(hidden.shape[1])]


def best_dev_layer(scores: Sequence[SplitScore]) -> int:
    """The layer with the best dev accuracy (ties: the lower layer)."""
    return max(range(len(scores)), key=lambda layer: (scores[layer].dev_accuracy, -layer))
