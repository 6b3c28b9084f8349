"""Cache folders built whole: a cache entry is either absent or complete.

Files are written through :mod:`contextlens.core.atomic_files`; folders under a temporary name in
the same folder, then renamed into place (``os.replace`` is atomic). An interrupted run leaves at
most a temporary, which the next run removes (:func:`clean_leftovers`) and builds again. Two
builders at once take turns (:func:`build_lock`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from contextlens.core.numerals import is_digits


@contextlib.contextmanager
def build_lock(target: Path) -> Iterator[None]:
    """Held while ``target`` is built (an assembled model, an ONNX export): one builder per machine
    at a time, threads included (an flock on a file beside it, ``.NAME.lock``). Two first uses at
    once otherwise both build, and the second swaps its copy in under the first's readers (a new
    folder, new file dates: a model's export key moved and its graph folder was "missing"). The
    caller checks again, once it holds the lock, whether the target is complete."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def temp_dir_for(target: Path) -> Path:
    """A fresh temporary folder beside ``target`` (same file system), for :func:`replace_dir`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_leftovers(target)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    return tmp


def replace_dir(new: Path, target: Path) -> None:
    """Move the complete folder ``new`` to ``target``; an old ``target`` is swapped out first."""
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    if target.exists():
        os.replace(target, old)
    try:
        os.replace(new, target)
    except OSError:
        if not target.is_dir():
            raise
        # Another process put its own complete copy in place meanwhile; keep that one.
    shutil.rmtree(old, ignore_errors=True)


def clean_leftovers(target: Path) -> None:
    """Remove the temporaries that an interrupted build of ``target`` left (dead processes only)."""
    for stale in target.parent.glob(f".{target.name}.*-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if is_digits(pid) and running_elsewhere(int(pid)):
            continue
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


def running_elsewhere(pid: int) -> bool:
    """Whether another live process has this id: a temporary named by it may still be written. Our
    own id's leftovers are from an earlier, failed try in this process, so they are not kept."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
