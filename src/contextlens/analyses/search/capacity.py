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

The index is configured by :class:`~contextlens.analyses.search.index_config.IndexConfig`, the
same type `index build` uses, and :func:`measure` builds it with the same builder. Byte counts
are exact integers (no float rounding, so a count of 10**23 keeps every digit).

:func:`measure` builds the real index on random unit vectors and reads the size of
``faiss.serialize_index``; above ``max_measure`` vectors it builds two samples and extrapolates
the straight line through them (and says so).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from contextlens.analyses.search.index_config import (
    ALLOWED_DTYPES,
    BYTES_PER_VALUE,
    DTYPES,
    INDEX_TYPES,
    IndexConfig,
    new_faiss_index,
    serialized_bytes,
    sign_bits,
)
from contextlens.core.arguments import whole_number
from contextlens.core.similarity import normalize_rows
from contextlens.errors import InputError, ParameterError

__all__ = ["ALLOWED_DTYPES", "DTYPES", "INDEX_TYPES", "CapacityEstimate", "estimate", "measure", "serialized_size"]


@dataclass
class CapacityEstimate:
    """Bytes of memory (and of the saved file: the same arrays) for ``count`` vectors in an index."""

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
        """Plain JSON types only (ints, floats, strings, None)."""
        out = asdict(self)
        out["relative_error"] = self.relative_error
        return out


FAISS_MAX_DIM = 2**31 - 1  # faiss::Index keeps its dimension ``d`` in a C int


def _check_count(count: int, dim: int) -> None:
    whole_number(count, "count", minimum=1)
    if whole_number(dim, "dim", minimum=1) > FAISS_MAX_DIM:
        raise ParameterError("dim", f"must be at most {FAISS_MAX_DIM:,} on FAISS (its indexes keep the dimension in "
                                    f"a C int), got {dim:,}")  # fmt: skip


def estimate(config: IndexConfig, count: int, dim: int) -> CapacityEstimate:
    """The formula for ``config``'s index type over ``count`` x ``dim``, evaluated exactly."""
    if not isinstance(config, IndexConfig):
        raise InputError(f"`config` must be an IndexConfig (e.g. IndexConfig('hnsw')), got {type(config).__name__}")
    _check_count(count, dim)
    n, d = int(count), int(dim)
    r = config.resolved(n, d)
    p = r.params
    per_value = BYTES_PER_VALUE[r.dtype]
    value_sym = {"float32": "4", "float16": "2", "int8": "1", "binary": "1/8"}[r.dtype]
    parts: dict[str, int] = {}
    terms: list[str] = []
    params: dict[str, Any] = {}
    if r.type in ("flat", "hnsw", "sq8", "binary"):
        parts["vectors"] = math.ceil(n * d * per_value)
        terms.append(f"n*d*{value_sym}")
        if r.dtype == "int8":
            parts["trained ranges"] = 2 * d * 4
            terms.append("2*d*4")
    if r.type == "hnsw":
        m = p["m"]
        slots = 2 * m + Fraction(m, m - 1)
        parts["graph links"] = round(n * slots * 4)
        parts["levels + offsets"] = n * 12
        terms += ["n*(2*M + M/(M-1))*4", "n*12"]
        params["m"] = m
    if r.type == "ivfpq":
        code = math.ceil(p["pq_m"] * p["nbits"] / 8)
        parts["PQ codes + ids"] = n * (code + 8)
        parts["coarse centroids"] = p["nlist"] * d * 4
        parts["PQ codebooks"] = d * 2 ** p["nbits"] * 4
        terms += ["n*(ceil(pq_m*nbits/8) + 8)", "nlist*d*4", "d*2^nbits*4"]
        params.update(nlist=p["nlist"], pq_m=p["pq_m"], nbits=p["nbits"], code_bytes=code)
    return CapacityEstimate(
        count=n,
        dim=d,
        dtype=r.dtype,
        index=r.type,
        bytes=int(sum(parts.values())),
        formula=" + ".join(terms),
        parts=parts,
        params=params,
    )


def measure(config: IndexConfig, count: int, dim: int, max_measure: int = 100_000, seed: int = 0) -> CapacityEstimate:
    """:func:`estimate`, plus the serialized size of the real FAISS index.

    Up to ``max_measure`` vectors the index is built on exactly ``count`` random unit vectors;
    above it on ``max_measure // 2`` and ``max_measure`` vectors, and the line through the two
    sizes is extended to ``count`` (the stored arrays grow linearly in n). A measurement that
    would not fit in the available memory is refused before anything is allocated.
    """
    whole_number(max_measure, "max_measure", minimum=2)
    result = estimate(config, count, dim)
    n, d = result.count, result.dim
    largest = min(n, max_measure)
    check_fits_in_memory(result, largest)
    start = time.perf_counter()
    if n <= max_measure:
        result.measured_bytes = serialized_size(config, n, d, seed, count=n)
        result.measured_on = f"built on all {n:,} random unit vectors"
    else:
        small, large = max_measure // 2, max_measure
        b_small = serialized_size(config, small, d, seed, count=n)
        b_large = serialized_size(config, large, d, seed, count=n)
        slope = Fraction(b_large - b_small, large - small)
        result.measured_bytes = round(b_large + slope * (n - large))
        result.measured_on = (
            f"built on {small:,} and {large:,} random unit vectors ({b_small:,} and {b_large:,} bytes) "
            f"and extrapolated linearly to {n:,}"
        )
    result.measure_seconds = time.perf_counter() - start
    return result


def check_fits_in_memory(full: CapacityEstimate, n: int) -> None:
    """Refuse a measurement on ``n`` vectors that needs more bytes than this machine has available.

    It needs the float32 vectors, plus the index twice (the index and its serialized copy).
    """
    needed = n * full.dim * 4 + 2 * math.ceil(Fraction(full.bytes * n, full.count))
    available = available_memory()
    if available is not None and needed > available:
        raise InputError(
            f"measuring {n:,} vectors of {full.dim:,} dims needs about {needed:,} bytes of memory but only "
            f"{available:,} bytes are available; lower `dim` or `max_measure`, or drop `measure` for the formula"
        )


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux: MemAvailable), None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _sample_config(config: IndexConfig, n: int, dim: int) -> IndexConfig:
    """The configuration resolved for the full request, its lists capped at the sample size ``n``."""
    params = dict(config.params)
    if config.type == "ivfpq" and params.get("nlist") is not None:
        params["nlist"] = min(params["nlist"], n)
    return IndexConfig(config.type, params, config.dtype)


def serialized_size(config: IndexConfig, n: int, dim: int, seed: int = 0, count: int | None = None) -> int:
    """Bytes of the serialized FAISS index for ``n`` random unit vectors in the configured index.

    ``count`` (default ``n``) is the size the configuration is resolved for (its IVF lists), so
    that samples of an extrapolated measurement use the lists of the full request.
    """
    resolved = config.resolved(count or n, dim)
    if resolved.type == "ivfpq" and n < 2 ** resolved.params["nbits"]:
        nbits = resolved.params["nbits"]
        raise InputError(f"measuring ivfpq with `nbits` {nbits} needs at least {2**nbits} vectors, got {n}")
    sample = _sample_config(resolved, n, dim)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim), dtype=np.float32)
    x = normalize_rows(x)
    index = new_faiss_index(sample, dim)
    if sample.type == "ivfpq":
        # one k-means pass, not FAISS's 10 for the lists and 25 per PQ sub-quantizer (test_capacity's
        # 12,000 x 128 case: 5.5 -> 0.4 CPU s): the centroids take the same bytes whatever their quality
        # (test_capacity.py::test_one_training_pass_gives_the_bytes_of_a_full_training)
        index.cp.niter = index.pq.cp.niter = 1
    if sample.dtype == "binary":
        index.add(sign_bits(x))
    else:
        if not index.is_trained:
            index.train(x)
        index.add(x)
    return len(serialized_bytes(index))
