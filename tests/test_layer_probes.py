"""`eval layers`: probe data keep lemmas apart, the control is per word type, the command runs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.benchmarks.layer_probes import (
    control_labels,
    expected_layer,
    pos_data,
    probe_accuracy,
    sense_data,
)
from contextlens.cli import main
from contextlens.core.wordnet import usage_examples
from tests.helpers import assert_plain_json


def test_pos_data_uses_words_seen_as_both_noun_and_verb() -> None:
    data = pos_data(usage_examples(), lemmas=10, per_label=2)
    assert len(data.examples) == 40
    for lemma in set(data.groups):
        labels = [lab for lab, g in zip(data.labels, data.groups, strict=True) if g == lemma]
        assert sorted(labels) == ["noun", "noun", "verb", "verb"]
    assert all(e.pos == ("n" if lab == "noun" else "v") for e, lab in zip(data.examples, data.labels, strict=True))


def test_sense_data_is_supersenses_of_polysemous_nouns() -> None:
    data = sense_data(usage_examples(), lemmas=30, classes=4)
    assert len(set(data.labels)) <= 4 and all(e.pos == "n" for e in data.examples)
    assert any(
        len({lab for lab, g in zip(data.labels, data.groups, strict=True) if g == lemma}) > 1
        for lemma in set(data.groups)
    )  # one word, several supersenses: the context must decide


def test_control_labels_are_constant_per_word_type() -> None:
    data = pos_data(usage_examples(), lemmas=20, per_label=2)
    control = control_labels(data)
    for lemma in set(data.groups):
        assert len({c for c, g in zip(control, data.groups, strict=True) if g == lemma}) == 1
    assert set(control) <= set(data.labels)


def test_probe_is_scored_on_unseen_groups() -> None:
    """A label that is a function of the group alone cannot be learned for unseen groups."""
    rng = np.random.default_rng(0)
    groups = [f"g{i // 4}" for i in range(200)]
    by_group = {g: rng.choice(["a", "b"]) for g in set(groups)}
    x = np.stack([rng.normal(size=8) + (int(g[1:]) % 7) for g in groups])
    assert probe_accuracy(x, [by_group[g] for g in groups], groups) < 0.75
    separable = [("a" if v[0] > 0 else "b") for v in (rng.normal(size=(200, 8)))]
    x2 = np.array([[1.0 if s == "a" else -1.0, *rng.normal(size=3)] for s in separable])
    assert probe_accuracy(x2, separable, groups) > 0.95


def test_expected_layer_is_the_centre_of_gravity_of_gains() -> None:
    assert expected_layer([0.5, 0.9, 0.9, 0.9]) == pytest.approx(1.0)
    assert expected_layer([0.5, 0.6, 0.7, 0.8]) == pytest.approx(2.0)
    assert expected_layer([0.5, 0.5, 0.4]) is None


@pytest.mark.slow  # ~40-70 s here: WordNet examples encoded once (then cached) and 30 probes
def test_eval_layers_quick_gives_both_curves_and_controls(tmp_path, capsys) -> None:
    plot = tmp_path / "layers.png"
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "layers", "--model", "minilm", "--quick", "--json", "--plot", str(plot)])
    assert exit_info.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert_plain_json(doc)
    assert {r["split"] for r in doc["rows"]} == {"pos", "pos-control", "sense", "sense-control"}
    pos = [r["value"] for r in doc["rows"] if r["system"] == "minilm" and r["split"] == "pos"]
    assert len(pos) == 7 and max(pos) > 0.8  # part of speech is linearly readable from some layer
    assert set(doc["meta"]["expected_layer"]) == {"pos", "pos-control", "sense", "sense-control"}
    assert plot.stat().st_size > 10_000
