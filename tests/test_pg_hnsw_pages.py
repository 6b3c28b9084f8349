"""pgvector's HNSW page layout as a model (no server: tests/test_pgvector.py checks it against real
builds): the vectorised packing equals the rule element by element, the level distribution is
pgvector's, and the exact/estimate line falls where the page slack says."""

from __future__ import annotations

import numpy as np

from contextlens.analyses.search import pg_hnsw_pages as pages
from contextlens.analyses.search.pg_capacity import pg_estimate, value_size
from contextlens.analyses.search.pg_index import PgIndexConfig


def _element(dim: int, dtype: str) -> int:
    return pages.element_tuple(value_size(dim, dtype))


def test_vectorised_packing_is_the_rule_element_by_element():
    rng = np.random.default_rng(3)
    for dim, dtype in ((384, "binary"), (1536, "binary"), (64, "binary"), (384, "float32")):
        element = _element(dim, dtype)
        levels = pages.draw_levels(8 * 3000, 16, rng).reshape(8, 3000)
        neighbours = np.vectorize(lambda level: pages.neighbour_tuple(level, 16))(levels)
        packed = pages.pack_rows(element + neighbours + 2 * pages.LINE_POINTER)
        one_by_one = [pages.place_elements(np.full(3000, element), row)[0] for row in neighbours]
        assert packed.tolist() == one_by_one


def test_levels_are_drawn_as_pgvector_draws_them():
    levels = pages.draw_levels(1_000_000, 16, np.random.default_rng(0))
    counts = np.bincount(levels, minlength=4)[:4]
    p = pages.level_probabilities(16)[:4]  # 15/16, 15/256, ...
    assert np.all(np.abs(counts - 1e6 * p) <= 5 * np.sqrt(1e6 * p * (1 - p)))  # 5 sd: never by chance
    assert abs(pages.level_probabilities(16).sum() - 1) < 1e-12
    assert pages.max_level(16) == 82  # (8192 - 40) // 6 // 16 - 2


def test_slack_decides_exact_or_estimate():
    # vector(384): 4 elements a page with 864 bytes left; overflowing needs levels summing to 10 on a page
    vector = pages.page_draws(20_000, _element(384, "float32"), 16)
    assert vector.exact and vector.median == vector.formula == 5_001 and vector.overflow_probability < 1e-5
    # bit(384): 24 a page with 96 bytes left, and one level-1 neighbour tuple takes 96 more
    bit = pages.page_draws(20_000, _element(384, "binary"), 16)
    assert not bit.exact and bit.formula == 835 and 845 <= bit.low <= bit.median <= bit.high <= 862
    # a tuple pair too big to share a page: two pages each whatever the levels (halfvec(4000))
    big = _element(4000, "float16")
    assert pages.per_page(big, 16) == 0
    assert pages.page_draws(500, big, 16).exact and pages.formula_pages(500, big, 16) == 1001
    levels = pages.draw_levels(500, 16, np.random.default_rng(1))
    neighbours = np.array([pages.neighbour_tuple(level, 16) for level in levels])
    assert pages.place_elements(np.full(500, big), neighbours)[0] == 1001


def test_estimate_of_a_large_bit_index_scales_the_simulation():
    small = pg_estimate(PgIndexConfig("hnsw", {}, "binary"), 20_000, 768)
    large = pg_estimate(PgIndexConfig("hnsw", {}, "binary"), 10**9, 768)
    assert not large.exact and large.index_pages_range[0] <= large.index_pages <= large.index_pages_range[1]
    per_element = (small.index_pages - 1) / 20_000
    assert abs((large.index_pages - 1) / 10**9 - per_element) < 0.002 * per_element
    assert "median of 64 simulated builds" in large.index_formula and "scaled" in large.index_formula
