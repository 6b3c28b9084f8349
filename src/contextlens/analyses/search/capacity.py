"""What N vectors of D dimensions cost in a FAISS index: formulas, and real measurements.

The formulas follow how FAISS stores each index (the same arrays live in memory and in the
serialized file, so one number serves both, up to allocator slack and a header of ~100 bytes):

* ``flat``   - the codes of every vector: n*d*4 (float32), n*d*2 (float16), n*d (int8, plus two
  float32 tables of d trained ranges), n*d/8 (binary sign bits).
* ``sq8``    - scalar quantization to one byte per dimension: n*d + 2*d*4 (per-dimension min and range).
* ``binary`` - one bit per dimension: n*d/8.
* ``hnsw``   - the stored vectors (as ``flat`` above) plus the graph: every vector has 2*M neighbor
  slots (int32) at level 0; a vector reaches level l >= 1 with probability M^-l, and there has M
  slots, so upper levels add M/(M-1) slots per vector on average; plus one int32 level and one
  int64 offset per vector: n*(2*M + M/(M-1))*4 + n*12.
* ``ivfpq``  - per vector a PQ code of ceil(pq_m*nbits/8) bytes plus its int64 id in its inverted
  list; plus the coarse centroids nlist*d*4 and the PQ codebooks (2^nbits centroids of d/pq_m
  floats for each of the pq_m sub-spaces) d*2^nbits*4.

:func:`measure` builds the real index on random unit vectors and reads the size of
``faiss.serialize_index``; above ``max_measure`` vectors it builds two samples and extrapolates
the straight line through them (and says so).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import faiss
import numpy as np

from contextlens.errors import InputError

INDEX_TYPES: tuple[str, ...] = ("flat", "hnsw", "ivfpq", "sq8", "binary")
DTYPES: tuple[str, ...] = ("float32", "float16", "int8", "binary")
BYTES_PER_VALUE = {"float32": 4.0, "float16": 2.0, "int8": 1.0, "binary": 1 / 8}

# Which dtypes each index type can hold; the first one is its default.
ALLOWED_DTYPES: dict[str, tuple[str, ...]] = {
    "flat": ("float32", "float16", "int8", "binary"),
    "hnsw": ("float32", "float16", "int8", "binary"),
    "sq8": ("int8",),
    "binary": ("binary",),
    "ivfpq": ("float32",),
}


@dataclass(frozen=True)
class CapacityRequest:
    """N vectors of D dimensions, stored as ``dtype`` in an index of type ``index``."""

    count: int
    dim: int
    index: str = "flat"
    dtype: str | None = None
    m: int = 32  # HNSW neighbors per node
    nlist: int | None = None  # IVF lists (default ~4*sqrt(n))
    pq_m: int | None = None  # PQ sub-quantizers (default d/8)
    nbits: int = 8  # bits per PQ sub-code

    def resolved(self) -> CapacityRequest:
        """Defaults filled in and every value checked, with a message saying how to fix it."""
        if self.index not in INDEX_TYPES:
            raise InputError(f"unknown --index {self.index!r}; use one of {', '.join(INDEX_TYPES)}")
        if self.count < 1:
            raise InputError(f"--count must be at least 1, got {self.count}")
        if self.dim < 1:
            raise InputError(f"--dim must be at least 1, got {self.dim}")
        allowed = ALLOWED_DTYPES[self.index]
        dtype = self.dtype or allowed[0]
        if dtype not in DTYPES:
            raise InputError(f"unknown --dtype {dtype!r}; use one of {', '.join(DTYPES)}")
        if dtype not in allowed:
            raise InputError(
                f"index {self.index!r} stores {' or '.join(allowed)} codes, not {dtype}; "
                f"drop --dtype or pick another --index"
            )
        if dtype == "binary" and self.dim % 8:
            raise InputError(f"binary codes need a dimension divisible by 8, got --dim {self.dim}")
        if self.m < 2:
            raise InputError(f"--m must be at least 2, got {self.m}")
        nlist, pq_m = self.nlist, self.pq_m
        if self.index == "ivfpq":
            nlist = nlist or max(1, min(int(4 * math.sqrt(self.count)), self.count))
            pq_m = pq_m or next(m for m in (self.dim // 8, self.dim // 4, self.dim // 2, self.dim) if m)
            if self.dim % pq_m:
                raise InputError(f"--pq-m must divide --dim {self.dim}, got {pq_m}")
            if not 1 <= self.nbits <= 16:
                raise InputError(f"--nbits must be between 1 and 16, got {self.nbits}")
            if nlist > self.count:
                raise InputError(f"--nlist ({nlist}) cannot exceed --count ({self.count})")
        return CapacityRequest(self.count, self.dim, self.index, dtype, self.m, nlist, pq_m, self.nbits)


@dataclass
class CapacityEstimate:
    """Bytes of memory (and of the saved file: the same arrays) for a :class:`CapacityRequest`."""

    count: int
    dim: int
    dtype: str
    index: str
    bytes: int
    formula: str
    parts: dict[str, int]
    params: dict[str, Any]
    measured_bytes: int | None = None
    measured_on: str | None = None  # how the measurement was made
    measure_seconds: float | None = None

    @property
    def relative_error(self) -> float | None:
        """(formula - measured) / measured, when measured."""
        if not self.measured_bytes:
            return None
        return (self.bytes - self.measured_bytes) / self.measured_bytes

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["relative_error"] = self.relative_error
        return out


def estimate(request: CapacityRequest) -> CapacityEstimate:
    """The formula for ``request``'s index type, evaluated (see the module docstring)."""
    r = request.resolved()
    n, d = r.count, r.dim
    per_value = BYTES_PER_VALUE[r.dtype]
    value_sym = {"float32": "4", "float16": "2", "int8": "1", "binary": "1/8"}[r.dtype]
    parts: dict[str, int] = {}
    terms: list[str] = []
    params: dict[str, Any] = {}
    if r.index in ("flat", "hnsw", "sq8", "binary"):
        parts["vectors"] = math.ceil(n * d * per_value)
        terms.append(f"n*d*{value_sym}")
        if r.dtype == "int8":
            parts["trained ranges"] = 2 * d * 4
            terms.append("2*d*4")
    if r.index == "hnsw":
        slots = 2 * r.m + r.m / (r.m - 1)
        parts["graph links"] = round(n * slots * 4)
        parts["levels + offsets"] = n * 12
        terms += ["n*(2*M + M/(M-1))*4", "n*12"]
        params["m"] = r.m
    if r.index == "ivfpq":
        code = math.ceil(r.pq_m * r.nbits / 8)
        parts["PQ codes + ids"] = n * (code + 8)
        parts["coarse centroids"] = r.nlist * d * 4
        parts["PQ codebooks"] = d * 2**r.nbits * 4
        terms += ["n*(ceil(pq_m*nbits/8) + 8)", "nlist*d*4", "d*2^nbits*4"]
        params.update(nlist=r.nlist, pq_m=r.pq_m, nbits=r.nbits, code_bytes=code)
    return CapacityEstimate(
        count=n,
        dim=d,
        dtype=r.dtype,
        index=r.index,
        bytes=int(sum(parts.values())),
        formula=" + ".join(terms),
        parts=parts,
        params=params,
    )


def measure(request: CapacityRequest, max_measure: int = 100_000, seed: int = 0) -> CapacityEstimate:
    """:func:`estimate`, plus the serialized size of the real FAISS index.

    Up to ``max_measure`` vectors the index is built on exactly ``count`` random unit vectors;
    above it on ``max_measure // 2`` and ``max_measure`` vectors, and the line through the two
    sizes is extended to ``count`` (the stored arrays grow linearly in n).
    """
    result = estimate(request)
    r = request.resolved()
    start = time.perf_counter()
    if r.count <= max_measure:
        result.measured_bytes = serialized_size(r, r.count, seed)
        result.measured_on = f"built on all {r.count:,} random unit vectors"
    else:
        small, large = max_measure // 2, max_measure
        b_small = serialized_size(r, small, seed)
        b_large = serialized_size(r, large, seed)
        slope = (b_large - b_small) / (large - small)
        result.measured_bytes = round(b_large + slope * (r.count - large))
        result.measured_on = (
            f"built on {small:,} and {large:,} random unit vectors ({b_small:,} and {b_large:,} bytes) "
            f"and extrapolated linearly to {r.count:,}"
        )
    result.measure_seconds = time.perf_counter() - start
    return result


def serialized_size(request: CapacityRequest, n: int, seed: int = 0) -> int:
    """Bytes of ``faiss.serialize_index`` for ``n`` random unit vectors in the requested index."""
    r = request.resolved()
    d = r.dim
    if r.index == "ivfpq" and n < 2**r.nbits:
        raise InputError(f"measuring ivfpq with --nbits {r.nbits} needs at least {2**r.nbits} vectors, got {n}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    if r.dtype == "binary":
        index = faiss.IndexBinaryHNSW(d, r.m) if r.index == "hnsw" else faiss.IndexBinaryFlat(d)
        index.add(np.packbits(x > 0, axis=1))
        return int(faiss.serialize_index_binary(index).size)
    index = make_float_index(r, min(r.nlist or 1, n))
    if not index.is_trained:
        index.train(x)
    index.add(x)
    return int(faiss.serialize_index(index).size)


def make_float_index(r: CapacityRequest, nlist: int):
    """The (untrained, empty) FAISS index for a resolved request whose codes are not binary."""
    d, ip = r.dim, faiss.METRIC_INNER_PRODUCT
    sq = {"float16": faiss.ScalarQuantizer.QT_fp16, "int8": faiss.ScalarQuantizer.QT_8bit}
    if r.index == "ivfpq":
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFPQ(quantizer, d, nlist, r.pq_m, r.nbits, ip)
        index.own_fields = True
        quantizer.this.disown()
        index.cp.min_points_per_centroid = 1
        index.pq.cp.min_points_per_centroid = 1
        return index
    if r.index == "hnsw":
        if r.dtype == "float32":
            return faiss.IndexHNSWFlat(d, r.m, ip)
        return faiss.IndexHNSWSQ(d, sq[r.dtype], r.m, ip)
    if r.dtype == "float32":
        return faiss.IndexFlatIP(d)
    return faiss.IndexScalarQuantizer(d, sq[r.dtype], ip)
