"""Regression tests for the corpus, senses and contextuality defects of issue 17, and the shape of
the corpus job (chunk work, folder, job; named text sets in ``contextlens.data``)."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contextlens.analyses.corpus import engines
from contextlens.analyses.corpus.extract import extract_corpus
from contextlens.analyses.corpus.readers import read_corpus
from contextlens.errors import DataFileError, InputError, TargetNotFoundError
from tests.helpers import run_cli

SRC = Path(__file__).resolve().parents[1] / "src" / "contextlens"
LINES = [
    f"Line {i}: the {'river bank was muddy' if i % 2 else 'bank raised its rates'}. Spring came." for i in range(8)
]


def one_line(proc) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "c.txt"
    path.write_text("\n".join(LINES) + "\n")
    return path


def extract_args(corpus: Path | str, out: Path | str, *extra: str) -> list[str]:
    return ["corpus", "extract", str(corpus), "--words", "bank,spring", "--out", str(out), "-m", "minilm",
            "--layers", "0,6", "--chunk", "100", "--line-breaks", "lines", *extra]  # fmt: skip


@pytest.fixture(scope="module")
def finished(tmp_path_factory, minilm) -> tuple[Path, Path]:
    """(corpus, a finished minilm extraction folder of it)."""
    tmp = tmp_path_factory.mktemp("finished")
    corpus = corpus_file(tmp)
    out = tmp / "out"
    extract_corpus(
        str(corpus), ["bank", "spring"], out, model="minilm", layers=[0, 6], chunk_chars=100, line_breaks="lines"
    )
    return corpus, out


def copy_folder(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for p in src.iterdir():
        (dst / p.name).write_bytes(p.read_bytes())
    return dst


# --- the shape of the job --------------------------------------------------------------------


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(module-level, function-level) contextlens imports of a module."""
    tree = ast.parse(path.read_text())
    top, inner = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("contextlens"):
            names = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
            (top if node in tree.body else inner).update(names)
    return top, inner


def test_corpus_modules_import_one_way_with_no_hidden_cycle():
    folder = SRC / "analyses" / "corpus"
    mods = {p.stem: _imports(p) for p in folder.glob("*.py")}
    prefix = "contextlens.analyses.corpus."
    graph = {
        m: {n[len(prefix) :].split(".")[0] for n in top if n.startswith(prefix)} & set(mods)
        for m, (top, _) in mods.items()
    }
    for m, (_, inner) in mods.items():  # no function-level import of a sibling (it would hide a cycle)
        assert not {n for n in inner if n.startswith(prefix)}, m
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        assert state.get(m) != 1, f"import cycle: {' -> '.join([*path, m])}"
        if state.get(m) == 2:
            return
        state[m] = 1
        for n in graph[m]:
            visit(n, [*path, m])
        state[m] = 2

    for m in graph:
        visit(m, [])
    assert "extract" not in graph["engines"] | graph["ray_engine"] | graph["chunks"] | graph["folder"]
    assert {"engines", "folder", "chunks"} <= graph["extract"]


def test_named_text_sets_live_in_data():
    top, inner = _imports(SRC / "data" / "text_sets.py")
    assert not {n for n in top | inner if n.startswith("contextlens.analyses")}  # data sits below analyses
    assert "contextlens.data.lee" in top and "contextlens.data.sense_sentences" in top
    for user in ("analyses/lesson/polysemy.py", "analyses/benchmarks/retrieval.py"):
        assert {"contextlens.data.lee", "contextlens.data.sense_sentences"} & _imports(SRC / user)[0], user
    from contextlens.data.text_sets import corpus_texts

    assert len(corpus_texts("builtin", 5)) == 5


# --- readers ---------------------------------------------------------------------------------


def test_deeply_nested_jsonl_line_is_one_line(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(DataFileError, match="nested too deeply"):
        list(read_corpus(str(path)))
    assert "nested too deeply" in one_line(run_cli(*extract_args(path, tmp_path / "o")))


def test_fifo_corpus_is_refused_not_read(tmp_path):
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(DataFileError, match="not a regular file"):
        list(read_corpus(str(fifo)))
    assert "not a regular file" in one_line(run_cli(*extract_args(fifo, tmp_path / "o")))


def test_empty_corpus_path_is_refused(tmp_path):
    with pytest.raises(InputError, match="`source`"):
        list(read_corpus(""))
    line = one_line(run_cli(*extract_args("", tmp_path / "o")))
    assert "CORPUS" in line and "holds no .txt" not in line


def test_binary_and_latin1_files_say_their_lines_were_skipped(tmp_path):
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9 au bord de la rivi\xe8re\n".encode("latin-1") * 3)
    line = one_line(run_cli(*extract_args(latin, tmp_path / "o")))
    assert "3 line(s) skipped as not UTF-8" in line and "is empty" not in line
    binary = tmp_path / "blob.txt"
    binary.write_bytes(bytes(range(128, 256)) * 20)
    assert "not UTF-8" in one_line(run_cli(*extract_args(binary, tmp_path / "o")))
    assert not (tmp_path / "o").exists()


def test_utf16_file_is_named_as_such(tmp_path):
    bom = tmp_path / "bom.txt"
    bom.write_text("The bank opened.\n", encoding="utf-16")
    assert "UTF-16" in one_line(run_cli(*extract_args(bom, tmp_path / "o")))
    bare = tmp_path / "le.txt"
    bare.write_text("The bank opened.\n", encoding="utf-16-le")
    with pytest.raises(DataFileError, match="NUL bytes.*UTF-16"):
        list(read_corpus(str(bare)))


def test_parquet_text_column_of_integers_says_its_type(tmp_path):
    path = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"text": [1, 2, 3]}), path)
    line = one_line(run_cli(*extract_args(path, tmp_path / "o")))
    assert "column 'text' holds int64" in line and "empty" not in line


# --- the output folder, checked before the model loads ------------------------------------------


@pytest.mark.parametrize("content", ["[]", "null", "[1, 2]"])
def test_manifest_that_is_not_an_object_is_one_line_everywhere(tmp_path, content):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "manifest.json").write_text(content)
    corpus = corpus_file(tmp_path)
    for args in (
        extract_args(corpus, folder),
        ["senses", "induce", str(folder), "--word", "bank"],
        ["eval", "contextuality", "--corpus", str(folder), "-m", "minilm"],
    ):
        assert "not a contextlens corpus manifest" in one_line(run_cli(*args)), args


def test_out_unrelated_non_empty_folder_needs_force(tmp_path, minilm):
    corpus = corpus_file(tmp_path)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes\n")
    line = one_line(run_cli(*extract_args(corpus, out)))
    assert "not empty (notes.txt)" in line and "--force" in line
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    proc = run_cli(*extract_args(corpus, out, "--force"))
    assert proc.returncode == 0, proc.stderr
    assert (out / "notes.txt").read_text() == "my notes\n" and (out / "manifest.json").is_file()


def test_foreign_shard_without_manifest_is_not_counted_as_done(tmp_path):
    corpus = corpus_file(tmp_path)
    out = tmp_path / "o"
    out.mkdir()
    pq.write_table(pa.table({"x": [1]}), out / "part-000000.parquet")
    for extra in ((), ("--force",)):
        line = one_line(run_cli(*extract_args(corpus, out, *extra)))
        assert "part-000000.parquet but no manifest.json" in line and "corpus" not in line.split(":")[-1]


def test_out_empty_string_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    corpus = corpus_file(tmp_path)
    assert "empty" in one_line(run_cli(*extract_args(corpus, "")))
    with pytest.raises(InputError, match="`out` is empty"):
        extract_corpus(str(corpus), ["bank"], "", model="minilm", line_breaks="lines")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt"]


def test_engine_options_the_engine_would_ignore_are_refused(tmp_path):
    corpus = corpus_file(tmp_path)
    assert "--actors 2 is for --engine ray" in one_line(run_cli(*extract_args(corpus, tmp_path / "o", "--actors", "2")))
    line = one_line(run_cli(*extract_args(corpus, tmp_path / "o", "--address", "auto")))
    assert "--address 'auto'" in line and "--engine ray" in line
    with pytest.raises(InputError, match="`actors` 3 is for `engine` ray"):
        engines.check("local", None, 3, None)
    assert not (tmp_path / "o").exists()


def test_ray_threads_beyond_the_cpus_are_refused_before_ray_starts(tmp_path, monkeypatch):
    from contextlens.analyses.corpus import ray_engine

    def no_start(*_a, **_k):
        raise AssertionError("Ray was started before the threads were checked")

    monkeypatch.setattr(ray_engine, "start_ray", no_start)
    corpus = corpus_file(tmp_path)
    line = one_line(run_cli(*extract_args(corpus, tmp_path / "o", "--engine", "ray", "--threads", "999")))
    assert "999 thread(s)" in line and "--threads" in line
    assert not (tmp_path / "o").exists()


def test_actors_that_no_node_can_place_are_refused_not_left_waiting():
    """Ray waits forever, silently, for a place for an actor no node can hold: the check counts
    each node's places, not only the cluster's total (two 1-CPU nodes hold two 1-thread actors,
    not one 2-thread actor)."""
    from contextlens.analyses.corpus.ray_engine import check_threads

    check_threads(2, 1, [1, 1])
    check_threads(2, 2, [4])
    with pytest.raises(InputError, match=r"fit on 0 place\(s\) only.*nodes have 1, 1 CPUs.*at most 1"):
        check_threads(1, 2, [1, 1])
    with pytest.raises(InputError, match=r"fit on 2 place\(s\) only"):
        check_threads(3, 2, [3, 3])
    with pytest.raises(InputError, match="need 6 CPUs; the Ray cluster has 2"):
        check_threads(3, 2, [1, 1])


def test_precision_rerun_of_an_fp32_folder_is_refused_before_any_model_loads(tmp_path, finished, monkeypatch):
    import contextlens.cli.corpus as cli_corpus

    corpus, done = finished
    folder = copy_folder(done, tmp_path / "f")

    def no_load(*_a, **_k):
        raise AssertionError("a model was loaded before the folder was checked")

    monkeypatch.setattr(cli_corpus, "contextual_option", no_load)
    line = one_line(run_cli(*extract_args(corpus, folder, "--precision", "int8")))
    assert "precision='fp32', not 'int8'" in line and "--out" in line


def test_extract_loads_one_model_with_its_runtime(tmp_path, monkeypatch):
    import contextlens.cli.corpus as cli_corpus
    import contextlens.core.contextual_models as contextual_models

    calls = []

    class Stop(InputError):
        pass

    def record(name, precision="fp32", threads=None, runtime="torch", device="auto"):
        calls.append((name, precision, runtime, device))
        raise Stop("stop after the load")

    def other_load(*_a, **_k):
        raise AssertionError("a second model load")

    monkeypatch.setattr(cli_corpus, "contextual_option", record)
    monkeypatch.setattr(contextual_models, "load_contextual", other_load)
    corpus = corpus_file(tmp_path)
    proc = run_cli(*extract_args(corpus, tmp_path / "o", "--runtime", "onnx", "--precision", "int8"))
    assert "stop after the load" in one_line(proc)
    assert calls == [("minilm", "int8", "onnx", "auto")]  # --device's default


def test_many_absent_words_are_listed_bounded(tmp_path, minilm):
    corpus = corpus_file(tmp_path)
    words = tmp_path / "words.txt"
    words.write_text("bank\n" + "".join(f"zzabsent{i}\n" for i in range(4999)))
    args = extract_args(corpus, tmp_path / "o")
    args[args.index("--words") : args.index("--words") + 2] = ["--words-file", str(words)]
    line = one_line(run_cli(*args))
    assert "and 4,989 more never occur" in line and len(line) < 600
    with pytest.raises(TargetNotFoundError, match="`targets`"):
        extract_corpus(str(corpus), ["bank", "zzq"], tmp_path / "o2", model="minilm", layers=[0], line_breaks="lines")


# --- damaged shards ----------------------------------------------------------------------------


def _damage(path: Path, how: str) -> None:
    if how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif how == "empty":
        path.write_bytes(b"")
    else:  # a whole Parquet file of someone else's
        pq.write_table(pa.table({"x": [1, 2]}), path)


@pytest.mark.parametrize("how", ["truncated", "empty", "foreign"])
def test_damaged_shard_is_one_line_everywhere(tmp_path, finished, how):
    corpus, done = finished
    folder = copy_folder(done, tmp_path / "f")
    _damage(folder / "part-000000.parquet", how)
    cases = [
        extract_args(corpus, folder),  # the complete job notices
        ["senses", "induce", str(folder), "--word", "bank"],
        ["eval", "contextuality", "--corpus", str(folder), "-m", "minilm", "--min-contexts", "2"],
    ]
    for args in cases:
        line = one_line(run_cli(*args))
        assert "part-000000.parquet is damaged" in line, (args, line)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["complete"] = False  # an unfinished job resumed over the damaged shard
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert "part-000000.parquet is damaged" in one_line(run_cli(*extract_args(corpus, folder)))


def test_shards_write_their_vectors_plain_and_describe_the_other_columns(finished):
    """pyarrow's defaults hash every float of every vector for a dictionary it then drops, and keep
    min/max statistics of vector elements no reader filters on: 2.7x slower on Lee's shards."""
    _, out = finished
    for path in sorted(out.glob("part-*.parquet")):
        group = pq.ParquetFile(path).metadata.row_group(0)
        columns = {group.column(i).path_in_schema.split(".")[0]: group.column(i) for i in range(group.num_columns)}
        for name in ("layer_0", "layer_6"):
            assert not any("DICTIONARY" in e for e in columns[name].encodings), (path.name, columns[name].encodings)
            assert columns[name].statistics is None or not columns[name].statistics.has_min_max
        for name in ("doc_id", "sentence", "target"):
            assert any("DICTIONARY" in e for e in columns[name].encodings), (path.name, name)
            assert columns[name].statistics is not None and columns[name].statistics.has_min_max


def test_deleted_shard_of_a_complete_job_is_noticed(tmp_path, finished):
    corpus, done = finished
    folder = copy_folder(done, tmp_path / "f")
    (folder / "part-000001.parquet").unlink()
    assert "shards where its finished job wrote" in one_line(run_cli(*extract_args(corpus, folder)))


# --- eval contextuality --corpus DIR ---------------------------------------------------------------


def test_contextuality_of_a_folder_checks_every_option(finished):
    corpus, folder = finished
    base = ["eval", "contextuality", "--corpus", str(folder)]
    for value in ("1", "0", "-5"):
        assert "--min-contexts" in one_line(run_cli(*base, "-m", "minilm", "--min-contexts", value)), value
    line = one_line(run_cli(*base, "-m", "mpnet", "--min-contexts", "2"))
    assert "extracted with minilm, not mpnet" in line and "--model minilm" in line
    line = one_line(run_cli(*base, "-m", "minilm", "--precision", "int8", "--min-contexts", "2"))
    assert "--precision fp32" in line
    assert "--runtime torch" in one_line(run_cli(*base, "-m", "minilm", "--runtime", "onnx", "--min-contexts", "2"))
    proc = run_cli(*base, "-m", "minilm", "--min-contexts", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["model"] == "minilm"


def test_min_contexts_without_corpus_is_refused():
    assert "--min-contexts is for --corpus" in one_line(run_cli("eval", "contextuality", "--min-contexts", "5"))


@pytest.mark.parametrize("flag", ["--max-words", "--sentences"])
def test_corpus_only_options_without_corpus_are_refused(flag):
    """--max-words and --sentences sample a --corpus; without one they were silently ignored."""
    assert f"{flag} is for --corpus" in one_line(run_cli("eval", "contextuality", flag, "5"))
