"""One atomic write for every file contextlens writes: a kill mid-write keeps the old file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from contextlens.core import atomic_files
from tests.helpers import HANG_SECONDS

# Run in a child process: the writer under test is made to write half of its output and then
# SIGKILL its own process, as a kill during the write would.
KILL_MID_WRITE = """
import io, os, signal, sys, pathlib
def half_then_kill(target, data):
    with open(target, "wb") as f:
        f.write(data[: len(data) // 2])
        f.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _run_killed(code: str) -> subprocess.CompletedProcess[str]:
    script = KILL_MID_WRITE + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_SECONDS)


def test_a_kill_during_plot_keeps_the_old_figure(tmp_path):
    old = tmp_path / "fig.png"
    old.write_bytes(b"the old figure")
    proc = _run_killed(
        f"""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.figure, matplotlib.pyplot as plt
        real = matplotlib.figure.Figure.savefig
        def savefig(self, fname, **kw):
            buf = io.BytesIO(); real(self, buf, **kw); half_then_kill(fname, buf.getvalue())
        matplotlib.figure.Figure.savefig = savefig
        from contextlens.reports.figures import save
        fig, ax = plt.subplots(); ax.plot([1, 2, 3])
        save(fig, {str(old)!r})
        """
    )
    assert proc.returncode == -9, proc.stderr
    assert old.read_bytes() == b"the old figure"  # before: half a PNG, the old figure gone


def test_a_kill_during_html_keeps_the_old_page(tmp_path):
    old = tmp_path / "page.html"
    old.write_text("<p>the old page</p>")
    proc = _run_killed(
        f"""
        import pathlib
        pathlib.Path.write_bytes = lambda self, data: half_then_kill(self, data)
        pathlib.Path.write_text = lambda self, text, *a, **k: half_then_kill(self, text.encode())
        from contextlens.reports.interactive import write_page
        import plotly.graph_objects as go
        write_page([go.Figure(go.Scatter(y=[1, 2, 3]))], {str(old)!r}, "t")
        """
    )
    assert proc.returncode == -9, proc.stderr
    assert old.read_text() == "<p>the old page</p>"


def test_a_finished_plot_replaces_the_old_one_and_leaves_no_temporary(tmp_path):
    import matplotlib.pyplot as plt

    from contextlens.reports.figures import save

    for name in ("fig.png", "fig.svg", "fig.pdf"):
        path = tmp_path / name
        path.write_bytes(b"old")
        fig, ax = plt.subplots()
        ax.plot([1, 2])
        assert save(fig, path) == path
        head = path.read_bytes()[:5]
        assert head in (b"\x89PNG\r", b"%PDF-", b"<?xml"), (name, head)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.pdf", "fig.png", "fig.svg"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_files.atomic_path(path) as tmp:
        assert tmp.parent == path.parent and tmp.name.startswith(".out.json.") and tmp != path
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_text_and_bytes_and_modes(tmp_path):
    new = atomic_files.write_text(tmp_path / "sub" / "a.txt", "héllo")  # parent created
    assert new.read_bytes() == "héllo".encode()
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask  # a plain write's mode, not mkstemp's 0600
    kept = tmp_path / "b.bin"
    kept.write_bytes(b"old")
    kept.chmod(0o640)
    atomic_files.write_bytes(kept, b"new", durable=True)
    assert kept.read_bytes() == b"new" and stat.S_IMODE(kept.stat().st_mode) == 0o640


def test_the_temporary_carries_the_pid_last_so_leftovers_are_cleaned(tmp_path):
    from contextlens.core.cache_folders import clean_leftovers

    path = tmp_path / "entry.npz"
    with atomic_files.atomic_path(path) as tmp:
        assert tmp.name.endswith(f".tmp-{os.getpid()}")
        stale = tmp.with_name(tmp.name.replace(f"tmp-{os.getpid()}", "tmp-999999999"))
        stale.write_bytes(b"left by a killed run")
        tmp.write_bytes(b"x")
    clean_leftovers(path)
    assert [p.name for p in tmp_path.iterdir()] == ["entry.npz"]
    assert Path(path).read_bytes() == b"x"
