"""The FAISS vector index: documents in, round trip through disk, refusals of wrong encoders and damage."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.benchmarks.retrieval import load_lee
from contextlens.analyses.search.encoders import TextEncoder
from contextlens.analyses.search.index import (
    INDEX_TYPES,
    DamagedIndexError,
    Document,
    IndexConfig,
    IndexMismatchError,
    VectorIndex,
    build_faiss_index,
    load_documents,
)
from contextlens.analyses.search.index_files import current_folder
from contextlens.errors import DataFileError, InputError
from helpers import run_cli

QUERIES = ["a bushfire threatens homes near Sydney", "peace talks in the Middle East", "the cricket match"]
SPECS = {
    "flat": IndexConfig("flat"),
    "hnsw": IndexConfig("hnsw", {"m": 8, "ef_search": 16}),
    "ivfpq": IndexConfig("ivfpq", {"nlist": 4, "pq_m": 48, "nbits": 4, "nprobe": 2}),
    "sq8": IndexConfig("sq8"),
    "binary": IndexConfig("binary"),
}


@pytest.fixture(scope="module")
def lee_vectors(minilm):
    docs = [Document(f"lee-{i}", t) for i, t in enumerate(load_lee().documents)]
    encoder = TextEncoder(minilm, "sentence")
    return docs, encoder, encoder.encode([d.text for d in docs]), encoder.encode(QUERIES)


def make_index(lee_vectors, index_type: str) -> VectorIndex:
    docs, encoder, x, _ = lee_vectors
    spec = SPECS[index_type].resolved(len(docs), x.shape[1])
    return VectorIndex(encoder.provenance, spec, build_faiss_index(x, spec), docs)


@pytest.mark.parametrize("index_type", INDEX_TYPES)
def test_build_save_load_search_round_trip_is_identical(lee_vectors, index_type, tmp_path):
    docs, encoder, _, q = lee_vectors
    index = make_index(lee_vectors, index_type)
    before = index.search_vectors(q, k=10)
    loaded = VectorIndex.load(index.save(tmp_path / "ix"))
    after = loaded.search_vectors(q, k=10)
    np.testing.assert_array_equal(before[1], after[1])
    np.testing.assert_array_equal(before[0], after[0])
    assert loaded.provenance == encoder.provenance and loaded.config == index.config
    assert [d.id for d in loaded.documents] == [d.id for d in docs]
    manifest = json.loads((current_folder(tmp_path / "ix") / "manifest.json").read_text())
    assert manifest["count"] == 50 and manifest["dimension"] == 384 and manifest["index"]["type"] == index_type
    assert manifest["encoder"] == {
        "model": "minilm",
        "kind": "sentence",
        "layer": None,
        "dim": 384,
        "precision": "fp32",
    }
    assert set(manifest["files"]) == {"index.faiss", "docs.jsonl"}


def test_flat_search_is_exact_cosine(lee_vectors):
    _, _, x, q = lee_vectors
    scores, ids = make_index(lee_vectors, "flat").search_vectors(q, k=5)
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    cos = qn @ xn.T
    np.testing.assert_array_equal(ids, np.argsort(-cos, axis=1)[:, :5])
    np.testing.assert_allclose(scores, np.sort(cos, axis=1)[:, ::-1][:, :5], atol=1e-5)


def test_approximate_indexes_mostly_agree_with_exact(lee_vectors):
    _, _, _, q = lee_vectors
    _, exact = make_index(lee_vectors, "flat").search_vectors(q, k=5)
    for index_type in ("hnsw", "sq8"):
        _, approx = make_index(lee_vectors, index_type).search_vectors(q, k=5)
        overlap = np.mean([len(set(a) & set(e)) / 5 for a, e in zip(approx, exact, strict=True)])
        assert overlap >= 0.8, index_type


def test_search_refuses_an_encoder_of_another_kind(lee_vectors, minilm):
    index = make_index(lee_vectors, "flat")
    with pytest.raises(IndexMismatchError, match="kind differs"):
        index.search(TextEncoder(minilm, "input-row"), ["a query"])
    hits = index.search(TextEncoder(minilm, "sentence"), [QUERIES[0]], k=3)[0].hits
    assert [h.rank for h in hits] == [1, 2, 3] and hits[0].score >= hits[1].score >= hits[2].score


def test_damage_is_detected_on_load(lee_vectors, tmp_path):
    folder = current_folder(make_index(lee_vectors, "flat").save(tmp_path / "ix"))
    data = bytearray((folder / "index.faiss").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (folder / "index.faiss").write_bytes(bytes(data))
    with pytest.raises(DamagedIndexError, match="checksum"):
        VectorIndex.load(folder)
    (folder / "manifest.json").unlink()
    with pytest.raises(DamagedIndexError, match="no manifest.json"):
        VectorIndex.load(folder)


def test_index_parameters_are_checked(lee_vectors):
    with pytest.raises(InputError, match="takes no"):
        IndexConfig("flat", {"m": 8})
    with pytest.raises(InputError, match="at least 256 vectors"):
        IndexConfig("ivfpq", {"nbits": 8}).resolved(50, 384)
    with pytest.raises(InputError, match="must divide"):
        IndexConfig("ivfpq", {"pq_m": 7, "nbits": 4}).resolved(50, 384)
    with pytest.raises(InputError, match="unknown `index`"):
        IndexConfig("annoy")


def test_documents_from_text_folder_and_jsonl(tmp_path):
    (tmp_path / "docs.txt").write_text("first document\n\nsecond document\n")
    assert load_documents(tmp_path / "docs.txt") == [Document("1", "first document"), Document("3", "second document")]
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "b.txt").write_text("bee\n")
    (folder / "a.txt").write_text("ant")
    assert load_documents(folder) == [Document("a", "ant"), Document("b", "bee")]
    (tmp_path / "d.jsonl").write_text('{"id": "x", "text": "ex"}\n{"text": "no id"}\n')
    assert load_documents(tmp_path / "d.jsonl") == [Document("x", "ex"), Document("2", "no id")]
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "text": "ok"}\n{"id": 2, "body": "x"}\n')
    with pytest.raises(DataFileError, match=r"bad.jsonl:2"):
        load_documents(tmp_path / "bad.jsonl")
    (tmp_path / "dup.jsonl").write_text('{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n')
    with pytest.raises(DataFileError, match="appears twice"):
        load_documents(tmp_path / "dup.jsonl")
    with pytest.raises(DataFileError, match="do not exist"):
        load_documents(tmp_path / "missing.txt")


# --- through the real CLI -----------------------------------------------------------------------

DOCS = [
    "The river burst its banks and flooded the village.",
    "The central bank raised interest rates again.",
    "A recipe for chocolate cake with dark cocoa.",
    "The striker scored twice in the cup final.",
    "Volcanic ash grounded flights across Europe.",
]


@pytest.fixture(scope="module")
def cli_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    (root / "docs.txt").write_text("\n".join(DOCS) + "\n")
    out = root / "index"
    proc = run_cli("index", "build", str(root / "docs.txt"), "--out", str(out), "--model", "minilm", "--json")
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads(proc.stdout)  # the manifest, as written
    assert manifest["count"] == len(DOCS) and manifest["encoder"]["kind"] == "sentence"
    assert manifest == json.loads((current_folder(out) / "manifest.json").read_text())
    return out


def test_cli_build_and_search(cli_index):
    proc = run_cli("index", "search", str(cli_index), "monetary policy and inflation", "-k", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert [h["rank"] for h in result["hits"]] == [1, 2, 3]
    assert result["hits"][0]["id"] == "2" and result["hits"][0]["text"] == DOCS[1]
    assert result["encoder"]["model"] == "minilm" and result["index"] == "flat"
    table = run_cli("index", "search", str(cli_index), "football goal", "-k", "2")
    assert table.returncode == 0 and "striker" in table.stdout


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_cli_refuses_mismatch_damage_and_missing_manifest(cli_index, tmp_path):
    for args, needle in (
        (["--model", "mpnet"], "minilm"),
        (["--kind", "input-row"], "kind"),
    ):
        proc = run_cli("index", "search", str(cli_index), "query", *args)
        assert proc.returncode == 2 and needle in proc.stderr and proc.stdout == ""
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr

    damaged = _copy(cli_index, tmp_path / "damaged")
    blob = (current_folder(damaged) / "index.faiss").read_bytes()
    (current_folder(damaged) / "index.faiss").write_bytes(blob[: len(blob) // 2])  # truncated
    truncated = run_cli("index", "search", str(damaged), "query")
    assert truncated.returncode == 2 and "checksum" in truncated.stderr
    assert len(truncated.stderr.strip().splitlines()) == 1

    no_manifest = _copy(cli_index, tmp_path / "nomanifest")
    (current_folder(no_manifest) / "manifest.json").unlink()
    missing = run_cli("index", "search", str(no_manifest), "query")
    assert missing.returncode == 2 and "manifest" in missing.stderr and "Traceback" not in missing.stderr
