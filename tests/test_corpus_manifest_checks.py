"""Issue 35: an extraction folder is checked against its manifest once, where a reader opens it
(model, layers, hidden size, dtype, shards, rows, finite non-zero vectors), by every command that
reads one: `corpus search`, `corpus export`, `senses induce`, `eval contextuality --corpus`, the
web sense map and corpus search, and `serve --corpus` at start-up."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contextlens.analyses.corpus import folder_check
from contextlens.analyses.corpus.extract import extract_corpus
from contextlens.analyses.corpus.folder import layer_matrix
from contextlens.analyses.corpus.folder_check import CHECKED, checked_folder
from contextlens.errors import DataFileError, InputError
from tests.helpers import free_port, run_cli

RIVER = ["The river bank was muddy after the rain.", "We walked along the grassy bank of the stream.",
         "Fish hid under the bank where the water was deep.", "The canoe drifted toward the far bank."]  # fmt: skip
MONEY = ["The bank raised its interest rates.", "She opened an account at the bank.",
         "The bank approved the loan on Monday.", "He robbed a bank in the city centre."]  # fmt: skip
LIKE = "The river [bank] flooded."
LAYERS_TEXT = "\"layers\" is '3,6'"  # a manifest field is named as its JSON key


@pytest.fixture(scope="module")
def folder(tmp_path_factory, minilm) -> Path:
    """A healthy minilm folder: layers 3 and 6, 9 rows in 5 shards (part-000000 holds 3 rows)."""
    tmp = tmp_path_factory.mktemp("checks")
    quiet = [f"Line {i} holds no target at all, only words." for i in range(6)]  # shards of no row
    (tmp / "c.txt").write_text("\n".join(RIVER + quiet + MONEY + ["Spring came early. Nothing else."]) + "\n")
    extract_corpus(
        str(tmp / "c.txt"),
        ["bank", "spring"],
        tmp / "x",
        model="minilm",
        layers=[3, 6],
        chunk_chars=120,
        line_breaks="lines",
    )
    return tmp / "x"


def one_line(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def copy(folder: Path, where: Path) -> Path:
    shutil.copytree(folder, where)
    return where


def edit_manifest(folder: Path, **changes) -> None:
    path = folder / "manifest.json"
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if key == "rows":
            data["counts"]["rows"] = value
        else:
            data[key] = value
    path.write_text(json.dumps(data))


def set_vectors(path: Path, column: str, value: float, rows=slice(None), width: int | None = None) -> None:
    """Rewrite one vector column of a shard (its other columns and metadata kept), with pyarrow."""
    table = pq.read_table(path)
    x = layer_matrix(table, column).astype(np.float16)
    x[rows] = value
    if width is not None:
        x = x[:, :width]
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1), type=pa.float16()), x.shape[1])
    at = table.schema.get_field_index(column)
    pq.write_table(table.set_column(at, pa.field(column, vectors.type), vectors), path)


def shard(folder: Path, n: int) -> Path:
    return folder / f"part-{n:06d}.parquet"


# name -> (how the copy is damaged, what the one line says)
DAMAGES = {
    "nan": (lambda f: set_vectors(shard(f, 0), "layer_6", np.nan),
            ["part-000000.parquet is damaged", "layer_6 vectors of 3 of 3 rows, from row 0, hold NaN or infinite"]),
    "one-inf": (lambda f: set_vectors(shard(f, 0), "layer_3", np.inf, rows=1),
                ["part-000000.parquet", "layer_3 vector of row 1 holds NaN or infinite"]),
    "zero": (lambda f: set_vectors(shard(f, 0), "layer_6", 0.0), ["part-000000.parquet", "only zeros"]),
    "one-zero": (lambda f: set_vectors(shard(f, 0), "layer_3", 0.0, rows=2),
                 ["part-000000.parquet", "layer_3 vector of row 2 holds only zeros"]),
    "width": (lambda f: set_vectors(shard(f, 0), "layer_6", 0.5, width=383),
              ["part-000000.parquet", "its layer_6 is 383 x float16, where the manifest says 384 x float16"]),
    "zero-byte": (lambda f: shard(f, 1).write_bytes(b""), ["part-000001.parquet is damaged", "0 bytes"]),
    "missing": (lambda f: shard(f, 1).unlink(), ["missing shard part-000001.parquet of the 5"]),
    "extra": (lambda f: shutil.copy(shard(f, 1), shard(f, 7)), ["part-000007.parquet is not one of them"]),
    "mpnet": (lambda f: edit_manifest(f, model="mpnet"),
              ["says model mpnet with hidden_size 384, but mpnet's vectors are 768-d"]),
    "hidden": (lambda f: edit_manifest(f, hidden_size=768),
               ["says model minilm with hidden_size 768, but minilm's vectors are 384-d"]),
    "layer-9": (lambda f: edit_manifest(f, layers=[3, 6, 9]), ["lists layer 9, but minilm has layers 0..6"]),
    "layer-5": (lambda f: edit_manifest(f, layers=[3, 5, 6]), ["part-000000.parquet", "it has no column layer_5"]),
    "dtype": (lambda f: edit_manifest(f, dtype="float32"),
              ["part-000000.parquet", "its layer_3 is 384 x float16, where the manifest says 384 x float32"]),
    "dtype-unknown": (lambda f: edit_manifest(f, dtype="float64"), ["says dtype 'float64', not one of"]),
    "rows": (lambda f: edit_manifest(f, rows=10), ["hold 9 rows where its finished extraction wrote 10"]),
    "layers-text": (lambda f: edit_manifest(f, layers="3,6"),
                    ["not a contextlens corpus manifest", LAYERS_TEXT]),
    "hidden-text": (lambda f: edit_manifest(f, hidden_size="384"), ['"hidden_size" is \'384\'']),
}  # fmt: skip


@pytest.fixture(scope="module")
def damaged(folder, tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("damaged")
    out = {}
    for name, (damage, _) in DAMAGES.items():
        out[name] = copy(folder, tmp / name)
        damage(out[name])
    return out


def readers(target: Path, tmp: Path) -> dict[str, list[str]]:
    try:  # eval contextuality refuses another model first: ask it for the folder's own
        model = json.loads((target / "manifest.json").read_text())["model"]
    except (KeyError, ValueError):
        model = "minilm"
    return {
        "corpus search": ["corpus", "search", str(target), "--like", LIKE, "--top", "2"],
        "corpus export": ["corpus", "export", str(target), "--out", str(tmp / f"export-{target.name}")],
        "senses induce": ["senses", "induce", str(target), "--word", "bank"],
        "eval contextuality": ["eval", "contextuality", "--corpus", str(target), "-m", model, "--min-contexts", "2"],
    }


@pytest.mark.parametrize("name", list(DAMAGES))
def test_every_cli_reader_refuses_a_damaged_folder_in_one_line(name, damaged, tmp_path):
    expected = DAMAGES[name][1]
    for reader, args in readers(damaged[name], tmp_path).items():
        line = one_line(run_cli(*args))
        for part in expected:
            assert part in line, (reader, line)
    assert not (tmp_path / f"export-{name}").exists()  # refused before anything was written


def test_the_check_is_typed_and_names_how_to_fix(damaged):
    for name in ("nan", "zero", "zero-byte", "missing", "mpnet", "rows", "width"):
        with pytest.raises(DataFileError) as caught:
            checked_folder(damaged[name])
        message = str(caught.value)
        assert "\n" not in message and message.endswith(f"; {folder_check.FIX}"), message
    with pytest.raises(InputError, match=LAYERS_TEXT):
        checked_folder(damaged["layers-text"])


def test_a_healthy_folder_still_works_everywhere(folder, tmp_path):
    from contextlens.cli.serve import parse_corpora

    manifest = checked_folder(folder)
    assert manifest.layers == [3, 6] and manifest.hidden_size == 384 and manifest.counts["rows"] == 9
    proc = run_cli("corpus", "search", str(folder), "--like", LIKE, "--top", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["hits"]) == 3 and doc["hits"][0]["sentence"] == RIVER[0] and doc["searched"] == 9
    proc = run_cli("corpus", "export", str(folder), "--out", str(tmp_path / "p"), "--no-senses", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["rows"] == 9, proc.stderr
    proc = run_cli("senses", "induce", str(folder), "--word", "bank", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["k"] >= 1, proc.stderr
    assert parse_corpora([f"wiki.v2_b-1={folder}"]) == {"wiki.v2_b-1": str(folder)}  # a plain name passes


def test_the_vectors_are_read_once_not_on_every_open(folder, tmp_path, monkeypatch, minilm):
    """Memory within a process, vectors-checked.json across processes, and only a changed shard
    read again; a reader that opens the folder several times (a sense map: every layer) reads
    each shard's vectors once."""
    from contextlens.analyses.corpus.occurrence_search import search_occurrences
    from contextlens.analyses.corpus.sense_map import sense_map

    scanned: list[str] = []
    footers: list[str] = []
    real, footer = folder_check.scan_vectors, folder_check._check_footer
    monkeypatch.setattr(folder_check, "scan_vectors", lambda path, cols: (scanned.append(path.name), real(path, cols)))
    monkeypatch.setattr(folder_check, "_check_footer", lambda path, m: (footers.append(path.name), footer(path, m))[1])
    mine = copy(folder, tmp_path / "f")
    (mine / CHECKED).unlink(missing_ok=True)
    folder_check.clear_cache()
    checked_folder(mine)
    assert sorted(scanned) == [f"part-{i:06d}.parquet" for i in range(5)]
    assert json.loads((mine / CHECKED).read_text())["shards"].keys() == set(scanned)
    checked_folder(mine)
    search_occurrences(mine, LIKE, top=2, model=minilm, baseline=False)
    assert len(scanned) == 5  # kept in memory: nothing read again
    folder_check.clear_cache()  # as a new process: the file beside the shards vouches for them
    checked_folder(mine)
    assert len(scanned) == 5 and len(footers) == 5  # not even a footer read again
    set_vectors(shard(mine, 3), "layer_6", np.nan)
    with pytest.raises(DataFileError, match="part-000003.parquet"):
        checked_folder(mine)
    assert scanned[5:] == footers[5:] == ["part-000003.parquet"]  # only the shard that changed
    shutil.copy(shard(folder, 3), shard(mine, 3))  # repaired: passes again
    checked_folder(mine)
    assert scanned[6:] == ["part-000003.parquet"]
    (mine / CHECKED).unlink()
    folder_check.clear_cache()
    scanned.clear()
    sense_map(mine, "bank", k=2)  # the map's own check, then one induction per layer: each opens it
    assert sorted(scanned) == [f"part-{i:06d}.parquet" for i in range(5)]


def test_a_folder_that_cannot_be_written_is_still_checked(folder, tmp_path, monkeypatch):
    mine = copy(folder, tmp_path / "ro")
    (mine / CHECKED).unlink(missing_ok=True)
    folder_check.clear_cache()

    def refuse(*args, **kwargs):
        raise PermissionError("read-only")

    monkeypatch.setattr(folder_check.atomic_files, "write_text", refuse)
    assert checked_folder(mine).model == "minilm" and not (mine / CHECKED).exists()
    set_vectors(shard(mine, 0), "layer_3", 0.0)
    with pytest.raises(DataFileError, match="only zeros"):
        checked_folder(mine)


def test_a_foreign_or_stale_check_record_is_not_trusted(folder, tmp_path):
    mine = copy(folder, tmp_path / "f")
    checked_folder(mine)
    record = json.loads((mine / CHECKED).read_text())
    set_vectors(shard(mine, 0), "layer_6", np.nan)
    record["shards"]["part-000000.parquet"]["columns"] = ["layer_3"]  # vouches for another column only
    stat = shard(mine, 0).stat()
    record["shards"]["part-000000.parquet"].update(bytes=stat.st_size, mtime_ns=stat.st_mtime_ns)
    (mine / CHECKED).write_text(json.dumps(record))
    folder_check.clear_cache()
    with pytest.raises(DataFileError, match="layer_6 vectors of 3 of 3 rows"):
        checked_folder(mine)
    (mine / CHECKED).write_text("[1, 2]")  # not ours: ignored, everything read
    with pytest.raises(DataFileError, match="NaN"):
        checked_folder(mine)


def test_search_refuses_a_loaded_model_of_another_width(folder):
    """Where the folder's model had no config on disk when it was opened, the loaded one is
    compared (FAISS asserted on the mismatch)."""
    from contextlens.analyses.corpus.occurrence_search import check_model_is_the_folders

    manifest = checked_folder(folder)
    other = SimpleNamespace(name="minilm", precision="fp32", runtime="torch", hidden_size=768)
    with pytest.raises(DataFileError, match="holds 384-d vectors, but its model minilm makes 768-d ones"):
        check_model_is_the_folders(manifest, other, folder)
    check_model_is_the_folders(manifest, SimpleNamespace(**{**vars(other), "hidden_size": 384}), folder)


@pytest.mark.parametrize(
    "changes, field",
    [({"layers": "3,6"}, "layers"), ({"layers": [6, 3]}, "layers"), ({"layers": [True, 6]}, "layers"),
     ({"layers": []}, "layers"), ({"hidden_size": 384.0}, "hidden_size"), ({"model": 5}, "model"),
     ({"targets": "bank"}, "targets"), ({"dtype": None}, "dtype"), ({"complete": "yes"}, "complete"),
     ({"counts": []}, "counts"), ({"rows": "9"}, "counts.rows")],
)  # fmt: skip
def test_manifest_fields_of_the_wrong_type_are_one_line(folder, tmp_path, changes, field):
    mine = copy(folder, tmp_path / "f")
    edit_manifest(mine, **changes)
    with pytest.raises(InputError, match=f'"{field}" is '):
        checked_folder(mine)
    line = one_line(run_cli("corpus", "search", str(mine), "--like", LIKE))
    assert f'"{field}" is ' in line and "not a contextlens corpus manifest" in line


def test_extract_resume_over_a_hand_edited_manifest_is_one_line(folder, tmp_path):
    mine = copy(folder, tmp_path / "f")
    edit_manifest(mine, layers="3,6")
    corpus = folder.parent / "c.txt"
    args = ["corpus", "extract", str(corpus), "--words", "bank,spring", "--out", str(mine), "-m", "minilm",
            "--layers", "3,6", "--chunk", "120"]  # fmt: skip
    assert LAYERS_TEXT in one_line(run_cli(*args))


@pytest.fixture(scope="module")
def web(minilm, damaged):
    from fastapi.testclient import TestClient

    from contextlens.web.app import create_app

    return TestClient(
        create_app("minilm", corpora={n: str(p) for n, p in damaged.items()}), base_url="http://127.0.0.1"
    )


@pytest.mark.parametrize("name", ["nan", "zero", "zero-byte", "missing", "mpnet", "layers-text", "width"])
def test_the_web_answers_400_without_the_servers_paths(web, damaged, name):
    expected = DAMAGES[name][1]
    answers = [
        web.post("/api/sense-map", json={"corpus": name, "word": "bank"}),
        web.post("/api/corpus-search", json={"corpus": name, "like": LIKE}),
    ]
    for answer in answers:
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert "\n" not in error and str(damaged[name].parent) not in error, error
        assert expected[-1] in error, error
    page = web.get("/sense-map", params={"corpus": name, "word": "bank"})
    assert page.status_code == 400 and 'class="error"' in page.text and "Traceback" not in page.text
    assert str(damaged[name].parent) not in page.text


@pytest.fixture()
def no_server(monkeypatch):
    """A `serve` that got past its checks fails the test instead of serving until killed."""
    import uvicorn

    def started(*args, **kwargs):
        raise AssertionError("the server started")

    monkeypatch.setattr(uvicorn, "run", started)


@pytest.mark.parametrize("name", ["zero-byte", "missing", "nan", "mpnet"])
def test_serve_refuses_a_damaged_corpus_at_start(damaged, name, no_server):
    line = one_line(run_cli("serve", "-m", "minilm", "--port", str(free_port()), "--corpus", f"c={damaged[name]}"))
    assert DAMAGES[name][1][-1] in line, line


@pytest.mark.parametrize("name", ["a/b", "../x", "a b", "x?y", "-x", ".hidden", "n" * 101])
def test_serve_refuses_a_corpus_name_that_is_not_plain(folder, name, no_server):
    line = one_line(run_cli("serve", "-m", "minilm", "--port", str(free_port()), "--corpus", f"{name}={folder}"))
    assert "is not a plain name" in line, line
