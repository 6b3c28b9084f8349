"""Same-sense vs cross-sense cosine of a word's sentences, in one place.

Over the distinct pairs (i < j) of a pairwise cosine matrix, split by whether the two sentences
carry the same sense label. Compare's by-sense table, the polysemy explorer, its permutation test
and the figures all read these functions, so "same", "cross" and "gap" have one definition each
(the permutation test's gap is vectorised over shuffled labellings: same - cross up to rounding).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contextlens.errors import InputError

BOTH_KINDS = "a sense gap needs at least one same-sense pair and one cross-sense pair"


def sense_codes(labels: Sequence[object]) -> np.ndarray:
    """Labels as small integers in first-seen order: equal labels (as text), equal codes."""
    index: dict[str, int] = {}
    return np.asarray([index.setdefault(str(label), len(index)) for label in labels], dtype=np.int64)


def _values(matrices: np.ndarray, n: int) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """The distinct-pair cosines of every layer, (layers, pairs), and the pairs' indices."""
    if matrices.ndim != 3 or matrices.shape[1:] != (n, n):
        rows, cols = matrices.shape[-2:]
        raise InputError(f"{n} labels for a {rows}x{cols} matrix")
    iu = np.triu_indices(n, k=1)
    return matrices[:, iu[0], iu[1]], iu


def same_and_cross(matrices: np.ndarray, labels: Sequence[object]) -> tuple[np.ndarray, np.ndarray]:
    """Per layer of ``matrices`` (layers, n, n): the mean cosine over same-label pairs and over
    cross-label pairs."""
    codes = sense_codes(labels)
    values, iu = _values(matrices, len(codes))
    same = codes[iu[0]] == codes[iu[1]]
    if not same.any() or same.all():
        raise InputError(BOTH_KINDS)
    # numpy sums one layer and a stack of layers in a different order (last-bit differences): kept
    # as it was, so every number each caller printed before is printed again bit for bit
    return values[:, same].mean(axis=1), values[:, ~same].mean(axis=1)


def gaps(matrices: np.ndarray, labellings: np.ndarray) -> np.ndarray:
    """Same minus cross for each layer and each labelling (rows of ``labellings``, as sense codes):
    (layers, labellings). Vectorised over labellings, so a permutation test shuffles cheaply; equal
    to the difference of :func:`same_and_cross` up to rounding."""
    values, iu = _values(matrices, labellings.shape[1])
    same = (labellings[:, iu[0]] == labellings[:, iu[1]]).astype(np.float64)  # (labellings, pairs)
    n_same = same.sum(axis=1)
    n_cross = same.shape[1] - n_same
    if np.any(n_same == 0) or np.any(n_cross == 0):
        raise InputError(BOTH_KINDS)
    return values @ same.T / n_same - values @ (1.0 - same).T / n_cross


def layer_gaps(matrices: np.ndarray, labels: Sequence[object]) -> np.ndarray:
    """The gap of each layer for one labelling."""
    return gaps(matrices, sense_codes(labels)[None])[:, 0]
