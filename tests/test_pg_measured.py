"""The measured pgvector sizes shipped as data (analyses/search/pg_measured.py) against the formulas:
no server needed. The rows are docs/search.md's dimension-dial table; a changed formula that stops
reproducing a measured HNSW page count on vector or halfvec, or leaving a bit one outside its
simulated range, fails here."""

from __future__ import annotations

import json

from contextlens.analyses.search.pg_measured import MEASURED, dimension_dial


def test_the_table_is_complete_and_hnsw_vector_halfvec_predicted_exactly():
    cells = {(r.dim, r.type, r.index) for r in MEASURED}
    assert cells == {(d, t, i) for d in (384, 768, 1024, 1536) for t in ("vector", "halfvec", "bit")
                     for i in ("hnsw", "ivfflat")}  # fmt: skip
    dial = dimension_dial()
    json.dumps(dial)  # plain JSON for the web
    for row in dial["rows"]:
        if row["index"] == "hnsw" and row["type"] != "bit":
            assert row["predicted_exactly"], row
        elif row["index"] == "hnsw":  # bit: in the 95% range of the simulated builds (random levels)
            low, high = row["index_pages_range"]
            assert low <= row["index_pages"] <= high and not row["predicted_exactly"], row
        else:  # IVFFlat: k-means decides the lists; expected with binomial lengths, within 3% here
            assert abs(row["index_pages_predicted"] - row["index_pages"]) <= 0.03 * row["index_pages"], row
        assert row["index_bytes_per_vector"] == round(row["index_pages"] * 8192 / 10_000)
    by = {(r.dim, r.type, r.index): r for r in MEASURED}
    # the seeds' point: at 1024 dims halfvec is 3x smaller than vector, and 1024 costs what 1536 does
    assert by[(1024, "vector", "hnsw")].index_pages == 3 * by[(1024, "halfvec", "hnsw")].index_pages - 4
    assert by[(1024, "vector", "hnsw")].index_pages == by[(1536, "vector", "hnsw")].index_pages
