"""Word sense induction: cluster each lemma's occurrences per layer and score against WordNet senses.

The instances are the WSD benchmark's WordNet 3.0 usage examples (every example of a (lemma,
part of speech) that :func:`~contextlens.analyses.measures.datasets.build_wsd` keeps: train,
dev and test alike; at least two senses with examples per lemma), so their hidden states come
from the suite's disk-cached span encoding. Per lemma and layer the occurrences' unit vectors
are clustered by the same criterion as ``contextlens senses induce`` (k-means, k by cosine
silhouette, :func:`~contextlens.analyses.representations.clustering.cluster_unit_vectors`) and the clusters
are compared with the gold synsets: adjusted Rand index, V-measure and B-cubed F1. Each score is
the mean over lemmas (every lemma counts once, whatever its number of examples).

Lemmas are split dev/test as for WiC/WSD (:func:`~contextlens.analyses.measures.datasets.split_lemmas`):
the layer is chosen by dev ARI and reported on test lemmas. Baselines: one cluster per lemma
(ARI 0, V-measure 0), one cluster per instance (ARI 0 unless every sense has one example), and
the static model, whose one vector per word puts every occurrence in one cluster.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.analyses.measures.datasets import Key, WsdData, split_lemmas
from contextlens.analyses.measures.span_encoding import Progress
from contextlens.core.contextual_models import ContextualModel
from contextlens.core.jsonable import plain_json
from contextlens.core.similarity import normalize_rows
from contextlens.core.static_models import StaticModel

METRICS = ("ari", "v_measure", "bcubed_f1")
ONE_CLUSTER = "one-cluster-per-lemma"
ONE_PER_INSTANCE = "one-cluster-per-instance"
DEV_SHARE = 0.3  # as build_wsd, so a lemma is dev (or test) in WSD and WSI alike
AVERAGING = "mean over lemmas of the per-lemma score (each lemma counts once)"


@dataclass(frozen=True)
class WsiLemma:
    """One (lemma, pos): the rows of its occurrences in the span encoding and their gold synsets."""

    key: Key
    split: str
    rows: list[int]
    gold: list[str]


def wsi_lemmas(data: WsdData, item_rows: Sequence[int], seed: int = 0) -> list[WsiLemma]:
    """Every example of each WSD lemma (train, dev and test items), split dev/test by lemma."""
    rows: dict[Key, list[int]] = defaultdict(list)
    gold: dict[Key, list[str]] = defaultdict(list)
    for k, item in enumerate(data.items):
        rows[item.key].append(item_rows[k])
        gold[item.key].append(item.example.synset)
    splits = split_lemmas([lemma for lemma, _ in rows], DEV_SHARE, seed)
    return [WsiLemma(key, splits[key[0]], rows[key], gold[key]) for key in sorted(rows) if len(set(gold[key])) >= 2]


def bcubed(gold: Sequence[object], predicted: Sequence[object]) -> dict[str, float]:
    """B-cubed precision, recall and F1 (Bagga & Baldwin 1998; Amigó et al. 2009).

    Per item: precision = share of its cluster with its gold sense, recall = share of its gold
    sense in its cluster; both averaged over items, F1 their harmonic mean.
    """
    g = np.asarray(gold, dtype=object)
    p = np.asarray(predicted, dtype=object)
    if len(g) != len(p) or len(g) == 0:
        raise ValueError("bcubed needs two labelings of the same, non-empty items")
    same_gold = g[:, None] == g[None, :]
    same_pred = p[:, None] == p[None, :]
    both = (same_gold & same_pred).sum(axis=1)
    precision = float(np.mean(both / same_pred.sum(axis=1)))
    recall = float(np.mean(both / same_gold.sum(axis=1)))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def scores(gold: Sequence[object], predicted: Sequence[object]) -> dict[str, float]:
    """ARI, V-measure and B-cubed F1 of one lemma's clustering."""
    from sklearn.metrics import adjusted_rand_score, v_measure_score

    return {
        "ari": float(adjusted_rand_score(gold, predicted)),
        "v_measure": float(v_measure_score(gold, predicted)),
        "bcubed_f1": bcubed(gold, predicted)["f1"],
    }


def _add_means(result: BenchmarkResult, system: str, layer: int | None, per_lemma: dict[str, list[dict]]) -> None:
    for split, lemma_scores in per_lemma.items():
        for metric in METRICS:
            value = float(np.mean([s[metric] for s in lemma_scores])) if lemma_scores else float("nan")
            result.add(system=system, layer=layer, split=split, metric=metric, value=value)


def _cluster(vectors: np.ndarray, seed: int) -> tuple[np.ndarray, int]:
    from sklearn.exceptions import ConvergenceWarning

    from contextlens.analyses.representations.clustering import cluster_unit_vectors

    with warnings.catch_warnings():  # identical vectors (static model): k-means finds one cluster
        warnings.simplefilter("ignore", ConvergenceWarning)
        labels, k, _ = cluster_unit_vectors(normalize_rows(vectors.astype(np.float32)), "auto", seed)
    return labels, k


@dataclass(frozen=True)
class WsiCounts:
    """The lemmas scored: dev and test lemmas and their instances (usage examples), and the mean
    number of gold senses per lemma (rounded to 3 places)."""

    dev_lemmas: int
    dev_instances: int
    test_lemmas: int
    test_instances: int
    senses_per_lemma: float


@dataclass(frozen=True)
class WsiBestLayer:
    """The model's layer with the best dev ARI (``chosen_by`` says so), its three test scores, and
    the best test-ARI layer and score beside it, for reference only (chosen on test)."""

    layer_by_dev: int
    chosen_by: str
    test_ari_at_dev_layer: float
    test_v_measure_at_dev_layer: float
    test_bcubed_f1_at_dev_layer: float
    best_test_layer: int
    best_test_ari: float


@dataclass
class WsiResult(BenchmarkResult):
    """`eval wsi`'s result: the tidy rows (dev and test ARI, V-measure and B-cubed F1 per system and
    layer, means over lemmas), the counts, how scores are averaged and clusters chosen, the mean
    number of induced clusters per layer, the static model's coverage and the dev-chosen layer;
    ``meta`` holds what every run records (size, suite counts, seconds, precision, runtime).
    :meth:`to_dict` is the JSON `eval wsi --json` prints, these fields first in ``meta``."""

    counts: WsiCounts | None = None
    averaging: str = AVERAGING
    clustering: str = ""  # the clustering criterion, as `senses induce` uses it
    mean_clusters_per_layer: list[float] = field(default_factory=list)  # index: layer (0 = embeddings)
    static_coverage: float | None = None  # share of lemmas the static model has; None without one
    best_layer: WsiBestLayer | None = None  # None when no dev score is defined

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        head: dict[str, Any] = {
            "counts": None if self.counts is None else dataclasses.asdict(self.counts),
            "averaging": self.averaging,
            "clustering": self.clustering,
            "mean_clusters_per_layer": self.mean_clusters_per_layer,
        }
        if self.static_coverage is not None:
            head["static_coverage"] = self.static_coverage
        head["best_layer"] = None if self.best_layer is None else dataclasses.asdict(self.best_layer)
        return {"benchmark": self.benchmark, "model": self.model, "rows": self.rows, "meta": {**head, **self.meta}}


def _add_static(
    result: WsiResult, splits: dict[str, list[WsiLemma]], static: StaticModel, name: str, seed: int
) -> None:
    """The static baseline: one vector for every occurrence of a lemma, clustered like the hidden states."""
    per_lemma: dict[str, list[dict]] = {}
    covered = []
    for split, chosen in splits.items():
        per_lemma[split] = []
        for lem in chosen:
            lemma = lem.key[0]
            covered.append(lemma in static)
            if lemma in static:
                labels, _ = _cluster(np.tile(static.vector(lemma).values, (len(lem.rows), 1)), seed)
            else:  # no vector at all: nothing tells the occurrences apart
                labels = np.zeros(len(lem.rows), dtype=int)
            per_lemma[split].append(scores(lem.gold, labels))
    _add_means(result, name, None, per_lemma)
    result.static_coverage = float(np.mean(covered)) if covered else 0.0


def evaluate_wsi(
    lemmas: Sequence[WsiLemma],
    hidden: np.ndarray,
    model: str,
    static: StaticModel | None = None,
    static_name: str | None = None,
    seed: int = 0,
) -> WsiResult:
    """Per-layer induced-sense scores on dev and test lemmas, beside the three baselines.

    ``hidden`` is ``(n_spans, layers + 1, d)``; ``lemma.rows`` index its first axis.
    """
    from threadpoolctl import threadpool_limits

    splits = {name: [lem for lem in lemmas if lem.split == name] for name in ("dev", "test")}
    counts = {
        f"{name}_{what}": value
        for name, chosen in splits.items()
        for what, value in (("lemmas", len(chosen)), ("instances", sum(len(lem.rows) for lem in chosen)))
    }
    counts["senses_per_lemma"] = round(float(np.mean([len(set(lem.gold)) for lem in lemmas])), 3) if lemmas else 0
    from contextlens.analyses.representations.clustering import CRITERION

    result = WsiResult("wsi", model, counts=WsiCounts(**counts), clustering=CRITERION)
    mean_k: list[float] = []  # mean number of induced clusters per lemma, by layer
    with threadpool_limits(1):  # tiny k-means fits: thread start-up costs more than it saves
        for layer in range(hidden.shape[1]):
            per_lemma: dict[str, list[dict]] = {name: [] for name in splits}
            ks = []
            for name, chosen in splits.items():
                for lem in chosen:
                    labels, k = _cluster(hidden[lem.rows, layer, :], seed)
                    ks.append(k)
                    per_lemma[name].append(scores(lem.gold, labels))
            _add_means(result, model, layer, per_lemma)
            mean_k.append(round(float(np.mean(ks)), 3) if ks else 0.0)
        result.mean_clusters_per_layer = mean_k
        for system, assign in ((ONE_CLUSTER, lambda n: [0] * n), (ONE_PER_INSTANCE, lambda n: list(range(n)))):
            _add_means(
                result,
                system,
                None,
                {n: [scores(lem.gold, assign(len(lem.gold))) for lem in c] for n, c in splits.items()},
            )
        if static is not None:
            _add_static(result, splits, static, static_name or static.name, seed)
    best = best_layer(result, model)
    result.best_layer = None if best is None else WsiBestLayer(**best)
    return result


def best_layer(result: BenchmarkResult, system: str, metric: str = "ari") -> dict[str, float | int] | None:
    """The layer with the best dev ``metric`` (ties: the lower layer), its test scores, and the
    best test layer for reference."""
    dev = [r for r in result.select(system=system, split="dev", metric=metric) if not np.isnan(r["value"])]
    if not dev:
        return None
    top = max(dev, key=lambda r: (r["value"], -r["layer"]))["layer"]
    out: dict[str, float | int] = {"layer_by_dev": top, "chosen_by": f"dev {metric}"}
    for m in METRICS:
        out[f"test_{m}_at_dev_layer"] = result.value(system=system, split="test", metric=m, layer=top)
    tests = result.select(system=system, split="test", metric=metric)
    best_test = max(tests, key=lambda r: (r["value"], -r["layer"]))
    out["best_test_layer"] = best_test["layer"]
    out[f"best_test_{metric}"] = best_test["value"]
    return out


def table_rows(result: WsiResult) -> list[dict[str, object]]:
    """The wsi table: per (system, layer) dev ARI and test ARI, V-measure, B-cubed F1; ``best``
    marks the model's dev-picked layer."""
    best = None if result.best_layer is None else result.best_layer.layer_by_dev
    rows = result.pivot(
        ("system", "layer"),
        {
            "dev_ari": {"split": "dev", "metric": "ari"},
            "test_ari": {"split": "test", "metric": "ari"},
            "test_v_measure": {"split": "test", "metric": "v_measure"},
            "test_bcubed_f1": {"split": "test", "metric": "bcubed_f1"},
        },
        split="test",
        metric="ari",
    )
    mean_k = result.mean_clusters_per_layer
    for row in rows:
        row["best"] = row["system"] == result.model and row["layer"] == best
        own = row["system"] == result.model and row["layer"] is not None and row["layer"] < len(mean_k)
        row["mean_clusters"] = mean_k[row["layer"]] if own else None
    return rows


def run_wsi(
    model: ContextualModel | str,
    static: StaticModel | str | None,
    size: str = "full",
    progress: Progress | None = None,
) -> WsiResult:
    """WSI on the suite's WSD lemmas (``size`` "full" or "quick"), hidden states from its cached encoding."""
    from contextlens.analyses.benchmarks.suite import start_run
    from contextlens.analyses.measures.sizes import SEED
    from contextlens.core.static_models import as_static

    static_model = as_static(static) if static is not None else None  # a wrong name fails before encoding
    run = start_run(model, size, progress)
    enc = run.encoding
    lemmas = wsi_lemmas(run.suite.wsd, run.suite.wsd_rows, SEED)
    result = evaluate_wsi(
        lemmas, enc.hidden, enc.model, static_model, static_model.name if static_model else None, SEED
    )
    return run.finish(result, model)
