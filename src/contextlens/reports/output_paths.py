"""Check an output path before the work, so a wrong path costs nothing and never loses a result.

Every command that writes a file (``--plot``, ``--html``) or a folder (``index build --out``)
calls these first: the user learns in one line what to change before any model is loaded.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from contextlens.errors import OutputPathError

FIGURE_SUFFIXES: tuple[str, ...] = (".png", ".svg", ".pdf")  # what matplotlib's savefig writes here
HTML_SUFFIXES: tuple[str, ...] = (".html", ".htm")


def check_output_path(path: Path | str, suffixes: Sequence[str]) -> Path:
    """The final path a file will be written to, checked to be writable.

    A path without a suffix gets the first of ``suffixes`` (``fig`` -> ``fig.png``); an unknown
    suffix, a directory, a missing or non-directory parent and an unwritable parent are refused,
    each with one line saying what to change.
    """
    allowed = [s.lower() if s.startswith(".") else f".{s.lower()}" for s in suffixes]
    path = Path(path)
    if str(path) in ("", "."):
        raise OutputPathError(f"the output path is empty; give a file name ending in {' or '.join(allowed)}")
    if path.is_dir():
        raise OutputPathError(f"{path} is a folder; give a file name inside it, like {path / ('figure' + allowed[0])}")
    if not path.suffix:
        path = path.with_name(path.name + allowed[0])
    elif path.suffix.lower() not in allowed:
        raise OutputPathError(
            f"{path} has the suffix {path.suffix!r}, which cannot be written here; use {' or '.join(allowed)}"
        )
    if path.is_dir():
        raise OutputPathError(f"{path} is a folder; give a file name inside it, like {path / ('figure' + allowed[0])}")
    _check_parent(path)
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputPathError(f"{path} exists and is read-only; choose another file or make it writable")
    return path


def check_output_folder(path: Path | str) -> Path:
    """A folder that will be created or written into: refuse a file, or an unwritable place.

    Missing folders are created on write, so what must exist is the nearest existing ancestor,
    and it must be a writable folder.
    """
    if not str(path).strip():  # checked before Path(), which turns "" into "." (the current folder)
        raise OutputPathError("the output folder is empty; give a folder name")
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise OutputPathError(f"{path} is a file, not a folder; give a folder for the output")
        if not _writable(path):
            raise OutputPathError(f"{path} is not writable; choose a folder you can write to")
        return path
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputPathError(f"{ancestor} is a file, so {path} cannot be created; choose another folder")
    if not _writable(ancestor):
        raise OutputPathError(f"{ancestor} is not writable, so {path} cannot be created; choose another folder")
    return path


def _check_parent(path: Path) -> None:
    parent = path.parent
    if not parent.exists():
        raise OutputPathError(f"the folder {parent} does not exist; create it first or write elsewhere")
    if not parent.is_dir():
        raise OutputPathError(f"{parent} is a file, not a folder; choose a path inside a folder")
    if not _writable(parent):
        raise OutputPathError(f"the folder {parent} is not writable; choose a folder you can write to")


def _writable(folder: Path) -> bool:
    """Whether a file can be created in ``folder``: permissions, and a real try (which also catches
    read-only file systems and pseudo file systems such as /proc, and holds for root too)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        fd, name = tempfile.mkstemp(prefix=".contextlens-write-check-", dir=folder)
    except OSError:
        return False
    os.close(fd)
    os.unlink(name)
    return True
