"""--runtime torch|onnx wherever --precision is, and the runtime recorded wherever the precision is.

ONNX Runtime (core/onnx_runtime.py) is opt-in: its numbers must say so (``runtime`` in the JSON,
the export check on stderr), an index must not mix int8 vectors of two quantizers (fp32 across
runtimes is accepted: the graph is checked within 1e-4 of torch), a corpus folder must not mix
runtimes; attention weights on ONNX Runtime come from the checked fp32 attention graph only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from contextlens.analyses.search.encoders import TextEncoder, provenance_from_dict, text_provenance
from contextlens.analyses.search.index import Document, IndexMismatchError, VectorIndex, index_encoder
from contextlens.core.contextual_models import ContextualModel, load_contextual
from contextlens.core.occurrences import locate, parse_marked
from contextlens.errors import InputError
from tests.helpers import run_cli

DOCS = ["The river bank flooded after the storm.", "She opened an account at the bank.", "A cake with cherries."]
BANK = ["I sat on the river [bank].", "I opened a [bank] account."]


def one_line_error(r, text: str) -> None:
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and text in lines[0], r.stderr


def test_eval_on_onnx_says_so_and_matches_torch(minilm_onnx: ContextualModel) -> None:
    args = ("eval", "similarity", "--quick", "-m", "minilm", "--json")
    torch_run, onnx_run = run_cli(*args), run_cli(*args, "--runtime", "onnx")
    assert torch_run.returncode == 0 and onnx_run.returncode == 0, onnx_run.stderr
    a, b = json.loads(torch_run.stdout), json.loads(onnx_run.stdout)
    assert (a["meta"]["precision"], a["meta"]["runtime"]) == ("fp32", "torch")
    assert (b["meta"]["precision"], b["meta"]["runtime"]) == ("fp32", "onnx")
    assert "onnx fp32 vs torch fp32 (minilm" in onnx_run.stderr and "vs torch" not in torch_run.stderr
    ours = [(r, s) for r, s in zip(a["rows"], b["rows"], strict=True) if r["system"].startswith("minilm:")]
    assert ours and max(abs(r["value"] - s["value"]) for r, s in ours) < 1e-3  # checked within 1e-4 per state
    table = run_cli(*args[:-1], "--runtime", "onnx")
    assert table.returncode == 0 and "minilm (onnx fp32)" in table.stdout


@pytest.mark.parametrize("command", [("eval", "wic"), ("cka",), ("cost",), ("compare", "a [b]", "c [b]")])
def test_unknown_runtime_is_one_line(command: tuple[str, ...]) -> None:
    one_line_error(run_cli(*command, "-m", "minilm", "--runtime", "bogus"), "unknown runtime 'bogus'")


def test_runtime_is_offered_where_precision_is_except_where_attention_weights_are_read() -> None:
    commands = [("eval", name) for name in ("wic", "wsd", "wsi", "similarity", "contextuality", "layers", "retrieval")]
    commands += [("index", "build"), ("index", "search"), ("corpus", "extract")]
    commands += [(name,) for name in ("compare", "explore", "rank", "probe", "cka", "cost", "serve")]
    commands += [("attention",), ("trace",), ("demo",)]  # attention weights: the checked ONNX attention graph
    for command in commands:
        r = run_cli(*command, "--help")
        assert r.returncode == 0 and "--precision" in r.stdout and "--runtime" in r.stdout, command
    refused = run_cli("attention", *BANK, "-m", "minilm", "--runtime", "onnx", "--precision", "int8")
    assert refused.returncode == 2 and "--runtime" in refused.stderr  # no int8 attention graph


def test_attention_on_onnx_int8_is_refused_before_an_int8_export_is_made(tmp_path, monkeypatch) -> None:
    """On a machine with no int8 export yet, the refusal came after the export (a note, a quantization
    and its check, then the error): the refusal is one line, first, and nothing is exported."""
    monkeypatch.setenv("CONTEXTLENS_CACHE", str(tmp_path))
    refused = run_cli("attention", *BANK, "-m", "minilm", "--runtime", "onnx", "--precision", "int8")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "ONNX int8 has no attention graph" in refused.stderr and "exporting" not in refused.stderr
    assert not (tmp_path / "onnx").exists() or not any((tmp_path / "onnx").rglob("int8*"))


def test_the_api_refuses_attention_weights_on_onnx_int8() -> None:
    from contextlens.analyses.lesson.attention import attend
    from contextlens.analyses.lesson.trace import trace

    int8 = load_contextual("minilm", "int8", "onnx")  # fp32 has a checked attention graph; int8 has none
    with pytest.raises(InputError, match="attention weights come from the torch runtime"):
        attend([parse_marked(s) for s in BANK], int8, layer=2, head=0)
    with pytest.raises(InputError, match="attention weights come from the torch runtime"):
        trace(parse_marked(BANK[0]), int8)
    with pytest.raises(InputError, match="unknown runtime 'tensorrt'"):
        load_contextual("minilm", "fp32", "tensorrt")


def test_onnx_vectors_say_so(minilm: ContextualModel, minilm_onnx: ContextualModel) -> None:
    occ = locate("The [bank] lent money.")
    p = minilm_onnx.encode(occ, layers=[2]).hidden_state(2).provenance
    assert (p.precision, p.runtime) == ("fp32", "onnx") and p.to_dict()["runtime"] == "onnx"
    assert "(onnx fp32)" in p.describe()
    torch_p = minilm.encode(occ, layers=[2]).hidden_state(2).provenance
    assert torch_p.runtime == "torch" and "runtime" not in torch_p.to_dict() and "(" not in torch_p.describe()
    assert TextEncoder(minilm_onnx, "sentence").provenance.runtime == "onnx"
    assert minilm_onnx.identity != minilm.identity  # its own disk cache entries
    stored = {"model": "minilm", "kind": "sentence", "layer": None, "dim": 384, "precision": "fp32"}
    assert provenance_from_dict(stored).runtime == "torch"  # written before the field existed


def test_index_across_runtimes_fp32_accepted_int8_refused(minilm_onnx: ContextualModel, tmp_path: Path) -> None:
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(DOCS) + "\n")
    built_torch, built_onnx = tmp_path / "torch", tmp_path / "onnx"
    common = ("-m", "minilm", "--kind", "hidden-mean", "--layer", "3", "--json")
    b1 = run_cli("index", "build", str(docs), "--out", str(built_torch), *common)
    b2 = run_cli("index", "build", str(docs), "--out", str(built_onnx), *common, "--runtime", "onnx")
    assert b1.returncode == 0 and b2.returncode == 0, b2.stderr
    assert "runtime" not in json.loads(b1.stdout)["encoder"]  # a torch index's manifest is as it was
    assert json.loads(b2.stdout)["encoder"]["runtime"] == "onnx"
    # the onnx index is searched on onnx by default; an fp32 query on torch is accepted too
    own = run_cli("index", "search", str(built_onnx), "flooding river", "-k", "1", "--json")
    assert own.returncode == 0 and "onnx fp32 vs torch" in own.stderr, own.stderr
    doc = json.loads(own.stdout)
    assert doc["hits"][0]["text"] == DOCS[0] and "query_runtime" not in doc
    cross = run_cli("index", "search", str(built_torch), "flooding river", "-k", "1", "--runtime", "onnx", "--json")
    assert cross.returncode == 0, cross.stderr
    cdoc = json.loads(cross.stdout)
    assert cdoc["query_runtime"] == "onnx" and cdoc["hits"][0]["text"] == DOCS[0]
    assert cdoc["hits"][0]["score"] == pytest.approx(json.loads(own.stdout)["hits"][0]["score"], abs=1e-4)
    one_line_error(run_cli("index", "search", str(built_torch), "river", "--runtime", "bogus"), "unknown runtime")
    # int8 across runtimes is refused, from the manifest, before any model loads
    int8_index = VectorIndex(
        text_provenance("minilm", "hidden-mean", 3, 384, "int8"),
        VectorIndex.load(built_torch).config,
        VectorIndex.load(built_torch).index,
        [Document(str(i), t) for i, t in enumerate(DOCS)],
    )
    with pytest.raises(IndexMismatchError, match="different quantizers"):
        int8_index.check_encoder(text_provenance("minilm", "hidden-mean", 3, 384, "int8", "onnx"))
    int8_index.check_encoder(text_provenance("minilm", "hidden-mean", 3, 384, "int8"))  # the same quantizer
    VectorIndex.load(built_torch).check_encoder(text_provenance("minilm", "hidden-mean", 3, 384, "fp32", "onnx"))
    folder = int8_index.save(tmp_path / "int8")
    with pytest.raises(IndexMismatchError, match="different quantizers"):
        index_encoder(folder, runtime="onnx")
    one_line_error(run_cli("index", "search", str(folder), "river", "--runtime", "onnx"), "different quantizers")


def test_corpus_folder_records_its_runtime_and_refuses_another(
    minilm_onnx: ContextualModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextlens.analyses.corpus.extract import extract_corpus
    from contextlens.analyses.corpus.manifest import read_manifest
    from contextlens.analyses.corpus.senses import induce_senses
    from contextlens.core import contextual_models

    corpus = tmp_path / "bank.txt"
    corpus.write_text(
        "We walked along the river bank.\nThe bank raised its rates.\nFish swam by the muddy bank.\n"
        "The bank approved the loan.\n"
    )
    out = tmp_path / "onnx"
    args = ("corpus", "extract", str(corpus), "--words", "bank", "--out", str(out), "-m", "minilm", "--layers", "5")
    r = run_cli(*args, "--runtime", "onnx", "--json")
    assert r.returncode == 0, r.stderr
    manifest = json.loads(r.stdout)["manifest"]
    assert (manifest["precision"], manifest["runtime"], manifest["complete"]) == ("fp32", "onnx", True)
    one_line_error(run_cli(*args), "runtime='onnx', not 'torch'")  # torch vectors never join an onnx folder
    with pytest.raises(InputError, match="runtime='onnx', not 'torch'"):
        extract_corpus(str(corpus), ["bank"], out, model="minilm", layers=[5])
    # the sense vectors a label is measured against come from the extraction's runtime
    seen = []
    real = contextual_models.load_contextual
    monkeypatch.setattr(contextual_models, "load_contextual", lambda *a: seen.append(a) or real(*a))
    induce_senses(out, "bank", layer=5, k=2)
    assert seen and all(a == ("minilm", "fp32", "onnx") for a in seen), seen
    # a manifest written before the field existed reads as torch
    path = out / "manifest.json"
    data = json.loads(path.read_text())
    del data["runtime"]
    path.write_text(json.dumps(data))
    assert read_manifest(out).runtime == "torch"


def test_cost_times_and_weighs_the_onnx_graph_and_cka_records_runtimes(
    minilm: ContextualModel, minilm_onnx: ContextualModel, glove, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextlens.analyses.representations.cka import compare_layers
    from contextlens.analyses.search.cost import measure_cost
    from contextlens.core.onnx_graphs import OnnxGraphs
    from contextlens.data.text_sets import corpus_texts

    calls = []
    real = OnnxGraphs.run_layers
    monkeypatch.setattr(OnnxGraphs, "run_layers", lambda self, *a: calls.append(a[2]) or real(self, *a))
    report = measure_cost(minilm_onnx, glove, corpus_texts("builtin", 12), count=1000, repeats=1).to_dict()
    assert calls and all(list(layers) == [minilm_onnx.num_layers] for layers in calls)  # the ONNX graph is timed
    assert (report["precision"], report["runtime"]) == ("fp32", "onnx")
    fp32_bytes = 4 * sum(p.numel() for p in minilm.model.parameters())
    assert report["model_weight_bytes"] == minilm_onnx.weight_bytes()
    assert 0.8 * fp32_bytes < report["model_weight_bytes"] < 1.1 * fp32_bytes  # fp32 files on disk
    cka = compare_layers(minilm, minilm_onnx, corpus="builtin", limit=20).to_dict()
    assert (cka["runtime_a"], cka["runtime_b"]) == ("torch", "onnx")
    assert (cka["precision_a"], cka["precision_b"]) == ("fp32", "fp32")
    assert np.diag(np.asarray(cka["matrix"])).min() > 0.9999  # the same geometry, within 1e-4


def test_lesson_json_and_the_web_face_carry_the_runtime(minilm_onnx: ContextualModel) -> None:
    from contextlens.web.app import create_app

    r = run_cli("compare", *BANK, "-m", "minilm", "--runtime", "onnx", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["runtime"] == "onnx", r.stderr
    torch_run = run_cli("compare", *BANK, "-m", "minilm", "--runtime", "torch", "--json")
    assert json.loads(torch_run.stdout)["runtime"] == "torch"
    assert json.loads(run_cli("compare", *BANK, "-m", "minilm", "--json").stdout)["runtime"] == "onnx"  # auto
    client = TestClient(create_app("minilm", runtime="onnx"), base_url="http://127.0.0.1")
    assert client.get("/health").json()["runtime"] == "onnx"
    assert client.post("/api/compare", json={"sentences": BANK}).json() == json.loads(r.stdout)
    assert "minilm (onnx fp32)" in client.get("/compare").text
    attention = run_cli("attention", *BANK, "-m", "minilm", "--runtime", "onnx", "--json")
    assert client.post("/api/attention", json={"sentences": BANK}).json() == json.loads(attention.stdout)
    lesson = client.get("/lesson")  # the trace from the checked attention graph
    assert lesson.status_code == 200 and "The trace needs attention weights" not in lesson.text
    int8 = TestClient(create_app("minilm", precision="int8", runtime="onnx"), base_url="http://127.0.0.1")
    refused = int8.post("/api/attention", json={"sentences": BANK})
    assert refused.status_code == 400 and "torch runtime" in refused.json()["error"]
    lesson = int8.get("/lesson")  # the lesson stays up; its trace figure is a note
    assert lesson.status_code == 200 and "The trace needs attention weights" in lesson.text


def test_contextuality_of_a_corpus_extracts_into_its_own_onnx_folders(minilm_onnx: ContextualModel, tmp_path: Path):
    from tests.test_senses import MONEY, RIVER

    corpus = tmp_path / "bank.txt"
    corpus.write_text("\n".join(RIVER + MONEY) + "\n")
    args = ("eval", "contextuality", "--corpus", str(corpus), "-m", "minilm", "--json", "--runtime", "onnx")
    proc = run_cli(*args, "--min-contexts", "5", "--max-words", "3", "--sentences", "4")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads(proc.stdout)["meta"]
    assert (meta["precision"], meta["runtime"]) == ("fp32", "onnx") and "onnx fp32 vs torch" in proc.stderr
    folder = Path(meta["cache"]["folder"])
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["sentences-minilm-onnx", "words-minilm-onnx"]
    assert json.loads((folder / "words-minilm-onnx" / "manifest.json").read_text())["runtime"] == "onnx"
