"""One FAISS index configuration, and the one builder, shared by `index build` and `capacity`.

An :class:`IndexConfig` names an index type, the dtype its vectors are stored in and the type's
parameters. :meth:`IndexConfig.resolved` fills in the defaults for ``count`` vectors of ``dim``
dimensions and checks that they can work, with a message that names the option to change;
:func:`new_faiss_index` makes the (empty, untrained) FAISS index and :func:`build_faiss_index`
trains and fills it. `capacity --measure` measures exactly the index that `index build` writes.

Vectors are L2-normalized before they enter the index, so inner product is cosine similarity;
``binary`` keeps one sign bit per dimension and scores by Hamming distance, reported as
``1 - 2 * hamming / dim`` (the cosine of the two sign vectors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from contextlens.core.arguments import whole_number
from contextlens.core.similarity import normalize_rows
from contextlens.errors import InputError, ParameterError

INDEX_TYPES: tuple[str, ...] = ("flat", "hnsw", "ivfpq", "sq8", "binary")
DTYPES: tuple[str, ...] = ("float32", "float16", "int8", "binary")
# Exact bytes per stored value (Fractions, so that byte counts of huge indexes keep every digit).
BYTES_PER_VALUE: dict[str, Fraction] = {
    "float32": Fraction(4),
    "float16": Fraction(2),
    "int8": Fraction(1),
    "binary": Fraction(1, 8),
}

# Which dtypes each index type can hold; the first one is its default.
ALLOWED_DTYPES: dict[str, tuple[str, ...]] = {
    "flat": ("float32", "float16", "int8", "binary"),
    "hnsw": ("float32", "float16", "int8", "binary"),
    "sq8": ("int8",),
    "binary": ("binary",),
    "ivfpq": ("float32",),
}

# The range of each parameter on its own (minimum, maximum or None); what also depends on the
# data (nlist <= n, pq_m divides d, 2**nbits <= n) is checked in IndexConfig.resolved.
PARAM_RANGES: dict[str, tuple[int, int | None]] = {
    "m": (2, None),
    "ef_construction": (1, None),
    "ef_search": (1, None),
    "nlist": (1, None),
    "pq_m": (1, None),
    "nbits": (1, 16),
    "nprobe": (1, None),
}

# Parameters each index type takes, with their defaults (None = chosen from the data).
DEFAULT_PARAMS: dict[str, dict[str, int | None]] = {
    "flat": {},
    "hnsw": {"m": 32, "ef_construction": 80, "ef_search": 64},
    "ivfpq": {"nlist": None, "pq_m": None, "nbits": 8, "nprobe": 16},
    "sq8": {},
    "binary": {},
}


@dataclass(frozen=True)
class IndexConfig:
    """An index type, the dtype of its stored vectors (None = the type's own) and its parameters."""

    type: str = "flat"
    params: dict[str, int | None] = field(default_factory=dict)
    dtype: str | None = None

    def __post_init__(self) -> None:
        if self.type not in INDEX_TYPES:
            raise InputError(f"unknown `index` {self.type!r}; use one of {', '.join(INDEX_TYPES)}")
        unknown = set(self.params) - set(DEFAULT_PARAMS[self.type])
        if unknown:
            allowed = ", ".join(DEFAULT_PARAMS[self.type]) or "none"
            raise InputError(f"index {self.type!r} takes no {sorted(unknown)} parameter; it takes: {allowed}")
        for name, value in self.params.items():
            if value is not None:  # refused here, before any model loads or vectors are encoded
                low, high = PARAM_RANGES[name]
                whole_number(value, name, minimum=low, maximum=high)
        if self.dtype is not None:
            allowed_dtypes = ALLOWED_DTYPES[self.type]
            if self.dtype not in DTYPES:
                raise InputError(f"unknown `dtype` {self.dtype!r}; use one of {', '.join(DTYPES)}")
            if self.dtype not in allowed_dtypes:
                raise InputError(
                    f"index {self.type!r} stores {' or '.join(allowed_dtypes)} codes, not {self.dtype}; "
                    f"drop `dtype` or pick another `index`"
                )

    def resolved(self, count: int, dim: int) -> IndexConfig:
        """Defaults filled in for ``count`` vectors of ``dim`` dimensions, and checked to work."""
        whole_number(count, "count", minimum=1)
        whole_number(dim, "dim", minimum=1)
        dtype = self.dtype or ALLOWED_DTYPES[self.type][0]
        params = {**DEFAULT_PARAMS[self.type], **{k: v for k, v in self.params.items() if v is not None}}
        if dtype == "binary" and dim % 8:
            raise InputError(f"binary codes need a dimension divisible by 8, got {dim}")
        if self.type == "ivfpq":
            if params["nlist"] is None:  # ~4*sqrt(n), with at least 39 training points per list
                params["nlist"] = max(1, min(math.isqrt(16 * count), count // 39 or 1))
            if params["pq_m"] is None:
                params["pq_m"] = next(m for m in (dim // 8, dim // 4, dim // 2, dim) if m and dim % m == 0)
            nlist, pq_m, nbits = params["nlist"], params["pq_m"], params["nbits"]
            if nlist > count:
                raise ParameterError("nlist", f"must be between 1 and the number of vectors ({count}), got {nlist}")
            if dim % pq_m:
                raise ParameterError("pq_m", f"must divide the dimension {dim}, got {pq_m}")
            if count < 2**nbits:
                raise InputError(
                    f"ivfpq with `nbits` {nbits} trains {2**nbits} centroids per sub-vector and needs at least "
                    f"{2**nbits} vectors, but there are {count}; lower `nbits` or use `index` flat"
                )
            params["nprobe"] = min(params["nprobe"], nlist)  # more lists than there are: all of them
        return IndexConfig(self.type, params, dtype)

    @property
    def code(self) -> str:
        """How one vector is stored (the manifest's ``dtype``): the dtype, or ``pq<m>x<bits>``."""
        if self.type == "ivfpq":
            return f"pq{self.params.get('pq_m')}x{self.params.get('nbits')}"
        return self.dtype or ALLOWED_DTYPES[self.type][0]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "params": dict(self.params)}


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float32 and contiguous for FAISS."""
    return np.ascontiguousarray(normalize_rows(vectors, dtype=np.float32), dtype=np.float32)


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """One bit per dimension (1 where the value is positive), packed 8 to a byte."""
    return np.packbits(np.asarray(vectors) > 0, axis=1)


def new_faiss_index(config: IndexConfig, dim: int):
    """The empty, untrained FAISS index for a resolved ``config`` over ``dim`` dimensions."""
    import faiss  # here, not at the top: a usage error must not wait for faiss (50 ms)

    p, ip = config.params, faiss.METRIC_INNER_PRODUCT
    if config.dtype == "binary":
        return faiss.IndexBinaryHNSW(dim, p["m"]) if config.type == "hnsw" else faiss.IndexBinaryFlat(dim)
    sq = {"float16": faiss.ScalarQuantizer.QT_fp16, "int8": faiss.ScalarQuantizer.QT_8bit}
    if config.type == "ivfpq":
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFPQ(quantizer, dim, p["nlist"], p["pq_m"], p["nbits"], ip)
        index.own_fields = True
        quantizer.this.disown()
        # FAISS prints a warning per sub-quantizer when there are fewer than 39 points per centroid;
        # the quality cost of a small training set shows in the recall, so keep stderr to one line.
        index.cp.min_points_per_centroid = 1
        index.pq.cp.min_points_per_centroid = 1
        return index
    if config.type == "hnsw":
        index = (
            faiss.IndexHNSWFlat(dim, p["m"], ip)
            if config.dtype == "float32"
            else (faiss.IndexHNSWSQ(dim, sq[config.dtype], p["m"], ip))
        )
        index.hnsw.efConstruction = p["ef_construction"]
        return index
    if config.dtype == "float32":
        return faiss.IndexFlatIP(dim)
    return faiss.IndexScalarQuantizer(dim, sq[config.dtype], ip)


def build_faiss_index(vectors: np.ndarray, config: IndexConfig):
    """A trained FAISS index holding ``vectors`` (normalized here), per ``config`` (resolved here)."""
    x = normalize(vectors)
    n, d = x.shape
    config = config.resolved(n, d)
    index = new_faiss_index(config, d)
    if config.dtype == "binary":
        index.add(sign_bits(x))
    else:
        if not index.is_trained:
            index.train(x)
        index.add(x)
    apply_search_params(index, config)
    return index


def apply_search_params(index, config: IndexConfig) -> None:
    """Set the query-time knobs (HNSW efSearch, IVF nprobe) on a built or loaded index."""
    if config.type == "hnsw" and config.dtype != "binary":
        index.hnsw.efSearch = config.params["ef_search"]
    elif config.type == "ivfpq":
        index.nprobe = config.params["nprobe"]


def search_faiss(index, config: IndexConfig, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, ids)`` of the ``k`` best matches per query; scores are cosines (higher is better)."""
    q = normalize(queries)
    k = min(k, index.ntotal)
    if config.type == "binary" or config.dtype == "binary":
        dist, ids = index.search(sign_bits(q), k)
        return 1.0 - 2.0 * dist.astype(np.float32) / q.shape[1], ids
    return index.search(q, k)


def serialized_bytes(index) -> bytes:
    """The FAISS index as the bytes that are saved (binary and float indexes alike)."""
    import faiss

    if isinstance(index, faiss.IndexBinary):
        return faiss.serialize_index_binary(index).tobytes()
    return faiss.serialize_index(index).tobytes()


def deserialize(blob: bytes, config: IndexConfig):
    import faiss

    array = np.frombuffer(blob, dtype=np.uint8)
    if config.type == "binary" or config.dtype == "binary":
        return faiss.deserialize_index_binary(array)
    return faiss.deserialize_index(array)
