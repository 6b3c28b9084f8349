"""An index folder on disk: always an index to find, leftovers cleaned, other files never deleted."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from contextlens.analyses.search import index_files
from contextlens.analyses.search.encoders import TextEncoder
from contextlens.analyses.search.index import Document, IndexConfig, VectorIndex, build_faiss_index, search_index
from contextlens.analyses.search.index_files import CURRENT, current_folder
from contextlens.errors import DataFileError, InputError
from helpers import assert_plain_json, run_cli

OLD = ["The river burst its banks.", "The central bank raised rates.", "A recipe for chocolate cake."]
NEW = ["Volcanic ash grounded flights.", "The striker scored twice.", "Interest rates and inflation."]


class Killed(Exception):
    """Stands for a kill -9 at a seam between two steps of a build."""


@pytest.fixture(scope="module")
def encoder(minilm):
    return TextEncoder(minilm, "sentence")


def make(encoder, texts):
    docs = [Document(str(i), t) for i, t in enumerate(texts)]
    x = encoder.encode(texts)
    config = IndexConfig("flat").resolved(len(docs), x.shape[1])
    return VectorIndex(encoder.provenance, config, build_faiss_index(x, config), docs)


def texts_in(folder):
    return [d.text for d in VectorIndex.load(folder).documents]


def dead_pid() -> int:
    pid = 4_000_000
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid += 1


def test_layout_is_a_pointer_and_one_version(encoder, tmp_path):
    folder = make(encoder, OLD).save(tmp_path / "ix")
    names = sorted(p.name for p in folder.iterdir())
    assert names[0] == CURRENT and len(names) == 2 and names[1].startswith("v-")
    assert (folder / CURRENT).read_text().strip() == names[1]
    assert sorted(p.name for p in current_folder(folder).iterdir()) == ["docs.jsonl", "index.faiss", "manifest.json"]
    make(encoder, NEW).save(folder)  # a rebuild replaces the version, and leaves one
    assert len([p for p in folder.iterdir() if p.name.startswith("v-")]) == 1 and texts_in(folder) == NEW


def test_a_kill_before_the_switch_keeps_the_old_index_and_the_next_build_cleans_up(encoder, tmp_path, monkeypatch):
    folder = make(encoder, OLD).save(tmp_path / "ix")
    old_version = current_folder(folder).name

    def killed(*_args):
        raise Killed

    with monkeypatch.context() as m:
        m.setattr(index_files, "switch_current", killed)
        with pytest.raises(Killed):
            make(encoder, NEW).save(folder)
    versions = sorted(p.name for p in folder.iterdir() if p.name.startswith("v-"))
    assert len(versions) == 2 and current_folder(folder).name == old_version  # the new one is an orphan
    assert texts_in(folder) == OLD
    result = search_index(folder, "flooding by the river", k=1)
    assert result.hits[0].text == OLD[0]
    make(encoder, NEW).save(folder)
    assert texts_in(folder) == NEW
    assert [p.name for p in folder.iterdir() if p.name.startswith("v-")] == [current_folder(folder).name]


def test_a_kill_after_the_switch_serves_the_new_index_and_the_next_build_cleans_up(encoder, tmp_path, monkeypatch):
    folder = make(encoder, OLD).save(tmp_path / "ix")

    def killed(*_args):
        raise Killed

    with monkeypatch.context() as m:
        m.setattr(index_files, "remove_replaced", killed)
        with pytest.raises(Killed):
            make(encoder, NEW).save(folder)
    assert texts_in(folder) == NEW and len([p for p in folder.iterdir() if p.name.startswith("v-")]) == 2
    make(encoder, OLD).save(folder)
    assert texts_in(folder) == OLD and len([p for p in folder.iterdir() if p.name.startswith("v-")]) == 1


def test_leftovers_of_the_old_layout_and_pointer_temporaries_are_cleaned(encoder, tmp_path):
    pid = dead_pid()
    for name in (f".ix.tmp-{pid}", f".ix.old-{pid}"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "index.faiss").write_bytes(b"x")
    keep = tmp_path / f".ix.old-{os.getppid()}"  # a live process's: left alone
    keep.mkdir()
    folder = tmp_path / "ix"
    folder.mkdir()
    (folder / f"{CURRENT}.tmp-{pid}").write_text("v-x\n")
    make(encoder, OLD).save(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([keep.name, "ix"])
    assert not (folder / f"{CURRENT}.tmp-{pid}").exists()


def test_an_index_in_the_layout_before_the_pointer_is_read_and_replaced(encoder, tmp_path):
    folder = make(encoder, OLD).save(tmp_path / "ix")
    version = current_folder(folder)
    for f in version.iterdir():
        shutil.move(f, folder / f.name)
    version.rmdir()
    (folder / CURRENT).unlink()
    assert current_folder(folder) == folder and texts_in(folder) == OLD
    make(encoder, NEW).save(folder)
    assert texts_in(folder) == NEW
    assert sorted(p.name for p in folder.iterdir())[0] == CURRENT and not (folder / "manifest.json").exists()


def test_a_folder_with_other_files_is_refused_unless_forced_and_they_are_kept(encoder, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("my notes")
    with pytest.raises(InputError, match=r"not a contextlens index's \(notes.txt\).*`force`"):
        make(encoder, OLD).save(folder)
    make(encoder, OLD).save(folder, force=True)
    make(encoder, NEW).save(folder, force=True)
    assert (folder / "notes.txt").read_text() == "my notes" and texts_in(folder) == NEW
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        make(encoder, OLD).save(tmp_path / "afile")


def test_a_pointer_to_nothing_is_a_damaged_index(encoder, tmp_path):
    folder = make(encoder, OLD).save(tmp_path / "ix")
    (folder / CURRENT).write_text("v-20000101T000000000000-1\n")
    with pytest.raises(DataFileError, match="names no version"):
        VectorIndex.load(folder)


def test_search_result_to_dict_is_plain_json(encoder, tmp_path):
    folder = make(encoder, OLD).save(tmp_path / "ix")
    result = search_index(folder, "cake", k=2)
    out = result.to_dict()
    assert_plain_json(out)
    assert out["encoder"] == {"model": "minilm", "kind": "sentence", "layer": None, "dim": 384, "precision": "fp32"}
    assert out["hits"][0]["text"] == OLD[2]
    manifest = json.loads((current_folder(folder) / "manifest.json").read_text())
    assert manifest["encoder"] == out["encoder"]  # the manifest's shape, with the precision


def test_cli_build_refuses_bad_out_and_batch_size_before_loading_a_model(tmp_path):
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(OLD) + "\n")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    # the model does not exist: a check that ran after loading it would report the model instead
    for args, needle in (
        (["--out", str(tmp_path / "afile" / "ix")], "is a file"),
        (["--out", str(tmp_path / "afile")], "is a file"),
        (["--out", "/proc/ix"], "not writable"),
        (["--out", str(tmp_path / "mine")], "--force"),
        (["--out", str(tmp_path / "ix"), "--batch-size", "0"], "--batch-size"),
    ):
        proc = run_cli("index", "build", str(docs), "--model", "no-such-model", *args)
        assert proc.returncode == 2 and needle in proc.stderr, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "ix").exists()


def test_encode_refuses_a_batch_size_below_one(encoder):
    # the API names its own parameter; the CLI says --batch-size (test above)
    with pytest.raises(InputError, match="^batch_size must be"):
        encoder.encode(OLD, batch_size=0)
