"""How pgvector lays an HNSW index out on pages, and why its page count is a random variable.

pgvector 0.8's in-memory build (hnswbuild.c, ``CreateGraphPages``) writes the elements in list
order, each as an element tuple ``MAXALIGN(72 + VARSIZE(value))`` followed by its neighbour tuple
``MAXALIGN(4 + 6·(level+2)·m)``, each with a 4-byte line pointer. A new page is started when the
page's free space (PostgreSQL's ``PageGetFreeSpace``: the gap less one line pointer) is below the
element tuple, or below both tuples together when both fit on one page at all (8,156 bytes,
``HNSW_MAX_SIZE``); a neighbour tuple that no longer fits goes on the next page. So the count is
greedy packing of tuples whose sizes depend on each element's **level**.

The levels are random: ``level = ⌊-ln(U) / ln(m)⌋`` with U from PostgreSQL's global PRNG, seeded
from strong random bits in every backend and not settable from SQL. A level ≥ l has probability
``m^-l`` (1 in 16 elements is above level 0 at m = 16). Where a page's slack absorbs the bigger
neighbour tuples (every ``vector`` and ``halfvec`` width measured here) the count is
``⌈N/k⌉ + 1`` for all practical draws: :func:`overflow_probability` bounds the chance that it is
not. Where it does not (``bit``: 24 small tuples to a page at 384 dimensions with 96 bytes left,
and one level-1 neighbour tuple is 96 bytes bigger), no formula can know the count before the
build, because the levels do not exist yet: :func:`page_draws` gives its distribution, and
:func:`replay` applies the same rule to the levels a built index really drew — read back from its
pages — and gets its page count, and every element's block, exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from contextlens.analyses.search import pg_pages

PAGE = 8192
USABLE = PAGE - 24 - 8  # page header, pgvector's special space (HnswPageOpaqueData)
LINE_POINTER = 4
MAX_SIZE = USABLE - LINE_POINTER  # HNSW_MAX_SIZE: the most one page can take of one element
SIMULATED = 20_000  # elements simulated per draw; bigger indexes are extrapolated from this many
DRAWS = 64
SAFE = 1e-3  # below this chance of any page leaving the k-per-page pattern, the count is called exact


def maxalign(x: int) -> int:
    return (x + 7) // 8 * 8


def element_tuple(value_bytes: int) -> int:
    """Bytes of one element tuple (a 72-byte header, then the value as stored: VARSIZE)."""
    return maxalign(72 + value_bytes)


def neighbour_tuple(level: int, m: int) -> int:
    """Bytes of one neighbour tuple: 2m slots at level 0, m more per level above it, 6 bytes each."""
    return maxalign(4 + 6 * (level + 2) * m)


def max_level(m: int) -> int:
    """pgvector's cap on a level (HnswGetMaxLevel): the neighbour tuple must fit on a page."""
    return min((PAGE - 24 - 8 - 4 - LINE_POINTER) // 6 // m - 2, 255)


def level_probabilities(m: int, tail: float = 1e-15) -> np.ndarray:
    """P(level = l) for l = 0, 1, ..., until what is left is below ``tail`` (m^-l - m^-(l+1))."""
    top = min(max_level(m), max(1, math.ceil(-math.log(tail) / math.log(m))))
    ge = np.array([float(m) ** -level for level in range(top + 2)])
    return ge[:-1] - ge[1:]


def draw_levels(count: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """Levels drawn as pgvector draws them: ``⌊-ln(U) · 1/ln(m)⌋``, capped."""
    u = 1.0 - rng.random(count)  # (0, 1]: -ln stays finite
    return np.minimum((-np.log(u) / math.log(m)).astype(np.int64), max_level(m))


def place_elements(element_sizes: np.ndarray, neighbour_sizes: np.ndarray) -> tuple[int, np.ndarray]:
    """pgvector's rule, element by element: the index's page count (the metapage included) and the
    block of each element tuple. Exact for a given order of tuple sizes."""
    blocks = np.empty(len(element_sizes), dtype=np.int64)
    block, gap = 1, USABLE  # block 0 is the metapage
    for i, (e, n) in enumerate(zip(element_sizes.tolist(), neighbour_sizes.tolist(), strict=True)):
        both = e + n + LINE_POINTER
        free = max(0, gap - LINE_POINTER)
        if free < e or (both <= MAX_SIZE and free < both):
            block, gap = block + 1, USABLE
        blocks[i] = block
        gap -= e + LINE_POINTER
        if max(0, gap - LINE_POINTER) < n:
            block, gap = block + 1, USABLE
        gap -= n + LINE_POINTER
    return block + 1, blocks


def per_page(element: int, m: int) -> int:
    """Elements of level 0 that share one page: ``⌊8160 / (element + neighbours + 8)⌋`` (0 when an
    element and its neighbour tuple cannot share a page)."""
    both = element + neighbour_tuple(0, m)
    return USABLE // (both + 2 * LINE_POINTER) if both + LINE_POINTER <= MAX_SIZE else 0


def formula_pages(count: int, element: int, m: int) -> int:
    """``⌈N/k⌉ + 1`` with every element at level 0; two pages an element when the tuples cannot share."""
    k = per_page(element, m)
    return math.ceil(count / k) + 1 if k else 2 * count + 1


def overflow_probability(count: int, element: int, m: int) -> float:
    """An upper bound on the chance that the page count of ``count`` elements is not
    :func:`formula_pages`: that on some page the extra bytes of the upper-level neighbour tuples of
    ``k`` elements exceed the page's slack (the level distribution convolved ``k`` times), times the
    number of pages. 0 when the tuples cannot share a page (two pages each, whatever the levels)."""
    k = per_page(element, m)
    if not k:  # element and neighbour tuple too big to share a page: two pages each, whatever the levels
        return 0.0
    slack = USABLE - k * (element + neighbour_tuple(0, m) + 2 * LINE_POINTER)
    probabilities = level_probabilities(m)
    extra = np.array([neighbour_tuple(level, m) - neighbour_tuple(0, m) for level in range(len(probabilities))])
    dist = np.zeros(slack + 1)  # P(total extra = b) for b <= slack; what falls past it overflows
    dist[0] = 1.0
    for _ in range(k):
        new = np.zeros_like(dist)
        for p, e in zip(probabilities, extra, strict=True):
            if e <= slack:
                new[e:] += p * dist[: slack + 1 - e]
        dist = new
    per_page_overflow = max(0.0, 1.0 - float(dist.sum()))
    return min(1.0, per_page_overflow * math.ceil(count / k))


@dataclass(frozen=True)
class PageDistribution:
    """The page count of an HNSW index over the random levels: its median and the 2.5 and 97.5
    percentiles of the simulated draws (past ``SIMULATED`` elements, mean ± 1.96 of the scaled
    spread and of the simulation's own error in the mean); ``exact`` when :func:`overflow_probability` proves (to within
    ``SAFE``) that every draw is the formula, and then nothing was simulated (``draws`` 0)."""

    median: int
    low: int
    high: int
    mean: float
    sd: float  # the standard deviation over the draws (0 when exact)
    draws: int
    simulated: int  # elements per draw (fewer than N: the spread is extrapolated)
    formula: int
    exact: bool
    overflow_probability: float | None  # bound on any page leaving the pattern (when exact)


def page_draws(count: int, element: int, m: int, draws: int = DRAWS, seed: int = 0) -> PageDistribution:
    """The distribution of the page count over pgvector's random levels, by simulating its rule on
    ``draws`` independent level sequences (all at once). Past ``SIMULATED`` elements the pages per
    element and their spread are scaled from that many (greedy packing of independent sizes is a
    renewal process: the mean grows with N, the spread with √N)."""
    formula = formula_pages(count, element, m)
    bound = overflow_probability(count, element, m)
    if bound < SAFE:
        return PageDistribution(formula, formula, formula, float(formula), 0.0, 0, 0, formula, True, bound)
    n = min(count, SIMULATED)
    rng = np.random.default_rng(seed)
    levels = draw_levels(n * draws, m, rng).reshape(draws, n)
    table = np.array([neighbour_tuple(level, m) for level in range(max_level(m) + 1)])
    neighbours = table[levels]
    if per_page(element, m) and (element + neighbours.max() + LINE_POINTER) <= MAX_SIZE:
        pages = pack_rows(element + neighbours + 2 * LINE_POINTER)
    else:  # tuples that cannot always share a page: the rule element by element
        elements = np.full(n, element)
        pages = np.array([place_elements(elements, row)[0] for row in neighbours])
    graph = pages - 1.0
    scale = count / n
    mean = 1.0 + graph.mean() * scale
    spread = graph.std() * math.sqrt(scale)
    if n == count:
        low, high = np.percentile(pages, [2.5, 97.5])
        median = float(np.median(pages))
    else:  # the build-to-build spread, and the simulation's own error in the mean, scaled up with it
        error = graph.std() * scale / math.sqrt(draws)
        width = 1.96 * math.sqrt(spread**2 + error**2)
        median, low, high = mean, mean - width, mean + width
    return PageDistribution(
        median=round(median), low=math.floor(low), high=math.ceil(high), mean=round(mean, 1),
        sd=round(spread, 2), draws=draws,
        simulated=n, formula=formula, exact=False,
        overflow_probability=None,
    )  # fmt: skip


def pack_rows(sizes: np.ndarray) -> np.ndarray:
    """Pages (the metapage included) of each row of ``sizes`` (element + neighbour + two line
    pointers, all sharing a page) packed in order, a new page when the next does not fit in 8,160
    bytes; the rows advance together, one page per step, by binary search in their running sums."""
    draws, n = sizes.shape
    ends = np.cumsum(sizes, axis=1)
    offset = (np.arange(draws) * (int(ends[:, -1].max()) + USABLE + 1))[:, None]
    flat = (ends + offset).ravel()
    start = np.zeros(draws, dtype=np.int64)  # the first element of each row's current page
    pages = np.ones(draws, dtype=np.int64)  # the metapage
    rows = np.arange(draws)
    while True:
        open_rows = start < n
        if not open_rows.any():
            return pages
        base = np.where(start > 0, ends[rows, np.maximum(start - 1, 0)], 0) + offset[:, 0]
        stop = np.searchsorted(flat, base + USABLE, side="right") - rows * n
        stop = np.minimum(stop, n)
        pages += open_rows
        start = np.where(open_rows, np.maximum(stop, start + 1), start)


# --- a built index, read back --------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    """A built index's own levels, read from its pages, and the rule applied to them."""

    pages: int  # the rule's page count on the index's levels, in the index's order
    measured_pages: int  # the pages of the index file
    same_blocks: bool  # every element tuple on the block the rule puts it on
    levels: list[int]  # elements per level, from 0


def replay(conn, index: str, element: int, m: int) -> Replay:
    """The rule on the levels ``index`` drew: its page count and blocks, beside the real ones."""
    data = pg_pages.read_index_file(conn, index)
    levels, blocks = pg_pages.hnsw_elements(data)
    neighbours = np.array([neighbour_tuple(level, m) for level in levels.tolist()], dtype=np.int64)
    pages, placed = place_elements(np.full(len(levels), element), neighbours)
    return Replay(
        pages=pages, measured_pages=len(data) // PAGE, same_blocks=bool(np.array_equal(placed, blocks)),
        levels=np.bincount(levels).tolist() if len(levels) else [],
    )  # fmt: skip
