"""The retrieval benchmark: data layout, metrics, codings, and a quick real run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.benchmarks.retrieval import Coder, Coding, codings, evaluate_lee, load_lee
from contextlens.analyses.measures.retrieval_scores import gold_ranks, lee_scores, ndcg_at_k, wordnet_scores
from helpers import run_cli


def test_lee_layout():
    lee = load_lee()
    assert len(lee.documents) == 50 and len(lee.background) == 300
    r = lee.ratings
    assert r.shape == (50, 50)
    np.testing.assert_array_equal(r, r.T)
    np.testing.assert_array_equal(np.diag(r), np.ones(50))
    upper = r[np.triu_indices(50, 1)]
    assert upper.min() == pytest.approx(0.2) and upper.max() == pytest.approx(1.0)


def test_ndcg_and_spearman_on_known_orders():
    ratings = load_lee().ratings
    assert ndcg_at_k(ratings, ratings) == pytest.approx(1.0)
    assert lee_scores(ratings, ratings)["spearman"] == pytest.approx(1.0)
    worst = ndcg_at_k(-ratings, ratings)
    rng = np.random.default_rng(1)
    random = ndcg_at_k(rng.random(ratings.shape), ratings)
    assert worst < random < 1.0


def test_gold_ranks_and_wordnet_metrics():
    sims = np.array([[0.9, 0.1, 0.2], [0.8, 0.5, 0.1], [0.3, 0.4, 0.2]])  # gold on the diagonal
    np.testing.assert_array_equal(gold_ranks(sims), [1, 2, 3])
    scores = wordnet_scores(sims)
    assert scores["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert scores["recall@1"] == pytest.approx(1 / 3) and scores["recall@10"] == 1.0
    tied = np.ones((3, 3))
    assert wordnet_scores(tied)["recall@1"] == 0.0  # ties count against the gold


def test_codings_and_their_similarities():
    rng = np.random.default_rng(0)
    fit, x = rng.standard_normal((200, 64)), rng.standard_normal((5, 64))
    plan = codings(64, 200)
    assert Coding(64, None, "binary") in plan and Coding(32, "pca", "int8") in plan
    assert all(c.dim < 64 for c in plan if c.reduction) and Coding(16, "truncate", "binary").bytes_per_vector == 2
    assert max(c.dim for c in codings(384, 50) if c.reduction == "pca") == 32  # PCA needs >= dim fit vectors
    full = Coder(Coding(64, None, "float32"), fit)(x)
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(full @ full.T, xn @ xn.T, atol=1e-5)
    binary = Coder(Coding(64, None, "binary"), fit)(x)
    bits = x > 0
    hamming = (bits[:, None, :] != bits[None, :, :]).sum(-1)
    np.testing.assert_allclose(binary @ binary.T, 1 - 2 * hamming / 64, atol=1e-6)
    int8 = Coder(Coding(64, None, "int8"), fit)(x)
    assert np.abs(int8 @ int8.T - xn @ xn.T).max() < 0.02
    pca = Coder(Coding(8, "pca", "float32"), fit)(x)
    assert pca.shape == (5, 8)


@pytest.fixture(scope="module")
def quick_lee():
    return evaluate_lee("minilm", quick=True)


def test_quick_lee_rows_and_ranking_of_kinds(quick_lee):
    r = quick_lee
    assert r.benchmark == "retrieval-lee" and r.model == "minilm" and r.meta["documents"] == 20
    keys = {"kind", "layer", "dim", "reduction", "dtype", "bytes_per_vector", "metric", "value"}
    assert all(set(row) == keys for row in r.rows)
    layers = {row["layer"] for row in r.select(kind="hidden-mean")}
    assert layers == set(range(7))
    for row in r.rows:
        per_value = {"float32": 4, "float16": 2, "int8": 1, "binary": 1 / 8}[row["dtype"]]
        assert row["bytes_per_vector"] == row["dim"] * per_value

    def full(kind, metric):
        (row,) = r.select(kind=kind, metric=metric, reduction=None, dtype="float32")
        return row["value"]

    for metric in ("spearman", "ndcg@10"):
        assert full("sentence", metric) > full("input-row", metric)
    assert full("sentence", "ndcg@10") > r.meta["random_ndcg@10"]


def test_cli_eval_retrieval_quick(tmp_path):
    png = tmp_path / "lee.png"
    proc = run_cli("eval", "retrieval", "--model", "minilm", "--quick", "--json", "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["benchmark"] == "retrieval-lee" and out["model"] == "minilm"
    assert {"kind", "dim", "dtype", "bytes_per_vector", "metric", "value"} <= set(out["rows"][0])
    assert png.stat().st_size > 10_000
    bad = run_cli("eval", "retrieval", "--model", "minilm", "--task", "imdb")
    assert bad.returncode == 2 and "unknown --task" in bad.stderr


def test_cli_eval_retrieval_wordnet_quick():
    proc = run_cli("eval", "retrieval", "--model", "minilm", "--task", "wordnet", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["benchmark"] == "retrieval-wordnet" and out["meta"]["queries"] == 100
    assert {r["metric"] for r in out["rows"]} == {"mrr", "recall@1", "recall@10"}
    (sentence,) = [
        r["value"]
        for r in out["rows"]
        if r["kind"] == "sentence" and r["metric"] == "mrr" and r["reduction"] is None and r["dtype"] == "float32"
    ]
    assert sentence > 5 * out["meta"]["random_mrr"]


def test_retrieval_to_dict_and_its_table_are_plain_json(quick_lee):
    from contextlens.analyses.benchmarks.retrieval_table import retrieval_table
    from helpers import assert_plain_json

    assert_plain_json(quick_lee.to_dict())
    table = retrieval_table(quick_lee)
    assert_plain_json(table.to_dict())
    assert table.metrics == ["spearman", "ndcg@10"] and table.title == "retrieval-lee — minilm (20 documents, quick)"
    fulls = [row.full for row in table.rows]
    assert fulls == sorted(fulls, reverse=True)  # full float32 rows first, then the cost sweep
    assert len(table.rows) * len(table.metrics) == len(quick_lee.rows)
    for metric in table.metrics:
        best = max(row.values[metric] for row in table.rows)
        assert [row for row in table.rows if metric in row.best] == [
            row for row in table.rows if row.values[metric] == best
        ]
    assert set(table.chance) == {"ndcg@10"} and table.chance["ndcg@10"] == quick_lee.meta["random_ndcg@10"]


def test_cli_eval_retrieval_checks_the_plot_path_before_the_work(tmp_path):
    (tmp_path / "afile").write_text("x")
    # the model does not exist: a check that ran after the work would report the model instead
    for plot, needle in ((tmp_path / "f.xyz", "suffix"), (tmp_path / "afile" / "f.png", "is a file")):
        proc = run_cli("eval", "retrieval", "--model", "no-such-model", "--quick", "--plot", str(plot))
        assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_cli_eval_retrieval_plot_without_suffix_gets_png_and_reports_it(tmp_path):
    proc = run_cli("eval", "retrieval", "--model", "minilm", "--quick", "--plot", str(tmp_path / "fig"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "fig.png").stat().st_size > 10_000 and "fig.png" in proc.stderr
    assert "chance level (ndcg@10)" in proc.stdout and "input-row" in proc.stdout


def test_wordnet_only_options_are_refused_for_lee():
    """--sample and --seed pick WordNet synsets; with the Lee task they were silently ignored."""
    from tests.helpers import run_cli

    for extra in (["--sample", "3"], ["--seed", "1"]):
        shown = run_cli("eval", "retrieval", "-m", "minilm", *extra)
        assert shown.returncode == 2 and "apply to --task wordnet" in shown.stderr
        assert len(shown.stderr.strip().splitlines()) == 1


def test_retrieval_typed_reads_are_its_documents_values(quick_lee):
    """The table and figure read the result's fields; each is what `--json` prints under meta."""
    from contextlens.analyses.benchmarks.retrieval import LEE_METRICS

    meta = quick_lee.to_dict()["meta"]
    assert quick_lee.scale == f"{meta['documents']} documents" and quick_lee.quick is meta["quick"]
    assert quick_lee.chance == {"ndcg@10": meta["random_ndcg@10"]} and quick_lee.fit_on == meta["fit_on"]
    assert quick_lee.speed is None and "speed" not in meta  # no static model was asked for
    assert set(quick_lee.metrics()) == set(LEE_METRICS)


def test_encode_speed_reads_the_recorded_table():
    """``meta["speed"]`` as typed rows; a note alone when nothing could be timed."""
    from contextlens.analyses.benchmarks.encode_speed import EncodeSpeed, speed_rows

    rows = [r | {"bytes": 8} for r in speed_rows([("a", 2.0), ("b", 0.5)], 10, 100, "a")]
    speed = EncodeSpeed.of({"texts": 10, "words": 100, "baseline": "a sentence", "rows": rows, "note": "n"})
    assert [r.system for r in speed.rows] == ["a", "b"] and [r.times_faster for r in speed.rows] == [1.0, 2.0 / 0.5]
    assert speed.rows[1].words_per_s == 100 / 0.5 and speed.rows[0].bytes == 8
    assert EncodeSpeed.of({"note": "no sentence embedding"}).rows == []
