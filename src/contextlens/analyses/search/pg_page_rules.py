"""pgvector's page rules: how many 8 KiB pages an index and a table take, and an IVFFlat build's memory.

The arithmetic of :mod:`.pg_capacity` (its docstring gives the layout they follow, from pgvector
0.8's hnswbuild.c and ivfbuild.c and PostgreSQL's page layout), kept apart from the estimate and the
measurement that use it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from contextlens.analyses.search import pg_hnsw_pages
from contextlens.analyses.search.pg_hnsw_pages import PageDistribution

PAGE = 8192
INDEX_USABLE = PAGE - 24 - 8  # page header, pgvector's special space
HEAP_USABLE = PAGE - 24
LINE_POINTER = 4
TOAST_THRESHOLD = 2032  # TOAST_TUPLE_THRESHOLD for 8 KiB pages
TOAST_CHUNK = 1996  # TOAST_MAX_CHUNK_SIZE
TOAST_POINTER = 18  # a varatt_external with its 2-byte header
BTREE_LEAF_ENTRIES = 367  # toast index entries per leaf page (16-byte tuples, rightmost splits at 90%)
VECTOR_ARRAY_HEADER = 32  # VectorArrayData: three ints, a Size and a pointer
MAX_HEAP_TUPLES = 291  # MaxHeapTuplesPerPage for 8 KiB pages


def maxalign(x: int) -> int:
    return (x + 7) // 8 * 8


def ceil_div(a: int, b: int) -> int:
    """⌈a/b⌉ in whole numbers (``math.ceil(a / b)`` rounds through a float past 2**53)."""
    return -(-a // b)


def value_size(dim: int, dtype: str) -> int:
    """VARSIZE of one value in the index: vector, halfvec or bit."""
    return 8 + {"float32": 4 * dim, "float16": 2 * dim, "binary": ceil_div(dim, 8)}[dtype]


def column_size(dim: int, dtype: str) -> int:
    """VARSIZE of one value in the table (a binary index keeps the full vector in the table)."""
    return value_size(dim, "float32" if dtype == "binary" else dtype)


def hnsw_pages(count: int, dim: int, dtype: str, m: int) -> tuple[PageDistribution, str]:
    """Pages of an HNSW index over pgvector's random levels (:mod:`.pg_hnsw_pages`), and how they
    were counted."""
    element = pg_hnsw_pages.element_tuple(value_size(dim, dtype))
    pages = pg_hnsw_pages.page_draws(count, element, m)
    neighbours = pg_hnsw_pages.neighbour_tuple(0, m)
    k = pg_hnsw_pages.per_page(element, m)
    if not k:
        return pages, f"element {element} B + neighbours {neighbours} B do not share a page: 2 pages each"
    formula = (
        f"k = floor(8160 / (MAXALIGN(72+VARSIZE) {element} + MAXALIGN(4+12m) {neighbours} + 8)) = {k} "
        f"elements per page; pages = ceil(n/k) + 1"
    )
    if pages.exact:
        return pages, formula
    return pages, formula + (
        f" = {pages.formula:,} if every element were on level 0; with pgvector's random levels "
        f"(1 in {m} above 0, {6 * m} B more per level) the median of {pages.draws} simulated builds"
        + (f" ({pages.simulated:,} elements each, scaled)" if pages.simulated < count else "")
    )


def ivfflat_entry(dim: int, dtype: str) -> int:
    """Bytes of one IVFFlat entry (IndexTupleData + the value) with its line pointer; a list tuple
    (startPage, insertPage, the center) is the same size."""
    return maxalign(8 + value_size(dim, dtype)) + LINE_POINTER


def ivfflat_pages_of_lists(entries: list[int], list_pages: int, dim: int, dtype: str) -> int:
    """Pages of an IVFFlat index whose lists hold ``entries``: the metapage, the list pages, and each
    list's own pages (at least one, even empty: every list starts a page of its own)."""
    per_page = INDEX_USABLE // ivfflat_entry(dim, dtype)
    return 1 + list_pages + sum(max(1, ceil_div(n, per_page)) for n in entries)


def ivfflat_pages(count: int, dim: int, dtype: str, lists: int) -> tuple[int, str]:
    """Pages of an IVFFlat index, expected: k-means decides the lists' lengths, so they are taken as
    cells of equal chance (binomial lengths, N/lists on average). Random vectors' lists come out a
    little more even than that, real sentence vectors' much less."""
    entry = ivfflat_entry(dim, dtype)
    per_page = INDEX_USABLE // entry
    list_pages = ceil_div(lists, max(1, INDEX_USABLE // entry))
    used = min(lists, count)
    pages_per_list = _expected_pages_per_list(count, used, per_page)
    return 1 + list_pages + round(used * pages_per_list) + (lists - used), (
        f"{per_page} entries of {entry} B per page; 1 + {list_pages} list pages + per list "
        f"max(1, ceil(n_i/{per_page})), "
        f"n_i ~ Binomial({count:,}, 1/{used:,}) (k-means decides the real lengths)"
    )


def _expected_pages_per_list(count: int, lists: int, per_page: int) -> float | Fraction:
    """E[max(1, ⌈n/k⌉)] for n ~ Binomial(count, 1/lists), summed over the likely n (±9 sd)."""
    p = 1.0 / lists
    mean, sd = count * p, math.sqrt(count * p * (1 - p))
    low, high = max(0, math.floor(mean - 9 * sd - 1)), min(count, math.ceil(mean + 9 * sd + 1))
    if high - low > 200_000:  # so long a list that ⌈n/k⌉'s rounding averages out: n/k + (k-1)/2k
        return Fraction(count, lists * per_page) + Fraction(per_page - 1, 2 * per_page)  # exact: no float
    n = np.arange(low, high + 1)
    log_pmf = (math.lgamma(count + 1) - np.array([math.lgamma(x + 1) + math.lgamma(count - x + 1) for x in n.tolist()])
               + n * math.log(p) + (count - n) * math.log1p(-p))  # fmt: skip
    pmf = np.exp(log_pmf)
    return float((pmf * np.maximum(1, np.ceil(n / per_page))).sum() / pmf.sum())


def ivfflat_build_memory(
    count: int, dim: int, dtype: str, lists: int, heap_pages: int | None = None
) -> tuple[int, str]:
    """Bytes an IVFFlat build checks against ``maintenance_work_mem`` (pgvector 0.8.5, ivfbuild.c and
    ivfkmeans.c), summed as it sums them: the centers, the sample, then k-means's arrays. The sample
    is ``max(50·lists, 10000)`` slots, capped at 291 tuples per heap page (``heap_pages``, default
    the predicted heap); with no more sampled rows than lists k-means is skipped with its arrays."""
    if heap_pages is None:
        heap_pages = table_parts(count, dim, dtype)["heap"] // PAGE
    slots = max(min(max(50 * lists, 10_000), heap_pages * MAX_HEAP_TUPLES), 1)
    taken = min(count, slots)
    item = maxalign(value_size(dim, dtype))
    used = 2 * VECTOR_ARRAY_HEADER + (lists + slots) * item  # centers, then the sample
    formula = f"32 + lists x {item} (centers) + 32 + {slots:,} sample slots x {item}"
    if taken <= lists:
        return used, formula + " (no k-means: no more rows than lists)"
    kmeans = VECTOR_ARRAY_HEADER + lists * item + 4 * lists * dim  # new centers, float sums
    kmeans += 4 * (taken * lists + lists * lists + 2 * taken + 3 * lists)  # bounds, distances, counts
    formula += f" + 32 + lists x {item} + 4*lists*d + 4*(S*lists + lists^2 + 2*S + 3*lists), S = {taken:,} rows sampled"
    return used + kmeans, formula


def table_parts(count: int, dim: int, dtype: str) -> dict[str, int]:
    """Bytes of the heap, the TOAST table and its index for ``count`` rows ``(pos, embedding)``."""
    value = column_size(dim, dtype)
    toasted = 28 + value > TOAST_THRESHOLD
    row = maxalign(28 + (TOAST_POINTER if toasted else value)) + LINE_POINTER
    parts = {"heap": ceil_div(count, min(MAX_HEAP_TUPLES, HEAP_USABLE // row)) * PAGE}
    if toasted:
        data = value - 4  # the value without its varlena header, cut into chunks
        chunks = [TOAST_CHUNK] * (data // TOAST_CHUNK) + ([data % TOAST_CHUNK] if data % TOAST_CHUNK else [])
        sizes = [maxalign(36 + c) + LINE_POINTER for c in chunks]
        parts["toast"] = _sequential_pages(sizes, count) * PAGE
        total_chunks = count * len(chunks)
        leaves = ceil_div(total_chunks, BTREE_LEAF_ENTRIES)
        parts["toast index"] = (1 + leaves + (1 if leaves > 1 else 0)) * PAGE
    else:
        parts["toast index"] = PAGE  # the empty TOAST table's index: its metapage
    return parts


def _sequential_pages(sizes: list[int], count: int) -> int:
    """Pages used when ``count`` values of tuples ``sizes`` are appended in order (a new page when
    the next tuple does not fit); the pattern repeats, so at most one cycle is simulated."""
    pages, free, seen, value = 1, HEAP_USABLE, {}, 0
    while value < count:
        if free in seen:  # the same state again: the rest repeats this cycle
            first_value, first_pages = seen[free]
            cycle_values, cycle_pages = value - first_value, pages - first_pages
            cycles = (count - value) // cycle_values
            value, pages = value + cycles * cycle_values, pages + cycles * cycle_pages
            seen = {}
            if value >= count:
                break
        seen[free] = (value, pages)
        for size in sizes:
            if size > free:
                pages, free = pages + 1, HEAP_USABLE
            free -= size
        value += 1
    return pages
