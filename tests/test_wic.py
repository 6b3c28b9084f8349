"""Word in context: the pair construction, threshold tuning, and the CLI on the quick subset."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.benchmarks.wic import static_pair_cosines
from contextlens.analyses.measures.datasets import build_wic
from contextlens.analyses.measures.sense_threshold import accuracy, tune_threshold
from contextlens.core.wordnet import usage_examples
from tests.helpers import run_cli


@pytest.fixture(scope="module")
def data():
    return build_wic(usage_examples(), max_lemmas=300, seed=0)


def test_no_lemma_in_both_splits(data):
    dev = {p.lemma for p in data.split("dev")}
    test = {p.lemma for p in data.split("test")}
    assert dev and test and not dev & test


def test_every_split_is_exactly_balanced(data):
    for name in ("dev", "test"):
        pairs = data.split(name)
        assert sum(p.same for p in pairs) * 2 == len(pairs)
        assert data.counts[name]["pairs"] == len(pairs)


def test_pairs_are_of_one_lemma_and_labelled_by_synset(data):
    for p in data.pairs:
        assert (p.first.lemma, p.first.pos) == (p.second.lemma, p.second.pos) == (p.lemma, p.pos)
        assert p.same == (p.first.synset == p.second.synset)
        assert p.first.text != p.second.text


def test_construction_is_deterministic(data):
    again = build_wic(usage_examples(), max_lemmas=300, seed=0)
    assert again.pairs == data.pairs
    other = build_wic(usage_examples(), max_lemmas=300, seed=1)
    assert other.pairs != data.pairs


def test_tune_threshold_on_a_hand_case():
    # cosines 0.9 0.8 0.3 0.2 with labels same same diff diff: any t in (0.3, 0.8] is perfect;
    # the candidates are midpoints, so the lowest perfect one is (0.3 + 0.8) / 2 = 0.55.
    th = tune_threshold([0.9, 0.3, 0.8, 0.2], [True, False, True, False])
    assert th.value == pytest.approx(0.55) and th.dev_accuracy == 1.0
    # a "same" pair (0.5) below a "different" one (0.6): 3 of 4 at best, first reached at the
    # midpoint 0.35 (only 0.2 called different); 0.55 gets both middle pairs wrong.
    cos, same = [0.9, 0.5, 0.6, 0.2], [True, True, False, False]
    th = tune_threshold(cos, same)
    assert th.value == pytest.approx(0.35) and th.dev_accuracy == 0.75
    assert accuracy(cos, same, 0.55) == 0.5 and accuracy(cos, same, 0.75) == 0.75


def test_static_model_scores_chance_on_balanced_pairs(data, glove):
    cos, covered = static_pair_cosines(data.pairs, glove)
    assert covered > 0.9
    assert np.allclose(cos[cos > -2], 1.0)
    dev = [k for k, p in enumerate(data.pairs) if p.split == "dev"]
    test = [k for k, p in enumerate(data.pairs) if p.split == "test"]
    th = tune_threshold(cos[dev], [data.pairs[k].same for k in dev])
    assert accuracy(cos[test], [data.pairs[k].same for k in test], th.value) == pytest.approx(0.5, abs=0.01)


def test_cli_quick_runs_offline_with_baselines():
    proc = run_cli("eval", "wic", "--model", "minilm", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["benchmark"] == "wic" and doc["model"] == "minilm"
    assert set(doc["rows"][0]) >= {"system", "layer", "split", "metric", "value"}
    layers = {r["layer"] for r in doc["rows"] if r["system"] == "minilm" and r["split"] == "test"}
    assert layers == set(range(7))
    static = [r for r in doc["rows"] if r["system"] == "glove-50d" and r["split"] == "test"]
    assert static[0]["value"] == pytest.approx(0.5, abs=0.01)
    systems = {r["system"] for r in doc["rows"]}
    assert {"input-row", "chance", "published:BERT-large", "published:ELMo", "published:human"} <= systems


def test_cli_unknown_model_is_one_line_error():
    proc = run_cli("eval", "wic", "--model", "no-such-model", "--quick")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1
