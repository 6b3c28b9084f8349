"""Issue 35's capacity items: every number range-checked against what the engine itself allows, the
limit named in the message; page counts exact whole numbers. One ``error:`` line and exit code 2
from the CLI, a ParameterError from the API; never a traceback, never a silently wrong number.
None of these needs a database: every refusal comes before the server would start."""

from __future__ import annotations

import math

import pytest

from contextlens.analyses.search.capacity import FAISS_MAX_DIM, estimate, measure
from contextlens.analyses.search.index_config import IndexConfig
from contextlens.analyses.search.pg_capacity import (
    MAX_BLOCKS,
    MAX_ROWS,
    MAX_TABLE_DIM,
    PAGE,
    pg_estimate,
    pg_measure,
)
from contextlens.analyses.search.pg_index import PgIndexConfig
from contextlens.analyses.search.platforms import azure, opensearch, vertex
from contextlens.errors import ParameterError
from tests.helpers import run_cli

NAN, INF = float("nan"), float("inf")


def one_line(*args: str) -> str:
    """`contextlens ARGS` refused: exit code 2, one ``error:`` line, no traceback; the line."""
    done = run_cli(*args)
    assert done.returncode == 2, (args, done.returncode, done.stdout[-500:], done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    return lines[0]


# --- 1. pgvector's dimensions: the table's own type, estimate and measure alike ----------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "binary"])
@pytest.mark.parametrize("index", ["flat", "hnsw", "ivfflat"])
def test_pgvector_refuses_more_dimensions_than_its_types_hold(dtype, index):
    for call in (pg_estimate, pg_measure):  # measure: before any server or vector
        with pytest.raises(ParameterError, match="16,000") as exc:
            call(PgIndexConfig(index, {}, dtype), 1000, 70_000)
        assert exc.value.parameter == "dim" and "70,000" in str(exc.value)
    assert MAX_TABLE_DIM == 16_000
    assert pg_estimate(PgIndexConfig("flat", {}, dtype), 10, 16_000).dim == 16_000  # the limit itself is allowed
    with pytest.raises(ParameterError, match="16,000"):
        pg_estimate(PgIndexConfig("flat", {}, dtype), 10, 16_001)


def test_cli_pgvector_dimensions_refused_in_one_line():
    flat = ["--index", "flat"]  # one --index each: an option given twice is refused
    for extra in (flat, [*flat, "--measure"], [*flat, "--dtype", "float16"], ["--dtype", "binary", "--index", "hnsw"]):
        line = one_line("capacity", "--engine", "pgvector", "-d", "70000", "-n", "1000", *extra)
        assert "--dim" in line and "16,000" in line, line
    # an index's own limit keeps its message (2,000 dims of vector)
    assert "2,000 dimensions" in one_line("capacity", "--engine", "pgvector", "-n", "10", "-d", "3000", "--index",
                                          "hnsw")  # fmt: skip


# --- 2. counts: exact whole numbers, or refused above PostgreSQL's limits ----------------------------


def test_pgvector_count_above_the_tables_integer_rows_is_refused():
    with pytest.raises(ParameterError, match="2,147,483,648") as exc:
        pg_estimate(PgIndexConfig("flat"), 10**30, 384)
    assert exc.value.parameter == "count"
    line = one_line("capacity", "--engine", "pgvector", "-d", "384", "-n", str(10**30))
    assert "--count" in line and "2,147,483,648" in line and "integer" in line


def test_pgvector_page_counts_are_exact_whole_numbers_at_the_limit():
    result = pg_estimate(PgIndexConfig("flat"), MAX_ROWS, 8)
    per_page = min(291, (PAGE - 24) // (math.ceil((28 + 8 + 4 * 8) / 8) * 8 + 4))  # 107 rows of 76 bytes
    assert per_page == 107 and result.table["heap"] == -(-MAX_ROWS // per_page) * PAGE == 20_069_941 * PAGE
    hnsw = pg_estimate(PgIndexConfig("hnsw"), MAX_ROWS - 1, 384)
    formula = -(-(MAX_ROWS - 1) // 4) + 1  # 4 elements of 1,616 + 200 B a page: no build has fewer pages
    assert hnsw.index_pages == formula and hnsw.index_pages_range[0] == formula <= hnsw.index_pages_range[1]
    ivf = pg_estimate(PgIndexConfig("ivfflat"), MAX_ROWS, 384)
    for found in (result, hnsw, ivf):
        numbers = [found.index_pages, found.index_bytes, found.table_bytes, *found.table.values()]
        assert all(type(x) is int for x in numbers), numbers
        assert found.build_memory_bytes is None or type(found.build_memory_bytes) is int


@pytest.mark.parametrize(
    ("index", "dim", "count", "relation"),
    [("flat", 16_000, 2 * 10**9, "TOAST table"), ("hnsw", 2000, MAX_ROWS, "index")],
)
def test_pgvector_relation_past_its_block_limit_is_refused(index, dim, count, relation):
    with pytest.raises(ParameterError, match=f"{MAX_BLOCKS:,}") as exc:
        pg_estimate(PgIndexConfig(index), count, dim)
    assert exc.value.parameter == "count" and f"the {relation} would need" in str(exc.value)
    line = one_line("capacity", "--engine", "pgvector", "-d", str(dim), "-n", str(count), "--index", index)
    assert "--count" in line and "4,294,967,295 pages" in line and "32 TiB" in line


def test_faiss_dimension_above_a_c_int_is_refused():
    with pytest.raises(ParameterError, match="2,147,483,647") as exc:
        estimate(IndexConfig("flat"), 5, FAISS_MAX_DIM + 1)
    assert exc.value.parameter == "dim"
    assert "C int" in one_line("capacity", "-n", "5", "-d", str(10**13))


# --- 3. --max-measure on pgvector: honoured ------------------------------------------------------------


def test_pgvector_measure_above_max_measure_is_refused_before_the_server():
    with pytest.raises(ParameterError, match="max_measure") as exc:
        pg_measure(PgIndexConfig("hnsw"), 200_000, 8)  # the default: 100,000
    assert exc.value.parameter == "count" and "100,000" in str(exc.value)
    with pytest.raises(ParameterError, match="max_measure"):
        pg_measure(PgIndexConfig("flat"), 50, 8, max_measure=10)
    for bad in (0, -3, 2.5, True, None):
        with pytest.raises(ParameterError) as exc:
            pg_measure(PgIndexConfig("flat"), 5, 8, max_measure=bad)
        assert exc.value.parameter == "max_measure"
    line = one_line("capacity", "--engine", "pgvector", "-n", "200000", "-d", "8", "--measure")
    assert "--count" in line and "--max-measure (100,000)" in line
    line = one_line("capacity", "--engine", "pgvector", "-n", "50", "-d", "8", "--measure", "--max-measure", "10")
    assert "--max-measure (10)" in line
    assert "--max-measure must be at least 1" in one_line("capacity", "--engine", "pgvector", "-n", "5", "-d", "8",
                                                           "--measure", "--max-measure", "0")  # fmt: skip


@pytest.mark.parametrize("engine", ["faiss", "pgvector", "azure"])
def test_max_measure_without_measure_is_refused(engine):
    line = one_line("capacity", "--engine", engine, "-n", "5", "-d", "8", "--max-measure", "5")
    assert "--max-measure is for --measure" in line


def test_faiss_still_extrapolates_above_max_measure():
    result = measure(IndexConfig("flat"), 3000, 8, max_measure=1000)
    assert "extrapolated" in result.measured_on and abs(result.measured_bytes - result.bytes) < 1000  # its header


# --- 4. the platforms' options: one range check each, the range named --------------------------------


@pytest.mark.parametrize("bad", [1.5, 1, 1.0, -0.1, NAN, INF, -INF, True, "0.1", None])
def test_azure_deleted_ratio_must_be_a_share_below_one(bad):
    if bad is None:
        assert azure(1000, 768).params["deleted_ratio"] == 0.10  # None is the default
        return
    with pytest.raises(ParameterError, match="at least 0 and below 1") as exc:
        azure(1000, 768, deleted_ratio=bad)
    assert exc.value.parameter == "deleted_ratio"


def test_azure_deleted_ratio_inside_the_range_is_taken_exactly():
    assert azure(1000, 1536, overhead=0.10, deleted_ratio=0.10).bytes == 7_434_240  # the vendor's example
    assert azure(1000, 768, deleted_ratio=0).params["deleted_ratio"] == 0
    assert azure(1000, 768, deleted_ratio=0.99999999999999).params["deleted_ratio"] < 1  # not rounded up to 1


@pytest.mark.parametrize(
    ("call", "parameter", "named"),
    [
        (lambda: azure(10, 768, overhead=NAN), "overhead", "from 0 to 1"),
        (lambda: azure(10, 768, overhead=1.5), "overhead", "from 0 to 1"),
        (lambda: azure(10, 768, overhead=-0.01), "overhead", "from 0 to 1"),
        (lambda: azure(10, 768, partitions=13), "partitions", "between 1 and 12"),
        (lambda: azure(10, 768, partitions=0), "partitions", "between 1 and 12"),
        (lambda: azure(10, 768, replicas=-1), "replicas", "between 1 and 12"),
        (lambda: azure(10, 768, replicas=2.5), "replicas", "whole number"),
        (lambda: azure(10, 5000), "dim", "4,096"),
        (lambda: azure(0, 768), "count", "at least 1"),
        (lambda: azure(NAN, 768), "count", "whole number"),
        (lambda: opensearch(10, 768, heap_gib=0), "heap_gib", "above 0 GiB and below 64 GiB"),
        (lambda: opensearch(10, 768, heap_gib=64), "heap_gib", "below 64 GiB (the node's memory"),
        (lambda: opensearch(10, 768, heap_gib=NAN), "heap_gib", "above 0 GiB"),
        (lambda: opensearch(10, 768, node_memory_gib=0), "node_memory_gib", "from 1 to 1,000,000 GiB"),
        (lambda: opensearch(10, 768, node_memory_gib=INF), "node_memory_gib", "from 1 to 1,000,000 GiB"),
        (lambda: opensearch(10, 768, node_memory_gib=10**7), "node_memory_gib", "from 1 to 1,000,000 GiB"),
        (lambda: opensearch(10, 768, replicas=-1), "replicas", "between 0 and 100"),
        (lambda: opensearch(10, 768, nodes=0), "nodes", "between 1 and 10000"),
        (lambda: opensearch(10, 768, m=1), "m", "between 2 and 100"),
        (lambda: opensearch(10, 768, m=101), "m", "between 2 and 100"),
        (lambda: opensearch(10, 768, bits=3), "bits", "1, 2, 4 or 16"),
        (lambda: opensearch(10, 768, bits=1.0), "bits", "whole number"),
        (lambda: opensearch(10, 768, method="ivf", nlist=0), "nlist", "at least 1"),
        (lambda: opensearch(10, 768, pq_m=8, segments=0), "segments", "at least 1"),
        (lambda: opensearch(10, 768, pq_m=0), "pq_m", "between 1 and 1024"),
        (lambda: opensearch(10, 768, pq_m=8, method="ivf", nbits=9), "nbits", "between 1 and 8"),
        (lambda: opensearch(10, 16_001, knn_engine="nmslib"), "dim", "16,000"),
        (lambda: opensearch(-1, 768), "count", "at least 1"),
        (lambda: vertex(INF, 768), "count", "whole number"),
        (lambda: vertex(2.5, 768), "count", "whole number"),
        (lambda: vertex(10, 0), "dim", "at least 1"),
        (lambda: vertex(10, 2**33), "dim", "larger than a medium shard"),
    ],
)
def test_platform_options_out_of_range_are_refused_naming_the_range(call, parameter, named):
    with pytest.raises(ParameterError) as exc:
        call()
    assert exc.value.parameter == parameter and named in str(exc.value), str(exc.value)
    assert "\n" not in str(exc.value)


def test_platform_numbers_accept_numpy_and_keep_huge_counts_exact():
    np = pytest.importorskip("numpy")
    assert opensearch(10, 768, node_memory_gib=np.float32(8)).params["heap_gib"] == 4.0
    assert azure(10, 768, overhead=np.float64(0.02)).params["overhead"] == 0.02
    shards = vertex(10**30, 768).params["shards"]
    per_shard = 20 * 2**30 // (4 * 768)
    assert shards == -(-(10**30) // per_shard) == 143_051_161_103_359_327_636_655  # no float rounding


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--engine", "azure", "--deleted-ratio", "1.5"], "--deleted-ratio must be a number at least 0 and below 1"),
        (["--engine", "azure", "--deleted-ratio", "nan"], "--deleted-ratio must be a number at least 0 and below 1"),
        (["--engine", "azure", "--overhead", "inf"], "--overhead must be a number from 0 to 1"),
        (["--engine", "azure", "--partitions", "13"], "--partitions must be between 1 and 12"),
        (["--engine", "azure", "--replicas", "0"], "--replicas must be between 1 and 12"),
        (["--engine", "opensearch", "--heap-gib", "0"], "--heap-gib must be a number above 0 GiB"),
        (["--engine", "opensearch", "--heap-gib", "64"], "(the node's memory, --node-memory-gib)"),
        (["--engine", "opensearch", "--node-memory-gib", "nan"], "--node-memory-gib must be a number from 1 to"),
        (["--engine", "opensearch", "--node-memory-gib", "-4"], "--node-memory-gib must be a number from 1 to"),
        (["--engine", "opensearch", "--nodes", "0"], "--nodes must be between 1 and 10000"),
        (["--engine", "opensearch", "--replicas", "-1"], "--replicas must be between 0 and 100"),
        (["--engine", "opensearch", "--pq-m", "8", "--segments", "0"], "--segments must be at least 1"),
        (["--engine", "opensearch", "--knn-engine", "nmslib", "-d", "20000"], "--dim must be at most 16,000"),
        (["--engine", "vertex", "-d", str(2**33)], "larger than a medium shard"),
    ],
)
def test_cli_platform_options_out_of_range_are_one_line(args, named):
    dims = [] if "-d" in args else ["-d", "768"]
    assert named in one_line("capacity", "-n", "1000", *dims, *args)


# --- 5. serve --workers -------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [str(10**12), str(10**30), "17", "0", "-3"])
def test_serve_workers_out_of_range_is_one_line_naming_the_limit(workers):
    line = one_line("serve", "--workers", workers)
    assert "--workers" in line and ("16" in line if workers not in ("0", "-3") else "1" in line), line
