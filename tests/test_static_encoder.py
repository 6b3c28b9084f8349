"""A static model as the sentence encoder of `index build` / `index search` and `eval retrieval`:
its provenance recorded in the index, a query from another encoder (or from the same name made
again) refused, its retrieval row and encode speed beside the teacher's in one run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.benchmarks.retrieval import evaluate_lee
from contextlens.analyses.search.encoders import StaticTextEncoder
from contextlens.analyses.search.index import IndexMismatchError, VectorIndex, load_documents, search_index
from contextlens.core.static_models import load_static
from contextlens.data.lee import load_lee
from helpers import M2V, W2V, run_cli


@pytest.fixture(scope="module")
def lee_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("lee") / "lee.txt"
    path.write_text("\n".join(load_lee().documents[:20]) + "\n", encoding="utf-8")
    return path


def test_distilled_index_ranks_by_the_static_models_own_cosines(made_statics, lee_file, tmp_path):
    docs = load_documents(lee_file)
    encoder = StaticTextEncoder(M2V)
    built = VectorIndex.build(docs, encoder)
    folder = built.save(tmp_path / "idx", model_source=encoder.model_source)
    result = search_index(folder, docs[3].text, k=3)
    assert result.hits[0].id == docs[3].id and result.hits[0].score == pytest.approx(1.0, abs=1e-5)
    static = load_static(M2V)
    vectors = static.encode([d.text for d in docs])
    expected = np.argsort(-(vectors @ vectors[3]), kind="stable")[:3]
    assert [h.id for h in result.hits] == [docs[i].id for i in expected]
    manifest = json.loads(next((tmp_path / "idx").glob("v-*/manifest.json")).read_text())
    assert manifest["encoder"] == {"model": M2V, "kind": "static", "layer": None, "dim": 64, "precision": "fp32"}
    assert manifest["static"]["made"] == "distilled from minilm"
    assert manifest["static"]["fingerprint"].startswith("made:")


def test_a_query_from_another_encoder_is_refused(made_statics, lee_file, tmp_path, minilm):
    folder = VectorIndex.build(load_documents(lee_file), StaticTextEncoder(W2V)).save(tmp_path / "idx")
    with pytest.raises(IndexMismatchError, match="query asks for model 'minilm'"):
        search_index(folder, "markets", model="minilm")
    with pytest.raises(IndexMismatchError, match="query asks for the static model 'glove-50d'"):
        search_index(folder, "markets", static="glove-50d")
    with pytest.raises(IndexMismatchError, match="model differs"):  # a loaded encoder of another model
        VectorIndex.load(folder).search(StaticTextEncoder(M2V), ["markets"])
    contextual = tmp_path / "ctx"
    from contextlens.analyses.search.encoders import make_encoder

    VectorIndex.build(load_documents(lee_file), make_encoder(minilm)).save(contextual)
    with pytest.raises(IndexMismatchError, match="query asks for the static model"):
        search_index(contextual, "markets", static=W2V)


def test_a_static_model_made_again_under_the_same_name_is_refused(tmp_path, monkeypatch, lee_file):
    from contextlens.analyses.static.train import train_static

    monkeypatch.setenv("CONTEXTLENS_CACHE", str(tmp_path / "cache"))
    small = {"epochs": 1, "min_count": 2, "dim": 16}
    train_static("lee", name="w", **small)
    folder = VectorIndex.build(load_documents(lee_file), StaticTextEncoder("w")).save(tmp_path / "idx")
    assert search_index(folder, "markets", k=1).hits
    train_static("lee", name="w", seed=1, force=True, **small)  # another model under the same name
    with pytest.raises(IndexMismatchError, match="that name now stands for another model"):
        search_index(folder, "markets")


def test_cli_index_build_and_search_with_a_static_model(made_statics, lee_file, tmp_path):
    out = tmp_path / "idx"
    built = run_cli("index", "build", str(lee_file), "--out", str(out), "--static", W2V)
    assert built.returncode == 0, built.stderr
    assert f"{W2V} static (32-d)" in built.stdout.replace("\n", " ")
    found = run_cli("index", "search", str(out), "stock market", "-k", "2", "--json")
    assert found.returncode == 0, found.stderr
    doc = json.loads(found.stdout)
    assert doc["encoder"]["kind"] == "static" and len(doc["hits"]) == 2
    refused = run_cli("index", "search", str(out), "stock market", "--model", "minilm")
    assert refused.returncode == 2 and "drop --model" in refused.stderr and "Traceback" not in refused.stderr
    both = run_cli("index", "build", str(lee_file), "--out", str(tmp_path / "x"), "--static", W2V, "--kind", "sentence")
    assert both.returncode == 2 and "--kind" in both.stderr and "Traceback" not in both.stderr
    kind = run_cli("index", "build", str(lee_file), "--out", str(tmp_path / "y"), "--kind", "static")
    assert kind.returncode == 2 and "--static" in kind.stderr


def test_eval_retrieval_puts_the_static_models_beside_the_teacher_with_the_speed_ratio(made_statics, minilm):
    result = evaluate_lee(minilm, quick=True, statics=[M2V, W2V])
    for name in (M2V, W2V):
        rows = result.select(kind="static", static=name)
        assert {r["metric"] for r in rows} == {"spearman", "ndcg@10"}
        assert all(r["dtype"] == "float32" and r["reduction"] is None for r in rows)
    speed = {r["system"]: r for r in result.meta["speed"]["rows"]}
    assert set(speed) == {M2V, W2V, "minilm"} and speed["minilm"]["times_faster"] == 1.0
    assert speed[M2V]["times_faster"] > 10  # a table look-up against a forward pass (~200x measured)
    assert result.meta["speed"]["texts"] == 20 and result.meta["speed"]["words"] > 0
    json.dumps(result.to_dict(), allow_nan=False)


def test_cli_eval_retrieval_static_table_speed_and_errors(made_statics):
    done = run_cli("eval", "retrieval", "-m", "minilm", "--quick", "--static", M2V)
    assert done.returncode == 0, done.stderr
    assert f"static {M2V}" in done.stdout and "encode speed" in done.stdout and "x minilm sentence" in done.stdout
    twice = run_cli("eval", "retrieval", "-m", "minilm", "--quick", "-s", M2V, "-s", M2V)
    assert twice.returncode == 2 and "--static names a model twice" in twice.stderr
    unknown = run_cli("eval", "retrieval", "-m", "minilm", "--quick", "-s", "no-such-static")
    assert unknown.returncode == 2 and "unknown static model" in unknown.stderr
