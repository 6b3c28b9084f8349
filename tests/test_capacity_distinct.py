"""Issue 36, item 5: pgvector folds identical vectors into one HNSW element (up to 10 rows each), so
`capacity --data` counts the data's distinct vectors for the page formula, and `index build
--dedupe` records how many documents it folded in the manifest and says it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.search.distinct_vectors import count_array, count_texts, elements_of
from contextlens.analyses.search.pg_capacity import pg_estimate, pg_measure
from contextlens.analyses.search.pg_index import PgIndexConfig
from contextlens.errors import DataFileError, ParameterError
from helpers import run_cli


def _data(tmp_path, distinct=300, copies=(6, 25), dim=64):
    """``distinct`` random unit rows, then row 0 repeated ``copies[0]`` more times, row 1 ``copies[1]``."""
    x = np.random.default_rng(0).normal(size=(distinct, dim)).astype(np.float32)
    rows = [x] + [np.repeat(x[i : i + 1], c, axis=0) for i, c in enumerate(copies)]
    path = tmp_path / "v.npy"
    np.save(path, np.concatenate(rows))
    return path


def test_an_array_counts_distinct_vectors_and_the_elements_they_fold_into(tmp_path):
    counted = count_array(_data(tmp_path), "float32")
    assert (counted.rows, counted.distinct, counted.dim) == (300 + 6 + 25, 300, 64)
    # row 0 is in 7 rows (one element), row 1 in 26 (three: 10 rows an element)
    assert counted.elements == 298 + 1 + 3 == elements_of([1] * 298 + [7, 26])
    assert counted.folded == counted.rows - counted.elements
    # a row that is another's multiple is the same unit vector: stored normalized, it folds too
    np.save(tmp_path / "s.npy", np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 1.0]], dtype=np.float32))
    assert count_array(tmp_path / "s.npy").distinct == 2
    # binary compares the sign bits: two vectors with the same signs are one element
    np.save(tmp_path / "b.npy", np.array([[0.5, -1.0], [0.9, -0.1], [-1.0, 1.0]], dtype=np.float32))
    assert count_array(tmp_path / "b.npy", "binary").distinct == 2 < count_array(tmp_path / "b.npy").distinct
    assert count_texts(["a  b", "a b", "c"], "t").distinct == 2
    (tmp_path / "bad.npy").write_text("not an array")
    with pytest.raises(DataFileError, match="not a .npy array"):
        count_array(tmp_path / "bad.npy")


def test_the_hnsw_formula_counts_elements_the_table_every_row():
    config = PgIndexConfig("hnsw", {}, "float32")
    rows, elements = 10_000, 9_881  # 10,000 WordNet definitions, 9,881 distinct
    folded, plain = pg_estimate(config, rows, 384, elements), pg_estimate(config, rows, 384)
    assert folded.index_pages == pg_estimate(config, elements, 384).index_pages < plain.index_pages
    assert folded.table_bytes == plain.table_bytes  # every row is in the heap
    assert folded.build_memory_bytes == pg_estimate(config, elements, 384).build_memory_bytes
    assert folded.elements == elements and any("9,881 HNSW elements" in n for n in folded.notes)
    with pytest.raises(ParameterError, match="at most `count`"):
        pg_estimate(config, 10, 8, elements=11)


def test_a_build_on_data_with_duplicates_has_the_pages_the_distinct_count_predicts(pg, tmp_path):
    path = _data(tmp_path, distinct=1200, copies=(40, 15), dim=384)
    x = np.load(path)
    counted = count_array(path)
    result = pg_measure(PgIndexConfig("hnsw", {}, "float32"), len(x), 384, memory_probe=False, vectors=x)
    rows_as_elements = pg_estimate(PgIndexConfig("hnsw", {}, "float32"), len(x), 384)
    print(f"rows {len(x)}, elements {counted.elements}: predicted {result.index_pages} pages "
          f"(rows counted: {rows_as_elements.index_pages}), built {result.measured['index_pages']}")  # fmt: skip
    assert result.elements == counted.elements == 1198 + 5 + 2
    assert result.index_pages == result.measured["index_pages"] < rows_as_elements.index_pages
    assert sum(result.measured["replay"]["levels"]) == counted.elements


def test_cli_capacity_data(tmp_path):
    path = _data(tmp_path)
    proc = run_cli("capacity", "--engine", "pgvector", "--index", "hnsw", "--data", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["count"], out["dim"], out["elements"]) == (331, 64, 302)
    assert out["data"]["distinct"] == 300 and out["data"]["folded"] == 29
    table = " ".join(run_cli("capacity", "--engine", "pgvector", "--index", "hnsw", "--data", str(path)).stdout.split())
    assert "331 rows, 300 distinct" in table and "302 HNSW elements (29 rows folded)" in table
    (tmp_path / "d.txt").write_text("the river bank\nthe money bank\nthe river  bank\n")
    docs = json.loads(run_cli("capacity", "--engine", "pgvector", "--index", "hnsw", "--data",
                              str(tmp_path / "d.txt"), "-d", "384", "--json").stdout)  # fmt: skip
    assert (docs["count"], docs["elements"]) == (3, 2)
    for args, message in (
        (["--data", str(tmp_path / "d.txt")], "give --dim"),
        (["--data", str(path), "-n", "5"], "--count 5 but --data holds 331 rows"),
        (["--data", str(path), "-d", "8"], "--dim 8 but --data's vectors have 64"),
        ([], "give --count and --dim, or --data"),
    ):
        bad = run_cli("capacity", "--engine", "pgvector", *args)
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr


def test_index_build_dedupe_is_in_the_manifest_and_the_output(tmp_path):
    (tmp_path / "d.txt").write_text("the river bank\nthe money bank\nthe river bank\nthe river bank\n")
    args = ["index", "build", str(tmp_path / "d.txt"), "--static", "glove-50d", "--dedupe"]
    proc = run_cli(*args, "--out", str(tmp_path / "i"), "--json")
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads(proc.stdout)
    assert manifest["count"] == 2 and manifest["dedupe"] == {"documents_read": 4, "folded": 2, "indexed": 2}
    shown = run_cli(*args, "--out", str(tmp_path / "j"))
    assert "(2 duplicates folded by --dedupe)" in " ".join(shown.stdout.split())
    plain = json.loads(run_cli(*args[:-1], "--out", str(tmp_path / "k"), "--json").stdout)
    assert "dedupe" not in plain and plain["count"] == 4
