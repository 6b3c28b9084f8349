"""The three kinds of embedding for one text, and the lesson's cost-of-a-dimension table (issue 20)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from contextlens.analyses.lesson.divergence import compare
from contextlens.analyses.lesson.kinds import three_kinds
from contextlens.core.similarity import cosine_values
from contextlens.errors import InputError

TEXTS = ["We walked along the river [bank].", "I opened a [bank] account."]


def test_each_kind_gives_its_own_shape_and_cosine(minilm, glove):
    result = three_kinds(TEXTS, minilm, glove)
    static, row, hidden, sentence = result.kinds
    assert [k.dimensions for k in result.kinds] == [50, 384, 384, 384]
    assert static.cosine == 1.0 and row.cosine == 1.0  # a lookup: the same vector in both texts
    assert result.layer == 6 and hidden.kind == "hidden state (layer 6)"
    # the same cosine to float noise: an occurrence's states come from the model's cache when an
    # earlier test encoded it, in a batch of another shape, and on an AVX-512 CPU that moves the
    # cosine's 8th digit (4e-8 seen); a wrong layer or pooling moves its 3rd
    assert hidden.cosine == pytest.approx(compare(TEXTS, minilm, glove).matrices[-1][0, 1], abs=1e-6)
    assert hidden.cosine < 0.9  # context moved the two banks apart
    want = minilm.embed_sentences([t.replace("[", "").replace("]", "") for t in TEXTS])
    assert sentence.cosine == pytest.approx(cosine_values(want[0], want[1]), abs=1e-9)
    assert sentence.norm == pytest.approx(1.0, abs=1e-5)  # minilm's own pooling normalises
    assert sentence.vectors_per_text == [1, 1] and static.vectors_per_text == [6, 5]
    assert hidden.vectors_per_text == row.vectors_per_text and hidden.vectors_per_text[0] > 5  # tokens + specials
    assert hidden.baseline is not None and 0 <= hidden.percentile <= 100  # beside its random-word baseline
    doc = result.to_dict()
    assert doc["kinds"][2]["bytes_per_vector"] == 1536 and "random pairs" in doc["baseline"]


def test_two_texts_of_one_word_or_a_clear_error(minilm, glove):
    with pytest.raises(InputError, match="exactly two texts"):
        three_kinds(TEXTS[:1], minilm, glove)
    with pytest.raises(InputError, match="the two targets differ"):
        three_kinds(["The [river] rose.", "I opened a [bank] account."], minilm, glove)


def test_cost_rows_are_the_capacity_formulas():
    from contextlens.analyses.search.capacity import estimate
    from contextlens.analyses.search.dimension_cost import cost_rows
    from contextlens.analyses.search.index_config import IndexConfig
    from contextlens.analyses.search.pg_capacity import pg_estimate
    from contextlens.analyses.search.pg_index import PgIndexConfig

    rows = {r["dimensions"]: r for r in cost_rows([384, 1024, 3072])}
    assert rows[384]["flat"] == estimate(IndexConfig("flat"), 10**6, 384).bytes
    assert rows[384]["flat"] >= 10**6 * 384 * 4  # vectors x dimensions x 4 bytes, at least
    pg = pg_estimate(PgIndexConfig("hnsw", dtype="float32"), 10**6, 384)
    assert rows[384]["pg_vector_hnsw"] == pg.index_bytes + pg.table_bytes
    # pgvector's index holds 4 384-d elements per 8 KiB page (2,049 bytes each, measured: docs/search.md)
    assert pg.index_bytes == (int(np.ceil(10**6 / 4)) + 1) * 8192
    assert rows[3072]["pg_vector_hnsw"] is None and rows[3072]["pg_halfvec_hnsw"] is not None  # over 2,000 dims


def test_the_lesson_shows_both_sections(minilm):
    from fastapi.testclient import TestClient

    from contextlens.web.app import create_app

    page = TestClient(create_app("minilm"), base_url="http://127.0.0.1").get("/lesson").text
    page = re.sub(r' data-label="[^"]*"', "", page)  # each cell names its column for a phone's cards
    assert "4. The three kinds in numbers, plus the static vector for contrast" in page
    assert "<table id='kinds' class='cards'>" in page
    assert "5. The cost of a dimension" in page and "<table id='cost' class='cards'>" in page
    assert "1,000,000 vectors of 384 float32 dimensions (minilm) take 1.43 GiB" in page
    assert "refused (over 2,000)" in page  # pgvector's HNSW limit on vector, at 3072 dimensions
    # the dimension dial as measured in PostgreSQL: a row per dimension and stored type, with the prediction
    assert "<table id='cost-measured' class='cards'>" in page
    assert "<tr><td>1024</td><td>halfvec</td><td>2,732</td><td>2,192</td><td>3,335</td><td>3,335 (exact)</td>" in page
    assert "random levels)" in page  # the bit rows: a range, not a claim of exactness
