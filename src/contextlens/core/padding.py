"""Right-padding of token id sequences into one batch: numpy only, shared by every runtime."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np


def pad_arrays(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, attention mask)`` as int64 arrays, right-padded with ``pad_id`` (one vectorized
    fill, no array per row)."""
    lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
    mask = np.arange(int(lengths.max())) < lengths[:, None]
    ids = np.full(mask.shape, pad_id, dtype=np.int64)
    ids[mask] = np.fromiter(chain.from_iterable(sequences), dtype=np.int64, count=int(lengths.sum()))
    return ids, mask.astype(np.int64)
