"""Two models side by side (issue 33): compare, explore and same-sense with `-m` twice give each
model's own answer against its own baseline (the very answer of one model alone), and the linear
CKA of the two models' layers; never a cosine across the two spaces."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.lesson.divergence import compare
from contextlens.analyses.lesson.polysemy import explore
from contextlens.analyses.lesson.same_sense import same_sense
from contextlens.analyses.lesson.two_models import CKA_TEXTS, side_by_side
from contextlens.analyses.representations.cka import compare_layers
from contextlens.errors import InputError
from helpers import run_cli

MONEY, RIVER = "The [bank] called about my account.", "The river [bank] flooded last night."


@pytest.fixture(scope="module")
def pair(minilm, mpnet):
    return side_by_side([minilm, mpnet], lambda m: compare([MONEY, RIVER], m))


def test_each_answer_is_that_model_alone_against_its_own_baseline(pair, minilm, mpnet):
    for answer, model in zip(pair.answers, (minilm, mpnet), strict=True):
        alone = compare([MONEY, RIVER], model)
        assert answer.to_dict() == alone.to_dict()
        assert answer.baseline is not None and answer.baseline.model == model.name
    assert [len(a.layers) for a in pair.answers] == [minilm.num_layers + 1, mpnet.num_layers + 1]
    assert pair.question == "compare" and pair.models == ["minilm", "mpnet"]


def test_the_cka_is_the_cka_commands_and_its_matches_are_its_row_maxima(pair, minilm, mpnet):
    assert pair.cka.matrix.shape == (minilm.num_layers + 1, mpnet.num_layers + 1)
    again = compare_layers(minilm, mpnet, corpus="wordnet", limit=CKA_TEXTS)
    np.testing.assert_allclose(pair.cka.matrix, again.matrix, atol=1e-9)
    assert np.all((pair.cka.matrix > 0) & (pair.cka.matrix <= 1 + 1e-9))
    for layer, match, cka in pair.matches():
        row = pair.cka.matrix[pair.cka.layers_a.index(layer)]
        assert cka == pytest.approx(row.max()) and pair.cka.layers_b[int(np.argmax(row))] == match


def test_curves_are_each_models_cosine_minus_its_own_random_mean(pair):
    curves = pair.curves()
    assert [c.model for c in curves] == ["minilm", "mpnet"]
    for curve, answer in zip(curves, pair.answers, strict=True):
        bases = answer.layer_baselines()
        expected = [cos - base["mean"] for cos, base in zip(answer.layer_cosines, bases, strict=True)]
        assert curve.values == pytest.approx(expected)
        assert curve.depth[0] == 0.0 and curve.depth[-1] == 1.0  # both models on one axis of relative depth


def test_the_json_says_no_cosine_crosses_the_two_spaces(pair):
    body = json.loads(json.dumps(pair.to_dict()))
    assert [a["model"] for a in body["answers"]] == ["minilm", "mpnet"]
    assert "not computed (different spaces)" in body["note"]
    assert len(body["best_layer_matches"]) == len(body["cka"]["layers_a"])


def test_explore_and_same_sense_side_by_side(minilm, mpnet):
    words = side_by_side([minilm, mpnet], lambda m: explore(["bank"], m, permutations=20))
    assert words.question == "explore" and [a.model for a in words.answers] == ["minilm", "mpnet"]
    assert {c.label for c in words.curves()} == {"bank: same − cross-sense cosine"}
    answers = side_by_side([minilm, mpnet], lambda m: same_sense(MONEY, RIVER, m, size="quick"))
    assert answers.question == "same-sense"
    for answer, model in zip(answers.answers, (minilm, mpnet), strict=True):
        assert answer.to_dict() == same_sense(MONEY, RIVER, model, size="quick").to_dict()
    curves = answers.curves()
    assert [len(c.layers) for c in curves] == [1, 1]  # the rule's own layer, one point per model


def test_the_cli_takes_two_models_and_refuses_three_or_one_twice(tmp_path):
    figure = str(tmp_path / "two.png")
    done = run_cli("compare", MONEY, RIVER, "-m", "minilm", "-m", "mpnet", "--json", "--plot", figure)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["models"] == ["minilm", "mpnet"] and len(body["answers"]) == 2
    assert (tmp_path / "two.png").stat().st_size > 10_000
    shown = run_cli("same-sense", MONEY, RIVER, "-m", "minilm", "-m", "mpnet", "--quick")
    assert shown.returncode == 0, shown.stderr
    assert "the two models' layers, by linear CKA" in shown.stdout and shown.stdout.count("P(same) =") == 2
    for models, says in [(["minilm", "mpnet", "minilm"], "two models, got 3"), (["minilm", "minilm"], "the same")]:
        refused = run_cli("compare", MONEY, RIVER, *[x for m in models for x in ("-m", m)])
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and says in refused.stderr, refused.stderr


def test_the_api_refuses_one_model_or_another_kind_of_answer(minilm, mpnet):
    with pytest.raises(InputError, match="two models"):
        side_by_side([minilm], lambda m: compare([MONEY, RIVER], m))
    with pytest.raises(InputError, match="compare, explore or same-sense"):
        side_by_side([minilm, mpnet], lambda m: m.name)


def test_the_cka_is_measured_once_then_kept_in_memory_and_on_disk(minilm, mpnet, monkeypatch, tmp_path):
    """A server's second two-model request, and the next command, read the CKA kept under the two
    models' identities (issue 33: it was measured again on every request)."""
    from collections import OrderedDict

    from contextlens.analyses.lesson import two_models
    from contextlens.analyses.representations import cka
    from contextlens.core import disk_cache

    fewest = cka.MIN_TEXTS  # what is kept, not the CKA's value, is under test: the fewest sentences it takes
    monkeypatch.setattr(disk_cache, "cache_dir", lambda: tmp_path)  # an empty disk cache
    monkeypatch.setattr(two_models, "_KEPT", OrderedDict())  # and nothing kept in this process
    calls, real = [], cka.compare_layers
    monkeypatch.setattr(cka, "compare_layers", lambda *a, **k: calls.append(a[:2]) or real(*a, **k))
    first = two_models.kept_cka(minilm, mpnet, fewest)
    assert len(calls) == 1 and two_models.kept_cka(minilm, mpnet, fewest) is first  # in memory: no second measure
    two_models._KEPT.clear()  # as a new process: the disk answers, the same numbers
    again = two_models.kept_cka(minilm, mpnet, fewest)
    assert len(calls) == 1 and again is not first and again.to_dict() == first.to_dict()
    np.testing.assert_array_equal(again.matrix, real(minilm, mpnet, corpus="wordnet", limit=fewest).matrix)
    two_models.kept_cka(mpnet, minilm, fewest)  # another order, another size: another key, measured
    two_models.kept_cka(minilm, mpnet, fewest + 1)
    measured = [tuple(m.name for m in pair) for pair in calls]
    assert measured == [("minilm", "mpnet"), ("mpnet", "minilm"), ("minilm", "mpnet")]
