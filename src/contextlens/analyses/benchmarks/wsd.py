"""Word sense disambiguation by the nearest sense centroid, per layer.

Each sense (a WordNet synset of the lemma) is the mean hidden state of its training usage
examples (Reif et al. 2019, "Visualizing and Measuring the Geometry of BERT"; LMMS, Loureiro &
Jorge 2019). A held-out example gets the sense whose centroid has the highest cosine with it,
among the senses of its own lemma and part of speech. The held-out examples are split dev/test
by lemma, as for WiC: the best layer is picked on dev and scored on test. Baselines: the most
frequent sense by the SemCor counts WordNet ships (``cntlist.rev``) and a uniformly random
sense, over the same candidate senses.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.metrics import f1_score

from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.analyses.benchmarks.wic import BestLayer, best_layer
from contextlens.analyses.measures.datasets import Key, WsdData
from contextlens.core.jsonable import plain_json
from contextlens.core.similarity import row_cosines


@dataclass(frozen=True)
class WsdCounts:
    """The examples behind the scores: (lemma, part of speech) pairs, their senses and training
    examples (the sense inventory), the held-out dev and test examples and lemmas, and how many
    held-out examples were scored (those whose lemma has at least two senses in the inventory)."""

    lemma_pos: int
    senses: int
    train_examples: int
    dev_examples: int
    dev_lemmas: int
    test_examples: int
    test_lemmas: int
    scored_dev_examples: int
    scored_test_examples: int


@dataclass
class WsdResult(BenchmarkResult):
    """`eval wsd`'s result: the tidy rows (dev and test accuracy and macro-F1 per system and layer,
    the MFS and random-sense baselines), the counts, and the dev-chosen layer of the model and, with
    glosses, of ``<model>+glosses``; ``meta`` holds what every run records (size, suite counts,
    seconds, precision, runtime). :meth:`to_dict` is the JSON `eval wsd --json` prints, these fields
    first in ``meta`` (the glosses' keys only when glosses were used, a best layer only when set)."""

    counts: WsdCounts | None = None
    gloss_senses: int | None = None  # senses with a gloss vector; None without glosses
    best_layer: BestLayer | None = None  # None when no held-out example was scored
    best_layer_glosses: BestLayer | None = None  # the ``<model>+glosses`` system's; None without glosses
    gloss_template: str | None = None  # the gloss text's template, e.g. "{lemma}: {definition}"

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        head: dict[str, Any] = {"counts": None if self.counts is None else dataclasses.asdict(self.counts)}
        optional = {
            "gloss_senses": self.gloss_senses,
            "best_layer": self.best_layer and dataclasses.asdict(self.best_layer),
            "best_layer_glosses": self.best_layer_glosses and dataclasses.asdict(self.best_layer_glosses),
            "gloss_template": self.gloss_template,
        }
        head.update((k, v) for k, v in optional.items() if v is not None)
        return {"benchmark": self.benchmark, "model": self.model, "rows": self.rows, "meta": {**head, **self.meta}}


def centroids(vectors: np.ndarray, senses: Sequence[str]) -> dict[str, np.ndarray]:
    """Mean vector per sense label."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(senses):
        groups[s].append(i)
    return {s: vectors[idx].mean(axis=0) for s, idx in groups.items()}


def nearest_sense(vector: np.ndarray, candidates: dict[str, np.ndarray]) -> str:
    """The candidate with the highest cosine (ties: the first in sorted order)."""
    names = sorted(candidates)
    mat = np.stack([candidates[n] for n in names])
    cos = row_cosines(mat, np.broadcast_to(vector, mat.shape))
    return names[int(np.argmax(cos))]


def scores(gold: Sequence[str], predicted: Sequence[str]) -> dict[str, float]:
    """Accuracy and macro-F1 over the senses that occur in the gold labels."""
    labels = sorted(set(gold))
    return {
        "accuracy": float(np.mean([g == p for g, p in zip(gold, predicted, strict=True)])),
        "macro_f1": float(f1_score(gold, predicted, labels=labels, average="macro", zero_division=0)),
    }


def evaluate_wsd(
    data: WsdData,
    item_rows: Sequence[int],
    hidden: np.ndarray,
    model: str,
    sense_count: Callable[[str, str], int],
    seed: int = 0,
    gloss_hidden: np.ndarray | None = None,
    gloss_rows: dict[tuple[Key, str], int] | None = None,
) -> WsdResult:
    """Nearest-centroid accuracy and macro-F1 per layer on dev and test, beside MFS and random.

    ``item_rows[k]`` is the row of ``hidden`` (``(n_spans, layers + 1, d)``) for ``data.items[k]``;
    ``sense_count(synset, lemma)`` gives the SemCor count used by the MFS baseline. With
    ``gloss_hidden`` and ``gloss_rows[(key, synset)]`` (the lemma inside the sense's gloss, LMMS
    style) a second system ``<model>+glosses`` counts the gloss as one more example of its sense.
    The best layer is the one with the best dev accuracy; the test accuracy is reported at it
    (dev and test lemmas never overlap), with the best test layer beside it for reference.
    """
    train = [k for k, it in enumerate(data.items) if it.split == "train"]
    inventory: dict[Key, set[str]] = defaultdict(set)
    for k in train:
        inventory[data.items[k].key].add(data.items[k].example.synset)
    held = {
        name: [k for k, it in enumerate(data.items) if it.split == name and len(inventory[it.key]) >= 2]
        for name in ("dev", "test")
    }
    gold = {name: [data.items[k].example.synset for k in ks] for name, ks in held.items()}
    scored = {f"scored_{name}_examples": len(ks) for name, ks in held.items()}
    result = WsdResult("wsd", model, counts=WsdCounts(**data.counts, **scored))

    by_key: dict[Key, list[int]] = defaultdict(list)
    for k in train:
        by_key[data.items[k].key].append(k)
    variants = [(model, None)]
    if gloss_hidden is not None and gloss_rows is not None:
        variants.append((f"{model}+glosses", gloss_hidden))
        result.gloss_senses = len(gloss_rows)
    sides = _Sides(data, item_rows, inventory, by_key, held, gold)
    for system, glosses in variants:
        for layer in range(hidden.shape[1]):
            _score_layer(result, sides, system, hidden[:, layer, :], _GlossLayer(glosses, gloss_rows, layer))
    _add_baselines(result, sides, sense_count, seed)
    for system, _ in variants:
        best = best_layer(result, system)
        if best is not None:
            setattr(result, "best_layer" if system == model else "best_layer_glosses", BestLayer(**best))
    return result


@dataclass(frozen=True)
class _Sides:
    """What every layer's scoring reads: the items, their rows, the train inventory and the held splits."""

    data: WsdData
    item_rows: Sequence[int]
    inventory: dict[Key, set[str]]
    by_key: dict[Key, list[int]]
    held: dict[str, list[int]]
    gold: dict[str, list[str]]


@dataclass(frozen=True)
class _GlossLayer:
    """The gloss encodings at one layer (None: the system without glosses)."""

    hidden: np.ndarray | None
    rows: dict[tuple[Key, str], int] | None
    layer: int


def _score_layer(result: WsdResult, sides: _Sides, system: str, vectors: np.ndarray, glosses: _GlossLayer) -> None:
    """One system at one layer: sense centroids from train (plus glosses), then dev and test scored."""
    items = sides.data.items
    sense_vectors = {}
    for key, ks in sides.by_key.items():
        rows = [vectors[sides.item_rows[k]] for k in ks]
        labels = [items[k].example.synset for k in ks]
        if glosses.hidden is not None and glosses.rows is not None:
            for synset in sorted(sides.inventory[key]):
                rows.append(glosses.hidden[glosses.rows[(key, synset)], glosses.layer])
                labels.append(synset)
        sense_vectors[key] = centroids(np.stack(rows), labels)
    for name, ks in sides.held.items():
        if not ks:
            continue
        predicted = [nearest_sense(vectors[sides.item_rows[k]], sense_vectors[items[k].key]) for k in ks]
        for metric, value in scores(sides.gold[name], predicted).items():
            result.add(system=system, layer=glosses.layer, split=name, metric=metric, value=value)


def _add_baselines(result: WsdResult, sides: _Sides, sense_count: Callable[[str, str], int], seed: int) -> None:
    """The test split's most-frequent-sense (SemCor counts) and random-sense baselines."""
    items, inventory, test = sides.data.items, sides.inventory, sides.held["test"]
    mfs = []
    for k in test:
        item = items[k]
        candidates = sorted(inventory[item.key])
        mfs.append(max(candidates, key=lambda s: (sense_count(s, item.example.lemma), -candidates.index(s))))
    for metric, value in scores(sides.gold["test"], mfs).items():
        result.add(system="mfs-semcor", layer=None, split="test", metric=metric, value=value)
    rng = random.Random(seed)
    drawn = [rng.choice(sorted(inventory[items[k].key])) for k in test]
    for metric, value in scores(sides.gold["test"], drawn).items():
        result.add(system="random-sense", layer=None, split="test", metric=metric, value=value)
    expected = float(np.mean([1 / len(inventory[items[k].key]) for k in test])) if test else float("nan")
    result.add(system="random-sense", layer=None, split="test", metric="expected_accuracy", value=expected)


def table_rows(result: WsdResult) -> list[dict[str, object]]:
    """The wsd table: per (system, layer) dev accuracy, test accuracy and test macro-F1; ``best``
    marks the model's layer picked on dev."""
    best = None if result.best_layer is None else result.best_layer.layer_by_dev
    rows = result.pivot(
        ("system", "layer"),
        {
            "dev_accuracy": {"split": "dev", "metric": "accuracy"},
            "test_accuracy": {"split": "test", "metric": "accuracy"},
            "test_macro_f1": {"split": "test", "metric": "macro_f1"},
        },
        split="test",
        metric="accuracy",
    )
    for row in rows:
        row["best"] = row["system"] == result.model and row["layer"] == best
    return rows


def random_expected_accuracy(result: BenchmarkResult) -> float | None:
    """The accuracy a uniformly random sense would expect on the scored examples."""
    return result.value(system="random-sense", metric="expected_accuracy")
