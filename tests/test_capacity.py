"""Capacity formulas against the bytes FAISS really serializes, for every index type and dtype."""

from __future__ import annotations

import json

import pytest

from contextlens.analyses.search.capacity import (
    ALLOWED_DTYPES,
    INDEX_TYPES,
    estimate,
    measure,
    serialized_size,
)
from contextlens.analyses.search.index_config import DEFAULT_PARAMS, IndexConfig
from contextlens.errors import InputError
from helpers import run_cli


def config(index: str = "flat", dtype: str | None = None, **params: int) -> IndexConfig:
    """The index configuration `capacity` builds from its options (params the type does not take dropped)."""
    return IndexConfig(index, {k: v for k, v in params.items() if k in DEFAULT_PARAMS.get(index, {})}, dtype)


CASES = [(index, dtype) for index in INDEX_TYPES for dtype in ALLOWED_DTYPES[index]]


@pytest.mark.parametrize(("index", "dtype"), CASES)
@pytest.mark.parametrize(("count", "dim"), [(3000, 64), (12000, 128)])
def test_formula_within_10_percent_of_measured(index, dtype, count, dim):
    result = measure(config(index, dtype, m=16), count, dim)
    assert result.measured_bytes is not None and result.measured_bytes > 0
    assert abs(result.relative_error) < 0.10, (index, dtype, result.bytes, result.measured_bytes)


def test_extrapolated_measurement_matches_a_real_build():
    request = config("hnsw", "float32", m=16)
    extrapolated = measure(request, 16000, 64, max_measure=8000)
    assert "extrapolated" in extrapolated.measured_on
    real = serialized_size(request, 16000, 64)
    assert abs(extrapolated.measured_bytes - real) / real < 0.01


def test_one_training_pass_gives_the_bytes_of_a_full_training():
    """A measurement trains IVFPQ with one k-means pass: the bytes are those of FAISS's full training."""
    import numpy as np

    from contextlens.analyses.search.capacity import serialized_bytes
    from contextlens.analyses.search.index_config import build_faiss_index
    from contextlens.core.similarity import normalize_rows

    for count, dim, nbits in ((1000, 32, 8), (600, 32, 4)):
        request = config("ivfpq", "float32", nbits=nbits)
        x = normalize_rows(np.random.default_rng(0).standard_normal((count, dim), dtype=np.float32))
        full = build_faiss_index(x, request)
        assert full.cp.niter == 10 and full.pq.cp.niter == 25  # FAISS's own training
        assert serialized_size(request, count, dim) == len(serialized_bytes(full))


def test_formulas_scale_as_documented():
    flat = estimate(config(), 1_000_000, 384)
    assert flat.bytes == 1_000_000 * 384 * 4 and flat.formula == "n*d*4"
    binary = estimate(config("binary"), 1_000_000, 384)
    assert binary.bytes == 1_000_000 * 384 // 8 and binary.dtype == "binary"
    sq8 = estimate(config("sq8"), 1_000_000, 384)
    assert sq8.bytes == 1_000_000 * 384 + 2 * 384 * 4
    hnsw16, hnsw32 = (estimate(config("hnsw", m=m), 10**6, 384).bytes for m in (16, 32))
    assert hnsw32 - hnsw16 == pytest.approx(10**6 * (64 + 32 / 31 - 32 - 16 / 15) * 4, rel=1e-6)
    ivfpq = estimate(config("ivfpq", nlist=4096, pq_m=48, nbits=8), 10**6, 384)
    assert ivfpq.parts["PQ codes + ids"] == 10**6 * (48 + 8)
    assert ivfpq.bytes == 10**6 * 56 + 4096 * 384 * 4 + 384 * 256 * 4


def test_impossible_requests_are_clear_errors():
    with pytest.raises(InputError, match="stores int8"):
        estimate(config("sq8", "float32"), 100, 64)
    with pytest.raises(InputError, match="divisible by 8"):
        estimate(config("binary"), 100, 100)
    with pytest.raises(InputError, match="must divide"):
        estimate(config("ivfpq", pq_m=7), 100, 100)
    with pytest.raises(InputError, match="unknown `index`"):
        estimate(config("lsh"), 100, 64)


def test_cli_capacity_json_and_errors():
    proc = run_cli("capacity", "--count", "5000", "--dim", "64", "--index", "hnsw", "--m", "16", "--measure", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {"count", "dim", "dtype", "index", "bytes", "formula", "measured_bytes"} <= set(out)
    assert out["count"] == 5000 and out["index"] == "hnsw" and out["dtype"] == "float32"
    assert abs(out["bytes"] - out["measured_bytes"]) / out["measured_bytes"] < 0.10
    plain = run_cli("capacity", "--count", "1000000", "--dim", "768", "--dtype", "float16")
    assert plain.returncode == 0 and "1,536,000,000" in plain.stdout and "n*d*2" in plain.stdout
    assert json.loads(run_cli("capacity", "-n", "10", "-d", "8", "--json").stdout)["measured_bytes"] is None
    bad = run_cli("capacity", "--count", "100", "--dim", "64", "--index", "binary", "--dtype", "float32")
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and len(bad.stderr.strip().splitlines()) == 1


def test_huge_counts_keep_every_digit():
    n = 10**23
    assert estimate(config(), n, 8).bytes == n * 8 * 4
    assert estimate(config("binary"), n, 8).bytes == n
    hnsw = estimate(config("hnsw", m=16), n, 64)
    assert hnsw.parts["graph links"] == (n * (2 * 16 * 15 + 16) * 4 + 7) // 15  # n*(2M + M/(M-1))*4, rounded
    proc = run_cli("capacity", "--count", str(n), "--dim", "8")
    assert proc.returncode == 0 and "3,200,000,000,000,000,000,000,000" in proc.stdout, proc.stderr


def test_a_measurement_that_cannot_fit_in_memory_is_refused_before_allocating():
    with pytest.raises(InputError, match=r"needs about [\d,]+ bytes of memory but only [\d,]+ bytes"):
        measure(config(), 1000, 10**9)
    proc = run_cli("capacity", "--count", "1000", "--dim", str(10**9), "--measure")
    assert proc.returncode == 2 and "bytes of memory" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_capacity_to_dict_is_plain_json():
    from helpers import assert_plain_json

    assert_plain_json(measure(config("ivfpq", nbits=4), 600, 32).to_dict())
    assert_plain_json(estimate(config("hnsw", "int8", m=8), 10**23, 64).to_dict())
