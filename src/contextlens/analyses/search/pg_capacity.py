"""What N vectors of D dimensions cost in PostgreSQL with pgvector: page formulas, and the real server.

pgvector's indexes are **page-quantised**: tuples are kept whole on 8 KiB pages, so the size grows
in steps of whole vectors per page, not along a line. From pgvector 0.8's source (hnswbuild.c,
ivfbuild.c) and PostgreSQL's page layout (8,192-byte page, 24-byte header, 8-byte special space:
8,160 usable bytes; a 4-byte line pointer per tuple; MAXALIGN = 8):

* **HNSW**: an element tuple ``MAXALIGN(72 + VARSIZE(value))`` and its level-0 neighbour tuple
  ``MAXALIGN(4 + 2·m·6)`` share one page when they fit, so ``k = ⌊8160 / (elem + neigh + 8)⌋``
  elements per page and ``pages = ⌈N / k⌉ + 1`` (the metapage), N counting *distinct* vectors:
  rows with identical vectors share one element (up to 10 heap TIDs each; 10,000 WordNet
  definitions hold 9,881 distinct ones, and the index had exactly ⌈9881/4⌉ + 1 pages). VARSIZE is ``8 + 4d`` (vector),
  ``8 + 2d`` (halfvec) or ``8 + ⌈d/8⌉`` (bit). The elements on upper levels (1 in m, drawn at
  random while the index is built) have bigger neighbour tuples (:mod:`.pg_hnsw_pages`): the slack
  left on each page holds them for vector and halfvec, so the formula is exact (with a bound on the
  chance it is not); the small bit tuples (24 to a page at 384 dims) leave too little, so their count
  is a distribution, given by simulating the rule over random levels (the median and 95% range).
  ``--measure`` reads the built index's own levels back and gets its page count, and every element's
  block, exactly by the same rule. When the two tuples cannot share a page, each element takes two.
* **Build memory**: the graph is built in ``maintenance_work_mem`` at ``VARSIZE + 32·m + 196``
  bytes per element (the value, 2m neighbour candidates of 16 bytes, the element; fitted on the
  NOTICE point at d = 384..1536, m = 8..32); past it pgvector says "hnsw graph no longer fits into
  maintenance_work_mem after N tuples" and builds on disk, several times slower.
* **IVFFlat build memory**: the build adds up its arrays and checks the sum against
  ``maintenance_work_mem`` before it allocates them, failing past it ("memory required is X MB,
  maintenance_work_mem is Y MB"; no spill to disk): the centers, a sample of ``max(50·lists,
  10000)`` slots (at most 291 per heap page: a TOASTed table has few pages, so a small sample),
  then k-means's new centers, float sums ``lists·d`` and float32 bounds ``S·lists`` and ``lists²``
  (S the rows sampled); items of ``MAXALIGN(VARSIZE)``, a 32-byte header per array. Exact:
  ``--measure`` gets the error 1 kB under the prediction and a built index at it.
* **IVFFlat**: a metapage, the list pages (``MAXALIGN(8 + VARSIZE) + 4`` per list tuple) and each
  list's own pages (at least one) of ``MAXALIGN(8 + VARSIZE) + 4``-byte entries. k-means decides
  the lists' lengths, so before the build this is an expectation (binomial lengths); ``--measure``
  reads the lengths back from the built index and gets its page count exactly, list by list.
* **Limits** (checked before any formula, for the estimate and ``--measure`` alike): pgvector's
  ``vector`` and ``halfvec`` types hold at most 16,000 dimensions (``VECTOR_MAX_DIM``,
  ``HALFVEC_MAX_DIM``; a binary index keeps ``vector(d)`` in the table, so 16,000 too), its HNSW and
  IVFFlat indexes 2,000 (vector), 4,000 (halfvec) and 64,000 (bit) (:mod:`.pg_index`); the table's
  ``pos integer`` numbers at most 2,147,483,648 rows; and PostgreSQL addresses at most 4,294,967,295
  pages (``MaxBlockNumber`` + 1: 32 TiB) in one relation (the heap, the TOAST table, its index, the
  vector index). Page counts are whole numbers throughout (no float rounding).
* **Table**: heap tuples ``MAXALIGN(28 + VARSIZE) + 4`` bytes on 8,168-byte pages; past 2,032
  bytes (a ``vector`` over ~500 dims) the value moves to the TOAST table (pgvector's storage is
  EXTERNAL: never compressed) in chunks of 1,996 bytes, leaving an 18-byte pointer in the heap.
  COPY extends the heap in bulk, so the measured table can hold some empty pages more.

:func:`pg_estimate` evaluates these; :func:`pg_measure` builds the table and index on the real
server and reads ``pg_relation_size`` / ``pg_table_size`` / ``pg_total_relation_size`` beside them.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from contextlens.analyses.search import pg_hnsw_pages, pg_pages, pg_server
from contextlens.analyses.search.pg_dsn import checked_dsn
from contextlens.analyses.search.pg_index import PgIndexConfig, create_table
from contextlens.analyses.search.pg_page_rules import (  # noqa: F401 - the page rules, named here too
    BTREE_LEAF_ENTRIES,
    HEAP_USABLE,
    INDEX_USABLE,
    LINE_POINTER,
    MAX_HEAP_TUPLES,
    PAGE,
    TOAST_CHUNK,
    TOAST_POINTER,
    TOAST_THRESHOLD,
    VECTOR_ARRAY_HEADER,
    ceil_div,
    column_size,
    hnsw_pages,
    ivfflat_build_memory,
    ivfflat_entry,
    ivfflat_pages,
    ivfflat_pages_of_lists,
    maxalign,
    table_parts,
    value_size,
)  # fmt: skip
from contextlens.core.arguments import whole_number
from contextlens.core.similarity import normalize_rows
from contextlens.errors import InputError, ParameterError

NOTICE_RE = re.compile(r"after (\d+) tuples")
IVFFLAT_ERROR_RE = re.compile(r"memory required is (\d+) MB")
# What the engine allows (pgvector 0.8.5's vector.h and halfvec.h, PostgreSQL's storage/block.h)
MAX_TABLE_DIM = 16_000  # VECTOR_MAX_DIM = HALFVEC_MAX_DIM: the table's vector(d) or halfvec(d) column
MAX_ROWS = 2**31  # the table's `pos integer`: rows 0 to 2,147,483,647
MAX_BLOCKS = 2**32 - 1  # block numbers 0 to MaxBlockNumber (0xFFFFFFFE) in one relation: 32 TiB of 8 KiB pages
MAX_MEASURE = 100_000  # the vectors a measurement builds at most, by default (the CLI's --max-measure)


def check_limits(count: int, dim: int, dtype: str) -> tuple[int, int]:
    """``count`` and ``dim`` as ints, or a ParameterError naming the limit of PostgreSQL or pgvector
    that refuses them: the table's column type (16,000 dimensions) and its ``pos integer`` rows."""
    count = whole_number(count, "count", minimum=1)
    dim = whole_number(dim, "dim", minimum=1)
    if dim > MAX_TABLE_DIM:
        column = {"float32": "vector", "float16": "halfvec", "binary": "vector"}.get(dtype, "vector")
        kept = " (a binary index keeps vector(d) in the table)" if dtype == "binary" else ""
        raise ParameterError("dim", f"must be at most {MAX_TABLE_DIM:,} on pgvector: its {column} type holds at most "
                                    f"{MAX_TABLE_DIM:,} dimensions{kept}, got {dim:,}")  # fmt: skip
    if count > MAX_ROWS:
        raise ParameterError(
            "count", f"must be at most {MAX_ROWS:,} on pgvector: the table numbers its rows in a PostgreSQL integer "
                     f"column (pos 0 to {MAX_ROWS - 1:,}), got {count:,}"
        )  # fmt: skip
    return count, dim


def check_blocks(result: PgCapacity) -> None:
    """Refuse sizes with a relation past PostgreSQL's 4,294,967,295 pages (32 TiB) per relation."""
    names = {"heap": "table's heap", "toast": "TOAST table", "toast index": "TOAST table's index"}
    relations = {names.get(part, part): size // PAGE for part, size in result.table.items()}
    relations["index"] = max(result.index_pages, (result.index_pages_range or (0, 0))[1])
    for name, pages in relations.items():
        if pages > MAX_BLOCKS:
            raise ParameterError(
                "count", f"{result.count:,} is too many on PostgreSQL at {result.dim:,} dims: the {name} would need "
                         f"{pages:,} pages, past its limit of {MAX_BLOCKS:,} pages (32 TiB) per relation"
            )  # fmt: skip


@dataclass
class PgCapacity:
    """Bytes of a pgvector table and index for ``count`` vectors, and the build memory."""

    count: int
    dim: int
    dtype: str
    index: str
    params: dict[str, Any]
    index_pages: int
    index_bytes: int
    index_formula: str
    table: dict[str, int]
    table_bytes: int
    build_memory_bytes: int | None  # maintenance_work_mem: an in-memory HNSW build, or IVFFlat k-means at all
    build_memory_formula: str | None
    exact: bool  # whether the index page count is exact (HNSW vector/halfvec) or an estimate (bit, IVFFlat)
    index_pages_range: tuple[int, int] | None = None  # HNSW: 95% of pgvector's random level draws
    measured: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    elements: int | None = None  # HNSW: the elements the pages were counted for (distinct vectors when known)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def pg_estimate(config: PgIndexConfig, count: int, dim: int, elements: int | None = None) -> PgCapacity:
    """The formulas for ``config`` over ``count`` x ``dim``. ``elements``: the HNSW elements the data
    makes (:mod:`.distinct_vectors`: identical vectors fold into one), when known; None: every row
    distinct. The table holds every row either way; IVFFlat keeps every row too."""
    if not isinstance(config, PgIndexConfig):
        raise InputError(f"`config` must be a PgIndexConfig (e.g. PgIndexConfig('hnsw')), got {type(config).__name__}")
    count, dim = check_limits(count, dim, config.dtype)
    if elements is not None:
        elements = whole_number(elements, "elements", minimum=1)
        if elements > count:
            raise ParameterError("elements", f"must be at most `count` ({count:,}), got {elements:,}")
    nodes = count if elements is None else elements
    r = config.resolved(dim)
    p = r.params
    memory = memory_formula = None
    pages_range = None
    exact = r.type == "flat"
    if r.type == "hnsw":
        distribution, formula = hnsw_pages(nodes, dim, r.dtype, p["m"])
        # at most k elements share a page, so ceil(n/k) + 1 is a floor no draw goes under (the scaled
        # simulation's float spread can reach a page below it at 2**31 elements)
        least = distribution.formula
        pages, exact = max(distribution.median, least), distribution.exact
        pages_range = (max(distribution.low, least), max(distribution.high, least))
        per_element = value_size(dim, r.dtype) + 32 * p["m"] + 196
        memory, memory_formula = nodes * per_element, f"n*(VARSIZE {value_size(dim, r.dtype)} + 32*m + 196)"
    elif r.type == "ivfflat":
        pages, formula = ivfflat_pages(count, dim, r.dtype, p["lists"])
        memory, memory_formula = ivfflat_build_memory(count, dim, r.dtype, p["lists"])
    else:
        pages, formula = 0, "no index: an exact scan of the table"
    table = table_parts(count, dim, r.dtype)
    notes = []
    if elements is not None and r.type == "hnsw":
        notes.append(
            f"n = {elements:,} HNSW elements for {count:,} rows: identical vectors share one element (up to "
            f"10 rows each), so {count - elements:,} rows add no element; the table holds all {count:,}"
        )
    if memory and r.type == "ivfflat":
        notes.append(
            f"past maintenance_work_mem ({memory:,} bytes needed) the IVFFlat build FAILS before k-means: "
            f"ERROR: memory required is {memory // 2**20 + 1} MB"
        )
    elif memory is not None:
        notes.append(
            f"past maintenance_work_mem ({memory:,} bytes needed) pgvector builds the graph on disk, several "
            "times slower (NOTICE: hnsw graph no longer fits into maintenance_work_mem after N tuples)"
        )
    result = PgCapacity(
        count=count, dim=dim, dtype=r.dtype, index=r.type, params=p, index_pages=pages, index_bytes=pages * PAGE,
        index_formula=formula, table=table, table_bytes=sum(table.values()), build_memory_bytes=memory,
        build_memory_formula=memory_formula, exact=exact, index_pages_range=pages_range, notes=notes,
        elements=nodes if r.type == "hnsw" else None,
    )  # fmt: skip
    check_blocks(result)
    return result


def check_measurable(result: PgCapacity, dsn: str | None) -> None:
    """Refuse a measurement whose random vectors do not fit in memory, or whose table and index do
    not fit on the embedded server's disk, before anything is allocated."""
    check_memory(result.count, result.dim)
    check_disk(result, dsn)


def check_memory(count: int, dim: int) -> None:
    """Refuse a measurement whose random float32 vectors (and the COPY payload made of them) do not
    fit in the memory available."""
    from contextlens.analyses.search.capacity import available_memory

    vectors = count * dim * 4 * 2  # float32, and the COPY payload built from it
    available = available_memory()
    if available is not None and vectors > available:
        raise InputError(
            f"measuring {count:,} vectors of {dim:,} dims needs about {vectors:,} bytes of memory but "
            f"only {available:,} are available; lower `count`, or drop `measure` for the formula"
        )


def check_disk(result: PgCapacity, dsn: str | None) -> None:
    """Refuse a measurement whose table and index do not fit on the embedded server's disk."""
    import shutil

    from contextlens.core.resources import cache_dir

    if dsn is None:
        disk = result.table_bytes + result.index_bytes
        free = shutil.disk_usage(cache_dir()).free
        if disk > free:
            raise InputError(
                f"measuring needs about {disk:,} bytes in the embedded database but its disk has {free:,} free; "
                "lower `count`, or drop `measure` for the formula"
            )


def pg_measure(
    config: PgIndexConfig, count: int, dim: int, dsn: str | None = None, seed: int = 0, memory_probe: bool = True,
    max_measure: int = MAX_MEASURE, vectors: np.ndarray | None = None,
) -> PgCapacity:  # fmt: skip
    """:func:`pg_estimate`, plus the sizes of the real table and index built on ``count`` random unit
    vectors, and (``memory_probe``) the build memory: for HNSW the NOTICE point of a build given a
    quarter of the memory, for IVFFlat the error of a build given 1 kB less than predicted and the
    success of one given 1 kB more. The pages hold whole vectors, so nothing is extrapolated: a
    ``count`` above ``max_measure`` is refused (the formula, :func:`pg_estimate`, takes any count
    PostgreSQL allows). Checked in this order, before anything is allocated: the arguments, the
    dimension against pgvector's types and indexes, the memory the vectors need, the engine's
    limits on the count, ``max_measure``, the disk. ``vectors``: the data itself (``count`` x ``dim``),
    built instead of random vectors, its identical rows counted as the elements they fold into."""
    if not isinstance(config, PgIndexConfig):
        pg_estimate(config, count, dim)  # its message
    max_measure = whole_number(max_measure, "max_measure", minimum=1)
    count, dim = whole_number(count, "count", minimum=1), whole_number(dim, "dim", minimum=1)
    check_limits(1, dim, config.dtype)
    config.resolved(dim)  # the index's own dimension limit
    check_memory(count, dim)
    x, elements = _given_vectors(vectors, count, dim, config.dtype) if vectors is not None else (None, None)
    result = pg_estimate(config, count, dim, elements)
    if count > max_measure:
        raise ParameterError("count", f"must be at most `max_measure` ({max_measure:,}) to be measured, got "
                                      f"{count:,}: a measurement builds every vector in PostgreSQL (its pages hold "
                                      "whole vectors: nothing is extrapolated); raise `max_measure`, or drop "
                                      "`measure` for the formula")  # fmt: skip
    check_disk(result, dsn)
    resolved = config.resolved(dim)
    checked_dsn(dsn)  # parsed and tried before the vectors are drawn
    if vectors is None:
        x = normalize_rows(np.random.default_rng(seed).standard_normal((count, dim), dtype=np.float32))
    with pg_server.database(dsn) as conninfo, pg_server.connect(conninfo) as conn:
        table = f"cl_capacity_{int(time.time() * 1e6)}"
        measured = _measured_build(conn, table, x, dim, resolved)
        if resolved.type != "ivfflat" or not memory_probe:
            measured.pop("heap_pages", None)
        if memory_probe and resolved.type == "hnsw" and result.build_memory_bytes:
            measured.update(_hnsw_memory_probe(conn, table, x, resolved, count, result.build_memory_bytes))
        if memory_probe and resolved.type == "ivfflat" and result.build_memory_bytes:
            # the sample is capped by the heap's real page count (COPY may extend it past the prediction)
            heap_pages = measured.pop("heap_pages")
            predicted, _ = ivfflat_build_memory(count, dim, resolved.dtype, resolved.params["lists"], heap_pages)
            measured["build_memory_predicted_on_heap_pages"] = {"heap_pages": heap_pages, "bytes": predicted}
            measured.update(_ivfflat_memory_threshold(conn, table, x, resolved, predicted))
    result.measured = measured
    return result


def _given_vectors(vectors: np.ndarray, count: int, dim: int, dtype: str) -> tuple[np.ndarray, int]:
    """The data's rows as unit vectors, and the HNSW elements their identical rows fold into."""
    from contextlens.analyses.search.distinct_vectors import fold_vectors

    if vectors.shape != (count, dim):
        raise ParameterError("vectors", f"must be `count` x `dim` ({count} x {dim}), got {vectors.shape}")
    x = normalize_rows(np.asarray(vectors, dtype=np.float32))
    _, elements, _ = fold_vectors(x, dtype)
    return x, elements


def _measured_build(conn, table: str, x: np.ndarray, dim: int, resolved: PgIndexConfig) -> dict[str, Any]:
    """The table and index built with ample memory: their sizes, the heap's pages, and the page rule replayed."""
    measured: dict[str, Any] = {}
    try:
        report = create_table(conn, table, x, resolved, maintenance_work_mem="1GB")
        measured["heap_pages"] = conn.execute(
            "SELECT pg_relation_size(%s::regclass, 'main') / 8192", (table,)
        ).fetchone()[0]
        measured.update(
            index_bytes=report.index_bytes, index_pages=report.index_bytes // PAGE,
            table_bytes=report.table_bytes, total_bytes=report.total_bytes, build_seconds=report.seconds,
            notices=report.notices,
        )  # fmt: skip
        if resolved.type != "flat":
            measured["replay"] = replay_index(conn, f"{table}_ann", dim, resolved)
    finally:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    return measured


def _hnsw_memory_probe(
    conn, table: str, x: np.ndarray, resolved: PgIndexConfig, count: int, predicted: int
) -> dict[str, Any]:
    """An HNSW build given a quarter of the predicted memory: the element at which its NOTICE came.
    The build is cancelled at the NOTICE: the rest of it (3/4 of the graph, on disk, several times
    slower than in memory) would measure nothing more, and its table is dropped anyway."""
    import psycopg

    # a quarter of the predicted need, in whole MiB: pgvector's graph memory grows in 1 MiB blocks,
    # so the NOTICE point of a whole-MiB budget is that budget filled, within one element
    budget_kb = max(1, predicted // 4 // 2**20) * 1024
    notices: list[str] = []

    def stop_at_the_notice(diag) -> None:
        notices.append(diag.message_primary or "")
        if NOTICE_RE.search(notices[-1]):
            conn.cancel()  # the server sends the NOTICE as it happens: the build stops a moment later

    conn.add_notice_handler(stop_at_the_notice)
    start = time.perf_counter()
    try:
        create_table(conn, table, x, resolved, maintenance_work_mem=f"{budget_kb}kB")
    except psycopg.errors.QueryCanceled:
        if not any(map(NOTICE_RE.search, notices)):
            raise  # not our cancel
    finally:
        conn.remove_notice_handler(stop_at_the_notice)
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    points = [int(m.group(1)) for m in map(NOTICE_RE.search, notices) if m]
    measured: dict[str, Any] = dict(memory_probe_kb=budget_kb, memory_probe_notices=notices,
                                    memory_probe_seconds=time.perf_counter() - start)  # fmt: skip
    if points:
        measured["bytes_per_element"] = budget_kb * 1024 / points[0]
        measured["build_memory_bytes"] = round(Fraction(count * budget_kb * 1024, points[0]))
    return measured


def replay_index(conn, index: str, dim: int, config: PgIndexConfig) -> dict[str, Any]:
    """The page rule applied to what the build drew, read back from the index's pages (HNSW: each
    element's level; IVFFlat: each list's length), or why it could not be read (CHECKPOINT and
    ``pg_read_binary_file`` need rights a managed service's user lacks: the superuser's, or the
    ``pg_checkpoint`` role and that function's EXECUTE, which the embedded server's role is granted)."""
    import psycopg

    try:
        if config.type == "hnsw":
            element = pg_hnsw_pages.element_tuple(value_size(dim, config.dtype))
            return asdict(pg_hnsw_pages.replay(conn, index, element, config.params["m"]))
        data = pg_pages.read_index_file(conn, index)
    except psycopg.errors.InsufficientPrivilege as exc:
        return {"skipped": f"the index's pages cannot be read here ({exc.diag.message_primary}): it needs "
                           "CHECKPOINT and pg_read_binary_file, granted to the embedded server's role"}  # fmt: skip
    layout = pg_pages.ivfflat_lists(data)
    pages = ivfflat_pages_of_lists(layout.entries, layout.list_pages, dim, config.dtype)
    per_page = INDEX_USABLE // ivfflat_entry(dim, config.dtype)
    return {
        "pages": pages, "measured_pages": len(data) // PAGE, "list_pages": layout.list_pages,
        "lists": len(layout.entries), "entries": sum(layout.entries), "shortest_list": min(layout.entries),
        "longest_list": max(layout.entries),
        # each list's chain of pages is the rule's max(1, ceil(n/k)): the layout, list by list
        "same_lists": layout.pages == [max(1, ceil_div(n, per_page)) for n in layout.entries],
    }  # fmt: skip


def _ivfflat_memory_threshold(conn, table: str, x: np.ndarray, config: PgIndexConfig, predicted: int) -> dict:
    """Build with ``maintenance_work_mem`` one kB under and one kB over the predicted need (PostgreSQL
    counts it in kB): pgvector's error on the first and a built index on the second pin it exactly."""
    import psycopg

    below, above = max(1024, ceil_div(predicted, 1024) - 1), max(1024, ceil_div(predicted, 1024))
    out: dict[str, Any] = {"memory_probe_kb": [below, above]}
    for budget_kb, key in ((below, "below"), (above, "above")):
        try:
            create_table(conn, table, x, config, maintenance_work_mem=f"{budget_kb}kB")
            out[f"build_{key}"] = "built"
        except psycopg.errors.ProgramLimitExceeded as exc:
            message = (exc.diag.message_primary or str(exc)).strip()
            out[f"build_{key}"] = message
            found = IVFFLAT_ERROR_RE.search(message)
            if found:
                out["error_mb"] = int(found.group(1))
        finally:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    if out["build_below"] != "built" and out["build_above"] == "built":
        out["build_memory_bytes"] = above * 1024  # the need lies in (below, above] kB
    return out
