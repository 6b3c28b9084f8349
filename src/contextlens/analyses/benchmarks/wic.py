"""Word in context: are two occurrences of a lemma the same sense? A cosine threshold per layer.

For each layer the cosine of the two hidden states is compared with a threshold chosen on the
dev pairs (the one with the best dev accuracy); accuracy is reported on the test pairs, whose
lemmas never occur in dev. Baselines in the same table: the static model (one vector per
lemma, so cosine 1.0 for every pair), the input-embedding row, and chance.

Published numbers on the original WiC test set (Pilehvar & Camacho-Collados, NAACL 2019) are
listed for context only: our pairs come from WordNet examples alone, so the data differ.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.analyses.measures.datasets import WicData, WicPair
from contextlens.analyses.measures.sense_threshold import pair_cosines, score_split, wic_splits
from contextlens.core.jsonable import plain_json
from contextlens.core.similarity import cosine
from contextlens.core.static_models import StaticModel

PUBLISHED = {  # WiC test accuracy, Pilehvar & Camacho-Collados (2019), Table 3
    "published:BERT-large": 0.655,
    "published:ELMo": 0.577,
    "published:human": 0.80,
}
PUBLISHED_NOTE = (
    "published numbers are on the original WiC test set (Pilehvar & Camacho-Collados 2019); "
    "our pairs are built from WordNet 3.0 usage examples, so the data differ"
)


@dataclass(frozen=True)
class SplitCounts:
    """One split's pairs: how many, how many same-sense and different-sense, over how many lemmas."""

    pairs: int
    same: int
    different: int
    lemmas: int


@dataclass(frozen=True)
class BestLayer:
    """The model's layer with the best dev accuracy and its test accuracy; beside it the best test
    layer and accuracy, for reference only (chosen on test)."""

    layer_by_dev: int
    test_accuracy_at_dev_layer: float
    best_test_layer: int
    best_test_accuracy: float


@dataclass
class WicResult(BenchmarkResult):
    """`eval wic`'s result: the tidy rows (dev accuracy, threshold and test accuracy per system and
    layer), the pairs' counts, the dev-chosen layer and the note on published numbers; ``meta``
    holds what every run records (size, suite counts, seconds, precision, runtime).
    :meth:`to_dict` is the JSON `eval wic --json` prints, these fields first in ``meta``."""

    counts: dict[str, Any] = field(default_factory=dict)  # WicData.counts: dev/test splits, lemma counts
    published_note: str = PUBLISHED_NOTE
    best_layer: BestLayer | None = None  # None when the model has no dev rows

    @property
    def dev(self) -> SplitCounts:
        return SplitCounts(**self.counts["dev"])

    @property
    def test(self) -> SplitCounts:
        return SplitCounts(**self.counts["test"])

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        best = None if self.best_layer is None else dataclasses.asdict(self.best_layer)
        meta = {"counts": self.counts, "published_note": self.published_note, "best_layer": best, **self.meta}
        return {"benchmark": self.benchmark, "model": self.model, "rows": self.rows, "meta": meta}


def evaluate_wic(
    data: WicData,
    pair_spans: Sequence[tuple[int, int]],
    hidden: np.ndarray,
    input_rows: np.ndarray,
    model: str,
    static: StaticModel | None,
    static_name: str | None = None,
) -> WicResult:
    """Dev-tuned thresholds, test accuracy per layer, beside the baselines.

    ``pair_spans[k]`` gives the rows of ``hidden`` / ``input_rows`` holding pair k's two occurrences;
    ``hidden`` is ``(n_spans, layers + 1, d)``.
    """
    result = WicResult("wic", model, counts=data.counts)
    splits = wic_splits(data)

    def add_system(system: str, layer: int | None, cos: np.ndarray, extra: dict | None = None) -> None:
        score = score_split(cos, splits)
        common = {"system": system, "layer": layer, **(extra or {})}
        result.add(**common, split="dev", metric="accuracy", value=score.dev_accuracy)
        result.add(**common, split="test", metric="accuracy", value=score.test_accuracy)
        result.add(**common, split="dev", metric="threshold", value=score.threshold)

    for layer in range(hidden.shape[1]):
        add_system(model, layer, pair_cosines(hidden[:, layer, :], pair_spans))
    add_system("input-row", None, pair_cosines(input_rows, pair_spans))
    if static is not None:
        cos, covered = static_pair_cosines(data.pairs, static)
        add_system(static_name or static.name, None, cos, {"coverage": covered})
    test_labels = np.asarray(splits.test_same, dtype=bool)
    result.add(
        system="chance",
        layer=None,
        split="test",
        metric="accuracy",
        value=float(max(test_labels.mean(), 1 - test_labels.mean())),
    )
    for system, value in PUBLISHED.items():
        result.add(system=system, layer=None, split="WiC test (other data)", metric="accuracy", value=value)
    best = best_layer(result, model)
    result.best_layer = None if best is None else BestLayer(**best)
    return result


def static_pair_cosines(pairs: Sequence[WicPair], static: StaticModel) -> tuple[np.ndarray, float]:
    """Cosine of the lemma's static vector with itself in both contexts: 1.0 when in vocabulary.

    A lemma out of vocabulary has no vector in either context; its pairs get -2, below every real
    cosine. Returns the cosines and the share of pairs covered.
    """
    cos = np.full(len(pairs), np.nan)
    for k, p in enumerate(pairs):
        if p.lemma in static:
            vector = static.vector(p.lemma)  # the same vector in both contexts
            cos[k] = cosine(vector, vector)
    covered = float(np.mean(~np.isnan(cos))) if len(pairs) else 0.0
    return np.nan_to_num(cos, nan=-2.0), covered


def best_layer(result: BenchmarkResult, system: str) -> dict[str, float | int] | None:
    """The layer with the best dev accuracy (test reported for it; ties: the lower layer)."""
    dev = [r for r in result.select(system=system, split="dev", metric="accuracy")]
    if not dev:
        return None
    top = max(dev, key=lambda r: (r["value"], -r["layer"]))
    test = result.select(system=system, split="test", metric="accuracy", layer=top["layer"])[0]["value"]
    best_test = max(result.select(system=system, split="test", metric="accuracy"), key=lambda r: r["value"])
    return {
        "layer_by_dev": top["layer"],
        "test_accuracy_at_dev_layer": test,
        "best_test_layer": best_test["layer"],
        "best_test_accuracy": best_test["value"],
    }


def table_rows(result: WicResult) -> list[dict[str, object]]:
    """The wic table: per (system, layer) dev accuracy, threshold and test accuracy; ``best`` marks
    the model's dev-picked layer; published results (other data) last, flagged ``published``."""
    best = None if result.best_layer is None else result.best_layer.layer_by_dev
    measured = result.pivot(
        ("system", "layer"),
        {
            "dev_accuracy": {"split": "dev", "metric": "accuracy"},
            "threshold": {"split": "dev", "metric": "threshold"},
            "test_accuracy": {"split": "test", "metric": "accuracy"},
        },
        split="test",
        metric="accuracy",
    )
    for row in measured:
        row["best"] = row["system"] == result.model and row["layer"] == best
        row["published"] = False
    published = [
        {"system": r["system"], "layer": None, "dev_accuracy": None, "threshold": None, "test_accuracy": r["value"]}
        | {"best": False, "published": True}
        for r in result.rows
        if r["system"].startswith("published:")
    ]
    return measured + published
