"""Cosine similarity that checks provenance first.

Hidden states of two different models live in unrelated spaces, and an input row is not a hidden
state; comparing them gives a number that means nothing. :func:`cosine` raises
:class:`~contextlens.errors.ProvenanceMismatchError` instead. Identical vectors score exactly 1.0
(the static baseline of the lesson), not 0.9999999.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from contextlens.core.vectors import Vector
from contextlens.errors import InputError, ProvenanceMismatchError


def check_comparable(a: Vector, b: Vector, names: tuple[str, str] = ("a", "b")) -> None:
    """Raise unless ``a`` and ``b`` come from the same model and are the same kind of vector
    (``names``: the parameters they were given as, for the message)."""
    for name, v in zip(names, (a, b), strict=True):
        if not isinstance(v, Vector):
            raise InputError(
                f"{name}: expected a Vector (values with provenance), got {type(v).__name__}; "
                "compare raw arrays with cosine_values"
            )
    pa, pb = a.provenance, b.provenance
    if pa.model != pb.model:
        raise ProvenanceMismatchError(
            f"cannot compare {pa.describe()} with {pb.describe()}: different models embed into "
            "unrelated spaces; compare within one model, or use a representational measure "
            "such as CKA across models"
        )
    if pa.kind != pb.kind:
        raise ProvenanceMismatchError(
            f"cannot compare {pa.describe()} with {pb.describe()}: they are different kinds of "
            "embedding; compare input rows with input rows and hidden states with hidden states"
        )
    if a.dim != b.dim:
        raise ProvenanceMismatchError(f"dimension mismatch: {a.dim} vs {b.dim}")


def cosine(a: Vector, b: Vector) -> float:
    """Cosine of two comparable vectors, in float64; exactly 1.0 for identical vectors."""
    check_comparable(a, b)
    check_finite(a, b)
    return cosine_values(a.values, b.values)


def check_finite(*vectors: Vector) -> None:
    """Refuse a vector holding NaN or infinity: its cosine would be nan, not a number to read."""
    for v in vectors:
        if not np.isfinite(v.values).all():
            raise InputError(f"cosine is undefined: the {v.provenance.describe()} vector holds NaN or infinity")


def cosine_values(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two raw arrays (no provenance check): exactly 1.0 when they are equal."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise InputError(f"shape mismatch: {a.shape} vs {b.shape}")
    if np.array_equal(a, b) and np.any(a):
        return 1.0
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    denom = np.linalg.norm(a64) * np.linalg.norm(b64)
    if denom == 0.0:
        raise InputError("cosine is undefined for a zero vector")
    return float(np.clip(a64 @ b64 / denom, -1.0, 1.0))


def cosine_matrix(vectors: Sequence[Vector]) -> np.ndarray:
    """Pairwise cosine matrix of comparable vectors: symmetric, diagonal exactly 1.0."""
    if isinstance(vectors, Vector | str) or not isinstance(vectors, Iterable):
        raise InputError(f"vectors must be a non-empty list of Vectors, got {type(vectors).__name__}")
    vectors = list(vectors)
    if not vectors:
        raise InputError("vectors must be a non-empty list of Vectors, got an empty one")
    for i, v in enumerate(vectors):
        check_comparable(vectors[0], v, ("vectors[0]", f"vectors[{i}]"))
    check_finite(*vectors)
    return cosine_matrix_values(np.stack([v.values for v in vectors]))


def cosine_matrix_values(rows: np.ndarray) -> np.ndarray:
    """Pairwise cosine of the rows of a 2-D array: symmetric, unit diagonal, rows equal -> 1.0."""
    x = rows.astype(np.float64)
    norms = np.linalg.norm(x, axis=1)
    if np.any(norms == 0):
        raise InputError("cosine is undefined for a zero vector")
    x = x / norms[:, None]
    m = np.clip(x @ x.T, -1.0, 1.0)
    m = (m + m.T) / 2.0
    n = len(rows)
    for i in range(n):
        for j in range(i, n):
            if i == j or np.array_equal(rows[i], rows[j]):
                m[i, j] = m[j, i] = 1.0
    return m


def normalize_rows(x: np.ndarray, dtype: type | None = None) -> np.ndarray:
    """Rows (the last axis) scaled to unit length; zero rows stay zero. Cast to ``dtype`` first
    when given; otherwise a float array keeps its dtype."""
    x = np.asarray(x, dtype=dtype)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``a`` with the same row of ``b`` (no provenance check); 0 for a zero row."""
    if a.shape != b.shape:
        raise InputError(f"shape mismatch: {a.shape} vs {b.shape}")
    num = np.einsum("ij,ij->i", a, b)
    return num / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
