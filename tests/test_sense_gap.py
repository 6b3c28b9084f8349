"""The same-sense vs cross-sense gap has one definition: every former call site gives its number."""

from __future__ import annotations

import numpy as np
import pytest

from contextlens.analyses.lesson.divergence import Comparison, same_and_cross_by_layer, same_minus_cross
from contextlens.analyses.lesson.polysemy import permutation_test, separation_gap
from contextlens.analyses.lesson.sense_gap import BOTH_KINDS, layer_gaps, same_and_cross
from contextlens.errors import InputError

LABELS = ["money", "river", "money", "river", "money", "slope", "river", "slope", "money", "river", "slope", "money"]


def _matrices(layers: int = 4, n: int = len(LABELS)) -> np.ndarray:
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, size=(layers, n, n))
    m = (a + a.transpose(0, 2, 1)) / 2
    for k in range(layers):
        np.fill_diagonal(m[k], 1.0)
    return m


def _loop_reference(matrix: np.ndarray, labels: list[str]) -> tuple[float, float]:
    """The loop compare used before the one definition: the numbers must not move."""
    same, cross = [], []
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            (same if labels[i] == labels[j] else cross).append(matrix[i, j])
    return float(np.mean(same)), float(np.mean(cross))


def test_the_former_call_sites_give_the_same_numbers_on_one_matrix():
    (m,) = matrices = _matrices(1)
    comparison = object.__new__(Comparison)  # compare's by-sense table reads only these two fields
    object.__setattr__(comparison, "layers", [0])
    object.__setattr__(comparison, "matrices", matrices)

    same, cross = same_minus_cross(m, LABELS)  # compare (tests, the API)
    assert (same, cross) == _loop_reference(m, LABELS)  # bit for bit, as before the one definition
    ((_, table_same, table_cross, table_gap),) = same_and_cross_by_layer(comparison, LABELS)  # the demo's table
    explorer_same, explorer_cross = same_and_cross(matrices, LABELS)  # the explorer's same/cross columns
    observed, _ = permutation_test(matrices, LABELS, permutations=10)  # the explorer's gap
    assert (same, cross) == (table_same, table_cross) == (explorer_same[0], explorer_cross[0])
    assert separation_gap(m, LABELS) == observed[0] == layer_gaps(matrices, LABELS)[0]  # the permutation test's
    assert table_gap == same - cross == pytest.approx(observed[0], rel=0, abs=1e-12)  # its statistic, unshuffled


def test_a_stack_of_layers_gives_each_layer_its_own_numbers():
    matrices = _matrices(5)
    same, cross = same_and_cross(matrices, LABELS)  # the explorer's columns
    for k, m in enumerate(matrices):  # numpy sums a stack in another order: equal to the last bits
        np.testing.assert_allclose((same[k], cross[k]), same_minus_cross(m, LABELS), rtol=0, atol=1e-15)
    np.testing.assert_allclose(layer_gaps(matrices, LABELS), same - cross, rtol=0, atol=1e-12)


def test_a_labelling_without_both_kinds_of_pairs_is_one_line_everywhere():
    m = _matrices(1, 3)
    for call in (
        lambda: same_minus_cross(m[0], ["a", "b", "c"]),
        lambda: separation_gap(m[0], ["a", "a", "a"]),
        lambda: same_and_cross(m, ["a", "b", "c"]),
    ):
        with pytest.raises(InputError, match=f"^{BOTH_KINDS}$"):
            call()
    with pytest.raises(InputError, match=r"^2 labels for a 3x3 matrix$"):
        same_minus_cross(m[0], ["a", "b"])
