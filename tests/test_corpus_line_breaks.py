"""Issue 36, item 1: hard-wrapped text is read as paragraphs (blank lines separate them, a wrapped
line's break is a space), one sentence per line on request, the choice recorded in the manifest;
a folder made before the choice existed keeps meaning "every line its own paragraph"."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contextlens.analyses.corpus.extract import extract_corpus
from contextlens.analyses.corpus.folder import read_rows
from contextlens.analyses.corpus.readers import ReadStats, read_corpus
from contextlens.errors import InputError
from tests.helpers import run_cli

WRAPPED = (
    "Licensor grants a copyright licence for the work, including the copyright\n"
    "notice that is included in or attached to the work. The notice must be\n"
    "kept with every copy.\n"
    "\n"
    "   A second paragraph, indented and\n"
    "   wrapped, holds the notice too.\n"
)
FIRST = (
    "Licensor grants a copyright licence for the work, including the copyright notice that is included in "
    "or attached to the work."
)


def test_wrapped_text_is_read_as_paragraphs_and_lines_on_request(tmp_path):
    path = tmp_path / "licence.txt"
    path.write_text(WRAPPED)
    docs = list(read_corpus(str(path)))
    assert [d.doc_id for d in docs] == ["licence.txt:1", "licence.txt:5"]
    assert docs[0].pieces[0].startswith(FIRST) and docs[1].pieces == (
        "A second paragraph, indented and wrapped, holds the notice too.",
    )
    lines = list(read_corpus(str(path), line_breaks="lines"))
    assert [d.doc_id for d in lines] == [f"licence.txt:{n}" for n in (1, 2, 3, 5, 6)]
    with pytest.raises(InputError, match="unknown `line_breaks` 'wrapped'"):
        list(read_corpus(str(path), line_breaks="wrapped"))


def test_every_file_format_reflows_the_same_way(tmp_path):
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "d1", "text": WRAPPED}) + "\n")
    pq.write_table(pa.table({"id": ["d1"], "text": [WRAPPED]}), tmp_path / "c.parquet")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "d1.txt").write_text(WRAPPED)
    expected = tuple(d.pieces[0] for d in read_corpus(str(_write(tmp_path / "c.txt", WRAPPED))))
    for name in ("c.jsonl", "c.parquet", "docs"):
        (doc,) = read_corpus(str(tmp_path / name))
        assert doc.pieces == expected, name
    (doc,) = read_corpus(str(tmp_path / "c.jsonl"), line_breaks="lines")
    assert doc.pieces == tuple(WRAPPED.splitlines())  # blank lines kept: a piece's index is in the row key


def test_a_file_without_blank_lines_is_flagged_as_one_enormous_paragraph(tmp_path):
    path = _write(tmp_path / "one_per_line.txt", "".join(f"Sentence {i} ends here.\n" for i in range(250)))
    stats = ReadStats()
    assert len(list(read_corpus(str(path), stats))) == 1
    assert stats.long_paragraphs == 1 and "line breaks `lines`" in (stats.long_message() or "")
    stats = ReadStats()
    assert len(list(read_corpus(str(path), stats, line_breaks="lines"))) == 250 and stats.long_message() is None


def test_a_sentence_crosses_a_wrapped_line_and_the_manifest_records_the_choice(tmp_path, minilm):
    corpus = _write(tmp_path / "licence.txt", WRAPPED)
    result = extract_corpus(str(corpus), ["notice"], tmp_path / "x", model="minilm", layers=[6])
    assert result.manifest.line_breaks == "paragraphs"
    assert json.loads((tmp_path / "x" / "manifest.json").read_text())["line_breaks"] == "paragraphs"
    sentences = read_rows(tmp_path / "x", columns=["sentence"]).column("sentence").to_pylist()
    assert FIRST in sentences  # the wrapped sentence whole, not "notice that is included in or ..."
    lines = extract_corpus(str(corpus), ["notice"], tmp_path / "y", model="minilm", layers=[6], line_breaks="lines")
    assert lines.manifest.line_breaks == "lines"
    assert (
        "notice that is included in or attached to the work."
        in read_rows(tmp_path / "y", columns=["sentence"]).column("sentence").to_pylist()
    )


def test_an_old_folder_without_the_field_continues_line_by_line(tmp_path, minilm):
    """A folder made before the choice (no "line_breaks" in its manifest) read each line as a
    paragraph: continuing it without the flag reads it so again; asking paragraphs is refused."""
    corpus = _write(tmp_path / "licence.txt", WRAPPED)
    out = tmp_path / "old"
    extract_corpus(str(corpus), ["notice"], out, model="minilm", layers=[6], line_breaks="lines", chunk_chars=60)
    before = read_rows(out, columns=["doc_id", "paragraph_index", "sentence_index", "start"]).to_pylist()
    path = out / "manifest.json"
    data = json.loads(path.read_text())
    del data["line_breaks"]
    data["complete"] = False  # as if killed before it finished
    path.write_text(json.dumps(data))
    shards = sorted(out.glob("part-*.parquet"))
    shards[-1].unlink()
    again = extract_corpus(str(corpus), ["notice"], out, model="minilm", layers=[6], chunk_chars=60)
    assert again.manifest.line_breaks == "lines" and again.manifest.complete
    assert read_rows(out, columns=["doc_id", "paragraph_index", "sentence_index", "start"]).to_pylist() == before
    with pytest.raises(InputError, match="line_breaks='lines', not 'paragraphs'"):
        extract_corpus(
            str(corpus), ["notice"], out, model="minilm", layers=[6], chunk_chars=60, line_breaks="paragraphs"
        )


def test_the_cli_takes_line_breaks_and_refuses_a_wrong_one_in_one_line(tmp_path):
    corpus = _write(tmp_path / "licence.txt", WRAPPED)
    proc = run_cli("corpus", "extract", str(corpus), "--words", "notice", "--out", str(tmp_path / "x"),
                   "--model", "minilm", "--line-breaks", "sentences")  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "--line-breaks" in proc.stderr


def _write(path, text):
    path.write_text(text)
    return path


def test_index_build_reads_the_parquet_file_that_corpus_extract_reads(tmp_path):
    """Item 7: `index build` refused a Parquet file ("not UTF-8 text") that `corpus extract` reads."""
    from contextlens.analyses.corpus.index_documents import index_documents

    texts = ["The river bank flooded after the rain.", "She paid the bank back.\n\nA second paragraph."]
    pq.write_table(pa.table({"id": ["a", "b"], "text": texts}), tmp_path / "docs.parquet")
    docs = index_documents(tmp_path / "docs.parquet")
    assert [(d.id, d.text) for d in docs] == [("a", texts[0]), ("b", texts[1])]
    proc = run_cli("index", "build", str(tmp_path / "docs.parquet"), "--out", str(tmp_path / "idx"),
                   "--static", "glove-50d", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["count"] == 2


def test_open_folder_gives_rows_and_arrays_like_encode_occurrences(tmp_path, minilm):
    """Item 6: a public reader of an extraction folder (pq.read_table(DIR) fails on manifest.json)."""
    import numpy as np

    import contextlens
    from contextlens.core.occurrences import Occurrence

    corpus = _write(tmp_path / "licence.txt", WRAPPED)
    extract_corpus(str(corpus), ["notice", "work"], tmp_path / "x", model="minilm", layers=[3, 6], dtype="float32")
    folder = contextlens.open_folder(tmp_path / "x")
    rows = folder.rows("notice")
    assert rows.num_rows == 3 and "layer_3" not in rows.column_names and folder.layers == [3, 6]
    x = folder.vectors("notice")
    assert x.shape == (3, 2, 384) and x.dtype == np.float32
    assert folder.vectors("notice", layers=[6]).shape == (3, 1, 384)
    assert list(folder.to_pandas("notice")["sentence"]) == rows.column("sentence").to_pylist()
    occs = [Occurrence(r["sentence"], r["start"], r["end"]) for r in rows.to_pylist()]
    direct = minilm.encode_occurrences(occs, layers=[3, 6], as_array=True)
    assert direct.shape == x.shape and np.allclose(direct, x, atol=1e-5)
    with pytest.raises(InputError, match="extracted layers"):
        folder.vectors("notice", layers=[5])
    with pytest.raises(contextlens.TargetNotFoundError):
        folder.rows("bank")
    with pytest.raises(InputError, match="not a corpus extraction folder"):
        contextlens.open_folder(tmp_path)


def test_a_job_logged_to_a_file_prints_plain_progress_lines(monkeypatch, capsys):
    """Item 7: with stderr not a terminal, a line every PLAIN_EVERY_SECONDS, the clock started by
    the first update (a model that loaded slowly before it is no progress to report)."""
    from contextlens.cli import corpus as corpus_cli

    clock = iter([100.0, 101.0, 110.5, 112.0, 121.0])  # the first update comes 100 s after setup
    monkeypatch.setattr("time.monotonic", lambda: next(clock))
    live = []
    show = corpus_cli.plain_lines_too(live.append)
    for n in range(5):
        show(f"{n} paragraphs scanned")
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == ["2 paragraphs scanned", "4 paragraphs scanned"]


def test_a_local_ray_that_does_not_start_is_one_line(monkeypatch):
    """Item 7: "node timed out during startup" came up raw from ray.init."""
    ray = pytest.importorskip("ray")
    from contextlens.analyses.corpus.ray_engine import start_ray
    from contextlens.errors import ContextlensError

    # a worker that ran test_corpus's Ray tests first is connected to the session's cluster: the
    # test must not depend on that (it was a skip), nor leave that connection shut down
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "shutdown", lambda: None)  # nothing was started that it could stop

    def fail(*args, **kwargs):
        raise Exception("The current node timed out during startup.\nThis could happen because ...")  # noqa: TRY002

    monkeypatch.setattr(ray, "init", fail)
    with pytest.raises(ContextlensError) as caught:
        start_ray(None, cpus=1)
    message = str(caught.value)
    assert "\n" not in message and "timed out during startup" in message and "`engine` local" in message


def test_index_build_dedupe_folds_identical_texts_and_says_how_many(tmp_path):
    """Item 5: 372 of 10,000 real paragraphs were duplicates; --dedupe indexes each text once."""
    from contextlens.analyses.search.index import Document, dedupe_documents

    docs = [Document("1", "Same  text."), Document("2", "other"), Document("3", "Same text.")]
    assert dedupe_documents(docs) == ([docs[0], docs[1]], 1)
    (tmp_path / "d.txt").write_text("the river bank\nthe money bank\nthe river bank\n")
    proc = run_cli("index", "build", str(tmp_path / "d.txt"), "--out", str(tmp_path / "i"), "--static", "glove-50d",
                   "--dedupe", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["count"] == 2 and "1 duplicate document(s) folded" in proc.stderr
