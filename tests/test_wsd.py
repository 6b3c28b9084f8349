"""Word sense disambiguation: data split, the centroid classifier and scores on hand cases, the CLI."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict

import numpy as np
import pytest

from contextlens.analyses.benchmarks.suite import gloss_spans
from contextlens.analyses.benchmarks.wsd import centroids, evaluate_wsd, nearest_sense, scores
from contextlens.analyses.measures.datasets import build_wsd
from contextlens.core.wordnet import usage_examples, wordnet
from tests.helpers import run_cli


@pytest.fixture(scope="module")
def data():
    return build_wsd(usage_examples(), max_lemmas=150, max_train_per_sense=3, seed=0)


def test_held_out_examples_are_never_trained_on_and_have_a_trained_sense(data):
    train = {(i.example.text, i.example.synset) for i in data.part("train")}
    senses = defaultdict(set)
    for i in data.part("train"):
        senses[i.key].add(i.example.synset)
    assert data.part("test") and data.part("dev")
    for item in data.part("test") + data.part("dev"):
        assert (item.example.text, item.example.synset) not in train
        assert item.example.synset in senses[item.key]
    per_sense = defaultdict(int)
    for i in data.part("train"):
        per_sense[(i.key, i.example.synset)] += 1
    assert max(per_sense.values()) <= 3


def test_dev_and_test_lemmas_are_disjoint(data):
    dev = {i.example.lemma for i in data.part("dev")}
    test = {i.example.lemma for i in data.part("test")}
    assert dev and test and not dev & test
    assert data.counts["dev_lemmas"] == len(dev) and data.counts["test_lemmas"] == len(test)
    assert len(test) > len(dev)  # dev_share 0.3


def test_best_layer_is_picked_on_dev_even_when_test_prefers_another(data):
    """Layer 1 is perfect on dev and wrong on test, layer 2 the reverse: dev must pick layer 1."""
    senses = sorted({(i.key, i.example.synset) for i in data.part("train")})
    dim = {s: n for n, s in enumerate(senses)}
    by_key = defaultdict(list)
    for key, synset in senses:
        by_key[key].append(synset)
    hidden = np.zeros((len(data.items), 3, len(senses)))
    for k, item in enumerate(data.items):
        right = dim[(item.key, item.example.synset)]
        wrong = dim[(item.key, next(s for s in by_key[item.key] if s != item.example.synset))]
        for layer in range(3):
            good = item.split == "train" or (item.split, layer) in {("dev", 1), ("test", 2)}
            hidden[k, layer, right if good else wrong] = 1.0
    result = evaluate_wsd(data, list(range(len(data.items))), hidden, "toy", lambda synset, lemma: 0)
    dev = {r["layer"]: r["value"] for r in result.select(system="toy", split="dev", metric="accuracy")}
    test = {r["layer"]: r["value"] for r in result.select(system="toy", split="test", metric="accuracy")}
    assert dev == {0: 0.0, 1: 1.0, 2: 0.0} and test == {0: 0.0, 1: 0.0, 2: 1.0}
    assert dataclasses.asdict(result.best_layer) == {
        "layer_by_dev": 1,
        "test_accuracy_at_dev_layer": 0.0,
        "best_test_layer": 2,
        "best_test_accuracy": 1.0,
    }


def test_split_is_deterministic(data):
    assert build_wsd(usage_examples(), max_lemmas=150, max_train_per_sense=3, seed=0).items == data.items


def test_centroid_classifier_on_a_hand_case():
    vectors = np.array([[1.0, 0.0], [0.8, 0.2], [0.0, 1.0]])
    cents = centroids(vectors, ["a", "a", "b"])
    assert np.allclose(cents["a"], [0.9, 0.1]) and np.allclose(cents["b"], [0.0, 1.0])
    assert nearest_sense(np.array([0.7, 0.3]), cents) == "a"
    assert nearest_sense(np.array([0.2, 0.9]), cents) == "b"


def test_scores_on_a_hand_case():
    # a: precision 1, recall 1/2, F1 2/3; b: precision 1/2, recall 1, F1 2/3.
    s = scores(["a", "a", "b"], ["a", "b", "b"])
    assert s["accuracy"] == pytest.approx(2 / 3)
    assert s["macro_f1"] == pytest.approx(2 / 3)


def test_cli_quick_json_has_layers_and_baselines():
    proc = run_cli("eval", "wsd", "--model", "minilm", "--quick", "--glosses", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["benchmark"] == "wsd"
    systems = {r["system"] for r in doc["rows"]}
    assert {"minilm", "minilm+glosses", "mfs-semcor", "random-sense"} <= systems
    acc = {
        split: {
            r["layer"]: r["value"]
            for r in doc["rows"]
            if r["system"] == "minilm" and r["metric"] == "accuracy" and r["split"] == split
        }
        for split in ("dev", "test")
    }
    assert set(acc["dev"]) == set(acc["test"]) == set(range(7))
    assert all(0 <= v <= 1 for split in acc.values() for v in split.values())
    best = doc["meta"]["best_layer"]
    top = max(acc["dev"].values())
    assert best["layer_by_dev"] == min(layer for layer, v in acc["dev"].items() if v == top)
    assert best["test_accuracy_at_dev_layer"] == acc["test"][best["layer_by_dev"]]
    assert best["best_test_accuracy"] == max(acc["test"].values())
    assert {r["split"] for r in doc["rows"] if r["system"] in ("mfs-semcor", "random-sense")} == {"test"}


def test_gloss_spans_cover_every_trained_sense_with_its_lemma(data):
    texts, spans, rows = gloss_spans(data)
    trained = {(i.key, i.example.synset) for i in data.part("train")}
    assert set(rows) == trained
    for (key, synset), row in list(rows.items())[:50]:
        t, start, end = spans[row]
        assert texts[t][start:end] == key[0]
        assert wordnet().synset(synset).definition() in texts[t]
