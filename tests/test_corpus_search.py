"""`corpus search`: the occurrences of a folder nearest an example, by the folder's own model."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from contextlens.analyses.corpus.extract import extract_corpus
from contextlens.analyses.corpus.folder import read_rows
from contextlens.analyses.corpus.occurrence_search import index_paths, open_index, search_occurrences
from contextlens.cli import main
from contextlens.core.occurrences import parse_marked
from contextlens.core.similarity import normalize_rows
from contextlens.errors import InputError, MarkerError, ProvenanceMismatchError

RIVER = [
    "The river bank was muddy after the rain.",
    "We walked along the grassy bank of the stream.",
    "Fish hid under the bank where the water was deep.",
    "The canoe drifted toward the far bank.",
]
MONEY = ["The bank raised its interest rates.", "She opened an account at the bank.",
         "The bank approved the loan on Monday.", "He robbed a bank in the city centre."]  # fmt: skip


@pytest.fixture(scope="module")
def folder(tmp_path_factory, minilm):
    tmp = tmp_path_factory.mktemp("search")
    corpus = tmp / "c.txt"
    quiet = [f"Line {i} holds no target at all, only words." for i in range(6)]  # shards of no row
    corpus.write_text("\n".join(RIVER + quiet + MONEY + ["Spring came early. Nothing else."]) + "\n")
    extract_corpus(
        str(corpus), ["bank", "spring"], tmp / "x", model="minilm", layers=[3, 6], chunk_chars=120, line_breaks="lines"
    )
    return tmp / "x"


def test_nearest_occurrences_are_the_same_sense_with_exact_cosines(folder, minilm):
    money = search_occurrences(folder, "She paid the [bank] a visit about her loan.", top=4, model=minilm)
    assert {h.sentence for h in money.hits} == set(MONEY)  # minilm layer 6: the four money banks first
    result = search_occurrences(folder, "The river [bank] flooded.", top=9, model=minilm)
    assert result.layer == 6 and result.searched == 9 and not result.index_built  # built by the first search
    assert result.hits[0].sentence == RIVER[0] and result.hits[-1].target == "spring"
    assert [h.rank for h in result.hits] == list(range(1, 10))
    assert all(a.cosine >= b.cosine for a, b in zip(result.hits, result.hits[1:], strict=False))
    # the cosine is the one of the stored vector and the example's own encoding
    query = minilm.encode_occurrences([parse_marked("The river [bank] flooded.")], layers=[6])[0].hidden[0]
    table = read_rows(folder)
    rows = table.select(["sentence", "start"]).to_pylist()
    stored = normalize_rows(np.array(table.column("layer_6").to_pylist(), dtype=np.float32))
    for h in result.hits:
        k = rows.index({"sentence": h.sentence, "start": h.start})
        assert h.cosine == pytest.approx(float(stored[k] @ normalize_rows(query[None])[0]), abs=1e-5)
        assert h.sentence[h.start : h.end].lower() == h.target and h.marked.count("[") == 1
    assert result.to_dict()["hits"][0]["doc_id"].startswith("c.txt:")


def test_index_is_built_once_kept_beside_the_shards_and_rebuilt_when_damaged(folder, minilm):
    first = open_index(folder, 3, rebuild=True)
    faiss_path, meta_path = index_paths(folder, 3)
    assert first.built and faiss_path.is_file() and json.loads(meta_path.read_text())["rows"] == first.rows
    assert 0 in first.rows  # a shard without an occurrence is indexed as none
    again = open_index(folder, 3)
    assert not again.built and again.total == first.total == 9
    faiss_path.write_bytes(faiss_path.read_bytes()[:100])  # damaged: not trusted, rebuilt
    killed = folder / f".{faiss_path.name}.0123abcd.tmp-999999999"  # what a build killed mid-write leaves
    killed.write_bytes(b"half")
    assert open_index(folder, 3).built
    assert not killed.exists()
    assert not list(folder.glob(".*tmp*"))  # written atomically, no temporary left
    with pytest.raises(InputError, match=r"layer 5 is not in"):
        open_index(folder, 5)


def test_refusals(folder, minilm, minilm_onnx):
    # ONNX Runtime fp32 (the lean path) may query a torch fp32 folder: the same hits, cosines within 1e-4
    lean = search_occurrences(folder, "The river [bank] flooded.", model=minilm_onnx, baseline=False)
    ref = search_occurrences(folder, "The river [bank] flooded.", model=minilm, baseline=False)
    assert [h.doc_id for h in lean.hits] == [h.doc_id for h in ref.hits]
    assert max(abs(a.cosine - b.cosine) for a, b in zip(lean.hits, ref.hits, strict=True)) < 1e-4
    with pytest.raises(ProvenanceMismatchError, match="search with the folder's own model"):
        search_occurrences(folder, "The river [bank] flooded.", model=SimpleNamespace(
            name=minilm.name, precision="int8", runtime="torch", backend=minilm.backend))  # fmt: skip
    with pytest.raises(MarkerError):
        search_occurrences(folder, "no marker here", model=minilm)
    with pytest.raises(InputError, match="top must be at least 1"):
        search_occurrences(folder, "The [bank].", top=0, model=minilm)


def test_cli_search_text_json_and_another_model(folder, capsys):
    def cli(*args):
        with pytest.raises(SystemExit) as stop:
            main(["corpus", "search", str(folder), *args])
        out, err = capsys.readouterr()
        return int(stop.value.code or 0), out, err

    code, out, err = cli("--like", "She paid the [bank] a visit about her loan.", "--top", "3", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert {h["sentence"] for h in doc["hits"]} <= set(MONEY) and len(doc["hits"]) == 3
    assert doc["model"] == "minilm" and doc["layer"] == 6
    code, out, err = cli("--like", "The river [bank] flooded.", "--layer", "3", "--top", "2")
    assert code == 0 and "layer 3" in out and "[bold]" not in out
    assert "The river [bank] was muddy" in out  # the hit itself, its brackets not read as markup
    code, _, err = cli("--like", "The river [bank] flooded.", "--model", "mpnet")
    assert code == 2 and err.count("\n") == 1 and "--model mpnet is not the model" in err
    code, _, err = cli("--like", "The river [bank] flooded.", "--top", "0")
    assert code == 2 and "--top" in err, err


def test_projector_export_pairs_vectors_and_metadata(folder, capsys):
    from contextlens.analyses.corpus.projector import export_projector

    done = export_projector(folder, layer=3)
    vectors = done.vectors.read_text().splitlines()
    meta = done.metadata.read_text().splitlines()
    assert meta[0] == "occurrence\ttarget\tform\tdocument\tsense" and len(meta) == len(vectors) + 1 == 10
    table = read_rows(folder)
    stored = np.array(table.column("layer_3").to_pylist(), dtype=np.float32)
    np.testing.assert_allclose(np.array([[float(v) for v in line.split("\t")] for line in vectors]), stored, rtol=1e-5)
    first = meta[1].split("\t")
    assert len(first) == 5 and first[0].count("[") == 1 and first[1] in ("bank", "spring")
    assert done.vectors.parent == folder / "projector-layer_3"
    with pytest.raises(SystemExit) as stop:
        main(["corpus", "export", str(folder), "--format", "csv"])
    assert stop.value.code == 2 and "--format 'csv'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["corpus", "export", str(folder), "--out", str(folder / "p"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert stop.value.code in (0, None) and doc["rows"] == 9 and doc["layer"] == 6
    assert (folder / "p" / "metadata.tsv").is_file()
    with pytest.raises(InputError, match="`out` .* is a file"):
        export_projector(folder, folder / "manifest.json")


def test_projector_sense_column_is_the_search_induction_row_by_row(folder, capsys):
    """The sense cell of each row is ``word_senses(...).label_of(row)``, named; rows stay aligned with
    vectors.tsv; a word with under 3 occurrences says ``-``; --no-senses leaves the column out."""
    from contextlens.analyses.corpus.hit_senses import word_senses
    from contextlens.analyses.corpus.projector import export_projector

    done = export_projector(folder, folder / "senses", layer=6)
    meta = [line.split("\t") for line in done.metadata.read_text().splitlines()[1:]]
    vectors = np.array([[float(v) for v in line.split("\t")] for line in done.vectors.read_text().splitlines()])
    table = read_rows(folder)
    stored = np.array(table.column("layer_6").to_pylist(), dtype=np.float32)
    np.testing.assert_allclose(vectors, stored, rtol=1e-5)
    bank = word_senses(folder, "bank", 6)
    assert len(bank.rows) == 8 and bank.induction.k >= 1
    for row, (cells, r) in enumerate(zip(meta, table.select(["sentence", "start", "end", "target"]).to_pylist(),
                                         strict=True)):  # fmt: skip
        s, a, b = r["sentence"], r["start"], r["end"]
        assert cells[0] == f"{s[:a]}[{s[a:b]}]{s[b:]}" and cells[1] == r["target"]  # the vector's own row
        if r["target"] == "bank":
            sense = bank.label_of(row)
            assert cells[4] == bank.name(sense) and cells[4].startswith(f"{sense}: ")
            synset = bank.describe(sense)["synset"]
            assert synset is None or f"{synset} (" in cells[4]  # the nearest WordNet sense, with its definition
        else:
            assert r["target"] == "spring" and cells[4] == "-"  # one occurrence: nothing to induce
    doc = done.to_dict()
    assert doc["columns"][-1] == "sense" and doc["senses"]["spring"] is None
    assert doc["senses"]["bank"]["k"] == bank.induction.k
    with pytest.raises(SystemExit) as stop:
        main(["corpus", "export", str(folder), "--out", str(folder / "bare"), "--no-senses", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert stop.value.code in (0, None) and doc["columns"] == ["occurrence", "target", "form", "document"]
    assert (folder / "bare" / "metadata.tsv").read_text().splitlines()[0].count("\t") == 3 and doc["senses"] == {}


def test_a_format_2_folder_is_still_searched_and_read(folder, tmp_path, minilm):
    """Folders written before format 3 (no paragraph_index, sentence_index within the document)."""
    import shutil

    import pyarrow.parquet as pq

    from contextlens.analyses.corpus.contextuality import _Rows

    old = tmp_path / "old"
    shutil.copytree(folder, old, ignore=shutil.ignore_patterns("search-*", "projector-*", "p", "senses", "bare"))
    for path in old.glob("part-*.parquet"):
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(["paragraph_index"]), path)
    manifest = json.loads((old / "manifest.json").read_text())
    (old / "manifest.json").write_text(json.dumps(manifest | {"format": "contextlens-corpus/2"}))
    result = search_occurrences(old, "She paid the [bank] a visit about her loan.", top=4, model=minilm)
    assert {h.sentence for h in result.hits} == set(MONEY) and result.hits[0].paragraph_index is None
    rows = _Rows.read(old)
    assert len(rows.contexts) == 9 and all(len(k) == 2 for k in rows.contexts)


def test_a_search_index_temporary_left_by_kill_9_is_removed(tmp_path):
    """A build killed (SIGKILL) while writing the index leaves its temporary beside the shards;
    clean_temporaries (an extraction's start) and the next index build remove it, and keep a
    live writer's."""
    import signal
    import subprocess
    import sys

    from contextlens.analyses.corpus.folder import clean_search_temporaries, clean_temporaries

    writer = (
        "import sys, time\n"
        "from contextlens.core.atomic_files import atomic_path\n"
        "with atomic_path(sys.argv[1]) as tmp:\n"
        "    tmp.write_bytes(b'half an index')\n"
        "    print('writing', flush=True)\n"
        "    time.sleep(120)\n"
    )
    faiss_path, _ = index_paths(tmp_path, 6)
    proc = subprocess.Popen([sys.executable, "-c", writer, str(faiss_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "writing"
        left = list(tmp_path.glob(".search-*"))
        assert len(left) == 1 and left[0].name.endswith(f".tmp-{proc.pid}")
        clean_temporaries(tmp_path)
        assert left[0].exists()  # its writer is alive: kept
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert left[0].exists()  # kill -9 ran no clean-up
        clean_temporaries(tmp_path)
        assert not list(tmp_path.glob(".search-*"))
        (tmp_path / f".search-layer_3.json.0a1b2c3d.tmp-{proc.pid}").write_text("{")  # another layer's
        clean_search_temporaries(tmp_path)
        assert not list(tmp_path.glob(".search-*"))
    finally:
        proc.kill()
        proc.wait()


def test_sense_restricts_and_labels_hits_with_the_induction_and_the_baseline(folder, minilm, capsys):
    """--sense K searches only the occurrences `senses induce` put in sense K; --senses labels each
    hit with it; each cosine has its percentile among the model's random-word cosines (compare's)."""
    from contextlens.analyses.corpus.senses import induce_senses
    from contextlens.analyses.measures.word_baseline import random_word_baseline

    induced = induce_senses(folder, "bank", 6)
    assert induced.k == 2
    river_sense = int(induced.labels[0])  # rows of bank in chunk order: the river sentences first
    by_sentence = dict(zip(induced.sentences, induced.labels.tolist(), strict=True))
    assert {by_sentence[s] for s in RIVER} == {river_sense} and {by_sentence[s] for s in MONEY} == {1 - river_sense}
    like = "She paid the [bank] a visit about her loan."
    only = search_occurrences(folder, like, 6, top=10, model=minilm, sense=river_sense)
    assert {h.sentence for h in only.hits} == set(RIVER)  # the money sentences are nearer, but excluded
    assert only.sense == river_sense and {h.sense for h in only.hits} == {river_sense}
    everything = search_occurrences(folder, like, 6, top=10, model=minilm)
    assert [h.sense for h in everything.hits] == [None] * len(everything.hits)  # labels only when asked
    cos = {h.sentence: h.cosine for h in everything.hits}
    assert all(abs(cos[h.sentence] - h.cosine) < 1e-5 for h in only.hits)  # the same cosines, fewer rows
    base = random_word_baseline(minilm, "mean")
    assert all(h.baseline_percentile == base.percentile(6, h.cosine) for h in everything.hits)
    assert everything.to_dict()["baseline"]["mean"] == round(base.layer(6).mean, 4)
    labelled = search_occurrences(folder, like, 6, top=10, model=minilm, senses=True)
    assert {h.sentence: h.sense for h in labelled.hits if h.target == "bank"} == {
        s: by_sentence[s] for s in RIVER + MONEY
    }
    assert labelled.to_dict()["senses"]["bank"]["clusters"][river_sense]["synset"] == "bank.n.01"
    assert [h.sense for h in labelled.hits if h.target == "spring"] == [None]  # one occurrence: no induction
    with pytest.raises(InputError, match=r"`sense` 2: 'bank' has 2 induced sense\(s\)"):
        search_occurrences(folder, like, 6, model=minilm, sense=2)
    with pytest.raises(InputError, match="'loan' is not"):
        search_occurrences(folder, "A [loan] was approved.", 6, model=minilm, sense=0)
    with pytest.raises(SystemExit) as stop:
        main(["corpus", "search", str(folder), "--like", like, "--sense", str(river_sense), "--top", "2"])
    out, err = capsys.readouterr()
    assert stop.value.code in (0, None), err
    assert "pct" in out and f"sense {river_sense} of the example's word" in out and "bank.n.01" in out
    assert "100.0" in out and "[bank]" in out
    with pytest.raises(SystemExit) as stop:
        main(["corpus", "search", str(folder), "--like", like, "--sense", "5"])
    _, err = capsys.readouterr()
    assert stop.value.code == 2 and err.count("\n") == 1 and "--sense 5" in err, err


def test_wrong_api_calls_on_a_folder_are_one_typed_line(folder, minilm):
    """``export_projector(None)`` was a TypeError from pathlib, ``sense_map(word=None)`` an
    AttributeError, ``k=2.5`` silently 2 clusters and ``senses='no'`` a yes."""
    from contextlens.analyses.corpus.projector import export_projector
    from contextlens.analyses.corpus.sense_map import sense_map
    from contextlens.analyses.corpus.senses import induce_senses
    from contextlens.errors import ParameterError

    calls = {
        "export_projector(None)": lambda: export_projector(None),
        "export_projector(senses='no')": lambda: export_projector(folder, senses="no"),
        "search_occurrences(folder=None)": lambda: search_occurrences(None, "The river [bank].", model=minilm),
        "search_occurrences(senses='no')": lambda: search_occurrences(folder, "The [bank].", model=minilm, senses="no"),
        "sense_map(word=None)": lambda: sense_map(folder, None),
        "sense_map(k=2.5)": lambda: sense_map(folder, "bank", k=2.5),
        "sense_map(k=True)": lambda: sense_map(folder, "bank", k=True),
        "sense_map(k='3')": lambda: sense_map(folder, "bank", k="3"),
        "induce_senses(folder=3)": lambda: induce_senses(3, "bank"),
    }
    for call, run in calls.items():
        with pytest.raises(ParameterError) as caught:
            run()
        message = str(caught.value)
        assert "\n" not in message and message.split()[0] in ("folder", "senses", "word", "k"), (call, message)
    assert sense_map(folder, "bank", k=2).layers[-1].k == 2  # a whole number still works
