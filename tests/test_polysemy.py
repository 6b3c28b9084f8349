"""The polysemy explorer: built-in data, spread, separation gap and its permutation test, errors."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from typer.testing import CliRunner

from contextlens.analyses.lesson.divergence import same_minus_cross
from contextlens.analyses.lesson.polysemy import (
    explore,
    load_sense_sentences,
    permutation_test,
    separation_gap,
    spread,
)
from contextlens.cli import app
from contextlens.errors import DataFileError, InputError
from tests.helpers import figure_count, run_cli

LABELS = ["a"] * 4 + ["b"] * 4 + ["c"] * 4


def block_matrix(same: float, cross: float, labels: list[str]) -> np.ndarray:
    n = len(labels)
    m = np.array([[same if labels[i] == labels[j] else cross for j in range(n)] for i in range(n)])
    np.fill_diagonal(m, 1.0)
    return m


def test_builtin_set_covers_five_words_with_three_senses_and_several_sentences_each():
    data = load_sense_sentences()
    by_word: dict[str, Counter] = {}
    for s in data:
        by_word.setdefault(s.word, Counter())[s.sense] += 1
    assert {"bank", "bat", "light", "lead", "spring"} <= set(by_word)
    for word, senses in by_word.items():
        assert len(senses) >= 3, word
        assert min(senses.values()) >= 3, (word, senses)
    for s in data:  # the marked target is the word itself
        assert s.occurrence.word.lower() == s.word


def test_perfectly_separated_senses_give_the_known_gap_and_a_small_p_value():
    m = block_matrix(0.9, 0.1, LABELS)
    assert separation_gap(m, LABELS) == pytest.approx(0.8)
    gaps, p = permutation_test(m[None], LABELS, permutations=500, seed=1)
    assert gaps[0] == pytest.approx(0.8)
    # only shuffles that reproduce the same partition reach 0.8: chance 4!^3 3!/12! ~ 1.7e-4
    assert p[0] <= 3 / 501


def test_unrelated_labels_give_a_large_p_value():
    flat = block_matrix(0.5, 0.5, LABELS)  # every pair alike: no labelling can beat the observed gap 0
    gaps, p = permutation_test(flat[None], LABELS, permutations=200)
    assert gaps[0] == pytest.approx(0.0)
    assert p[0] == 1.0
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 30))
    noise = x @ x.T / np.outer(np.linalg.norm(x, axis=1), np.linalg.norm(x, axis=1))
    _, p_noise = permutation_test(noise[None], LABELS, permutations=500)
    assert p_noise[0] > 0.05


def test_gap_and_spread_agree_with_direct_computation():
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, size=(12, 12))
    m = (a + a.T) / 2
    np.fill_diagonal(m, 1.0)
    same, cross = same_minus_cross(m, LABELS)
    assert separation_gap(m, LABELS) == pytest.approx(same - cross)
    assert spread(m) == pytest.approx(1 - m[np.triu_indices(12, 1)].mean())


def test_explore_on_minilm_gives_symmetric_unit_diagonal_matrices_ranked_by_spread(minilm):
    result = explore(["bank", "lead"], minilm, permutations=200)
    assert {w.word for w in result.words} == {"bank", "lead"}
    assert result.words[0].spread >= result.words[1].spread
    for w in result.words:
        assert w.matrices.shape == (minilm.num_layers + 1, 12, 12)
        for m in w.matrices:
            np.testing.assert_allclose(m, m.T, atol=1e-12)
            assert np.all(np.diag(m) == 1.0)
        assert w.layer == minilm.num_layers
        assert w.spread == pytest.approx(spread(w.matrix))
        for k, m in enumerate(w.matrices):
            same, cross = same_minus_cross(m, w.senses)
            assert w.gaps[k] == pytest.approx(same - cross)
            assert 1 / 201 <= w.p_values[k] <= 1.0
        assert w.pca.shape == (12, 2)
        assert 0 < sum(w.pca_explained) <= 1.0 + 1e-9
    d = result.to_dict()
    assert d["permutation_test"]["permutations"] == 200
    assert d["ranking"] == [w.word for w in result.words]


def test_explore_errors_name_the_problem(minilm, tmp_path):
    with pytest.raises(InputError, match="no sentences for 'zebra'"):
        explore(["zebra"], minilm)
    with pytest.raises(InputError, match="out of range"):
        explore(["bank"], minilm, layer=99)
    with pytest.raises(InputError, match="`seed` must be a whole number of at least 0, got -1"):
        explore(["bank"], minilm, seed=-1)  # numpy's ValueError once reached the web API as a 500
    bad = tmp_path / "bad.tsv"
    bad.write_text("bank\tfinance\tThe [bank] called.\nbank\triver\tThe river bank flooded.\n")
    with pytest.raises(DataFileError, match=r"bad\.tsv, line 2: no \[marked\] target"):
        load_sense_sentences(bad)
    bad.write_text("bank\tfinance\textra\tThe [bank] called.\n")
    with pytest.raises(DataFileError, match=r"bad\.tsv, line 1: expected 2 or 3 tab-separated fields"):
        load_sense_sentences(bad)


def test_explore_cli_with_own_file_json_plot_and_html(tmp_path):
    data = tmp_path / "mine.tsv"
    data.write_text(
        "# my sentences\n"
        "bank\tmoney\tThe [bank] approved the loan.\n"
        "bank\tmoney\tI paid the cheque into the [bank].\n"
        "bank\triver\tThe river [bank] was muddy.\n"
        "bank\triver\tWe fished from the [bank] of the stream.\n"
    )
    png, page = tmp_path / "e.png", tmp_path / "e.html"
    out = CliRunner().invoke(
        app,
        [
            "explore",
            "--sentences",
            str(data),
            "-m",
            "minilm",
            "--permutations",
            "50",
            "--json",
            "--plot",
            str(png),
            "--html",
            str(page),
        ],  # fmt: skip
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout[out.stdout.index("{") :])
    assert doc["ranking"] == ["bank"] and len(doc["words"][0]["sentences"]) == 4
    assert png.stat().st_size > 10_000 and figure_count(page.read_text()) >= 1
    table = CliRunner().invoke(app, ["explore", "bank", "light", "-m", "minilm", "--permutations", "50"])
    assert table.exit_code == 0 and "spread" in table.stdout and "light" in table.stdout


def test_bad_tsv_line_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "senses.tsv"
    bad.write_text("bank\tfinance\tThe [bank] called.\n\nbank\triver\tno marker here\n")
    r = run_cli("explore", "--sentences", str(bad), "-m", "minilm")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "senses.tsv, line 3" in r.stderr and "Traceback" not in r.stderr


def test_unlabelled_sentences_give_spread_but_no_gap(minilm, tmp_path):
    f = tmp_path / "plain.tsv"
    f.write_text("bank\tThe [bank] approved the loan.\nbank\tThe river [bank] was muddy.\nbank\tA [bank] of fog.\n")
    data = load_sense_sentences(f)
    assert [s.sense for s in data] == [None, None, None]
    (w,) = explore(["bank"], minilm, data, permutations=10).words
    assert w.gaps is None and w.p_value is None and w.to_dict()["gap"] is None
    assert 0.0 < w.spread < 1.0
    with pytest.raises(InputError, match="only one sentence"):
        explore(["bank"], minilm, data[:1])


def test_three_and_three_sentences_get_an_exact_test_whose_floor_is_one_in_ten():
    """Regression (issue 33): 3 + 3 sentences have 20 arrangements of their labels (10 splits), so
    p >= 0.1; the explorer said 'smallest possible p 0.0010' and printed p = 0.103 from shuffles."""
    from itertools import permutations as orders

    from contextlens.analyses.lesson.polysemy import arrangements, smallest_p

    labels = ["bird"] * 3 + ["machine"] * 3
    assert arrangements(labels) == 20
    assert smallest_p(labels, 1000) == (pytest.approx(0.1), True)
    assert smallest_p(labels, 10) == (pytest.approx(1 / 11), False)  # more arrangements than shuffles asked
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, size=(6, 6))
    m = (a + a.T) / 2
    np.fill_diagonal(m, 1.0)
    for matrix in (block_matrix(0.9, 0.1, labels), m):
        observed, p = permutation_test(matrix[None], labels, permutations=1000)
        # the exact p by brute force over all 720 orders of the labels (each arrangement 36 times)
        every = [separation_gap(matrix, [labels[i] for i in order]) for order in orders(range(6))]
        assert p[0] == pytest.approx(np.mean(np.array(every) >= observed[0] - 1e-12))
        assert p[0] >= 0.1 - 1e-12
    assert permutation_test(block_matrix(0.9, 0.1, labels)[None], labels, permutations=1000)[1][0] == pytest.approx(0.1)


def test_the_explorer_says_when_few_sentences_cannot_reach_p_below_005(tmp_path):
    from tests.helpers import run_cli

    tsv = tmp_path / "crane.tsv"
    tsv.write_text(
        "crane\tbird\tA [crane] waded through the shallow marsh.\n"
        "crane\tbird\tThe [crane] spread its wings and flew south.\n"
        "crane\tbird\tWe watched a [crane] catch a fish.\n"
        "crane\tmachine\tThe [crane] lifted steel beams onto the roof.\n"
        "crane\tmachine\tA tall [crane] stood over the building site.\n"
        "crane\tmachine\tThe operator climbed into the [crane] cab.\n",
        encoding="utf-8",
    )
    out = run_cli("explore", "--sentences", str(tsv), "-m", "minilm")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "every one of the 20 arrangements" in text and "the smallest possible p is 0.1000" in text
    assert "too few sentences to reach p < 0.05" in text and "1/1001" not in text
    data = json.loads(run_cli("explore", "--sentences", str(tsv), "-m", "minilm", "--json").stdout)
    assert data["permutation_test"]["smallest_possible_p"] == pytest.approx(0.1)
    word = data["words"][0]
    assert word["exact_test"] is True and word["smallest_possible_p"] == pytest.approx(0.1)
    assert all(layer["p_value"] >= 0.1 - 1e-12 for layer in word["layers"])
