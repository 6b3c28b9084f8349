"""Linear CKA: its defining properties on synthetic data, then the command on a real model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.representations.cka import MIN_TEXTS, align, cka_matrix, compare_layers, linear_cka
from contextlens.cli import main
from contextlens.core.extraction import TokenStates
from contextlens.errors import InputError
from tests.helpers import assert_plain_json


def _features(n: int = 400, d: int = 32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) @ rng.normal(size=(d, d))  # correlated columns, not isotropic


def test_cka_of_a_representation_with_itself_is_one() -> None:
    x = _features()
    assert linear_cka(x, x) == pytest.approx(1.0, abs=1e-12)


def test_cka_is_invariant_to_rotation_and_isotropic_scaling() -> None:
    x = _features()
    y = np.tanh(x[:, :16]) + 0.5 * _features(d=16, seed=1)  # related to x, but not equal
    q, _ = np.linalg.qr(np.random.default_rng(2).normal(size=(16, 16)))
    base = linear_cka(x, y)
    assert 0.05 < base < 0.95
    assert linear_cka(x, y @ q) == pytest.approx(base, rel=1e-9)
    assert linear_cka(7.5 * x, y) == pytest.approx(base, rel=1e-9)
    assert linear_cka(x, y + 3.0) == pytest.approx(base, rel=1e-9)  # centred: a shift changes nothing


def test_cka_is_not_invariant_to_anisotropic_scaling() -> None:
    """The property is specific: stretching one axis does change it (so the test above can fail)."""
    x = _features()
    y = np.tanh(x[:, :16])
    stretched = y * np.r_[50.0, np.ones(15)]
    assert abs(linear_cka(x, stretched) - linear_cka(x, y)) > 0.01


def test_cka_of_independent_random_features_is_near_zero_for_large_n() -> None:
    rng = np.random.default_rng(3)
    small = linear_cka(rng.normal(size=(50, 20)), rng.normal(size=(50, 20)))
    large = linear_cka(rng.normal(size=(20_000, 20)), rng.normal(size=(20_000, 20)))
    assert large < 0.01
    assert large < small  # the bias shrinks with n


def test_cka_matrix_has_rows_for_a_and_columns_for_b() -> None:
    x = _features()
    m = cka_matrix([x, x[:, :5]], [x, x[:, :3], x[:, :8]])
    assert m.shape == (2, 3)
    assert m[0, 0] == pytest.approx(1.0)


def test_cka_needs_the_same_rows() -> None:
    with pytest.raises(InputError, match="same number of rows"):
        linear_cka(np.ones((10, 3)), np.ones((11, 3)))


def _states(text: str, offsets: list[tuple[int, int]]) -> TokenStates:
    n = len(offsets)
    return TokenStates(text, tuple(range(n)), tuple("t" * n), tuple(offsets), (0,), np.zeros((1, n, 2)))


def test_alignment_pairs_identical_spans_and_ignores_bpe_spaces() -> None:
    text = "the riverbank flooded"
    wordpiece = _states(text, [(0, 3), (4, 9), (9, 13), (14, 21)])  # the river ##bank flooded
    bpe = _states(text, [(0, 3), (3, 13), (13, 21)])  # the, " riverbank", " flooded" (space inside)
    ia, ib = align(wordpiece, bpe)
    assert (ia, ib) == ([0, 3], [0, 2])  # "riverbank" is split differently: dropped on both sides


def test_cka_command_on_minilm_with_itself(minilm, tmp_path, capsys) -> None:
    texts = [
        f"The {w} near the old mill was {a} this morning."
        for w in ("river", "bank", "road", "field", "house")
        for a in ("quiet", "busy", "flooded", "closed", "empty")
    ]
    path = tmp_path / "s.txt"
    path.write_text("\n".join(texts), encoding="utf-8")
    plot = tmp_path / "cka.png"
    with pytest.raises(SystemExit) as exit_info:
        main(["cka", "--model", "minilm", "--sentences", str(path), "--json", "--plot", str(plot)])
    assert exit_info.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert_plain_json(doc)
    m = np.array(doc["matrix"])
    assert m.shape == (minilm.num_layers + 1, minilm.num_layers + 1)
    assert np.allclose(np.diag(m), 1.0)
    assert np.allclose(m, m.T)
    assert (m[0, 1:] < 1.0).all() and m[0, -1] < m[0, 1]  # farther layers are less alike
    assert doc["aligned_texts"] == 25 and doc["skipped_texts"] == 0
    assert plot.stat().st_size > 10_000


def test_cka_across_two_models_of_different_widths(minilm, mpnet) -> None:
    from contextlens.data.text_sets import corpus_texts

    result = compare_layers(minilm, mpnet, texts=corpus_texts("builtin", 30))
    assert (minilm.hidden_size, mpnet.hidden_size) == (384, 768)
    assert result.matrix.shape == (minilm.num_layers + 1, mpnet.num_layers + 1)
    assert result.tokens > 200 and result.aligned_texts + result.skipped_texts == 30
    assert np.isfinite(result.matrix).all() and (result.matrix > 0).all() and (result.matrix <= 1 + 1e-9).all()


def test_too_few_sentences_is_one_line_saying_how_many(tmp_path, capsys) -> None:
    path = tmp_path / "few.txt"
    path.write_text("One sentence.\nTwo sentences.\nThree.\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["cka", "--model", "minilm", "--sentences", str(path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"at least {MIN_TEXTS} sentences" in err and "got 3" in err


def test_the_gram_way_and_the_direct_way_agree() -> None:
    """Fewer rows than columns takes the Gram way (one n x n matrix per representation); the
    numbers are the direct way's (one d x d product per pair) to float rounding."""
    from contextlens.analyses.representations import cka

    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((50, 120)) for _ in range(4)]
    ys = [rng.standard_normal((50, 90)) @ rng.standard_normal((90, 90)) for _ in range(3)]
    gram = cka.cka_matrix(xs, ys)
    limit, cka.GRAM_BYTES = cka.GRAM_BYTES, 0  # no room for Grams: the direct way
    try:
        direct = cka.cka_matrix(xs, ys)
    finally:
        cka.GRAM_BYTES = limit
    assert np.allclose(gram, direct, rtol=0, atol=1e-12)
    assert np.allclose(cka.cka_matrix(xs, xs), cka.cka_matrix(xs, list(xs)), rtol=0, atol=1e-12)
