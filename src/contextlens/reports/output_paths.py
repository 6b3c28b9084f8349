"""Check where a command will write BEFORE it does the work, so a bad path never loses a result.

Both checks resolve the final path (``--plot fig`` becomes ``fig.png``) and raise
:class:`~contextlens.errors.OutputPathError` with one line saying what to change.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from contextlens.errors import OutputPathError


def check_output_path(path: Path, suffixes: tuple[str, ...]) -> Path:
    """The file that will be written: ``path`` with the first suffix added if it has none.

    Refuses an unknown suffix (naming the allowed ones), a directory, and a parent folder
    that is missing, is not a folder, or is not writable.
    """
    path = Path(path)
    allowed = ", ".join(suffixes)
    if str(path) == "" or path.name == "":
        raise OutputPathError(f"empty output path; give a file name ending in {allowed}")
    if path.is_dir():
        raise OutputPathError(f"{path} is a folder; give a file name ending in {allowed}")
    if path.suffix == "":
        path = path.with_name(path.name + suffixes[0])
    elif path.suffix.lower() not in suffixes:
        raise OutputPathError(f"cannot write {path}: unknown file type {path.suffix!r}; use {allowed}")
    if path.is_dir():
        raise OutputPathError(f"{path} is a folder; give a file name ending in {allowed}")
    parent = path.parent
    if not parent.exists():
        raise OutputPathError(f"cannot write {path}: folder {parent} does not exist; create it first")
    if not parent.is_dir():
        raise OutputPathError(f"cannot write {path}: {parent} is a file, not a folder")
    if not _can_create_in(parent) or (path.exists() and not os.access(path, os.W_OK)):
        raise OutputPathError(f"cannot write {path}: no write permission in {parent}; choose another folder")
    return path


def check_output_folder(path: Path) -> Path:
    """A folder that exists and is writable, or can be created (its nearest existing ancestor is writable)."""
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise OutputPathError(f"{path} is a file; give a folder for the output")
        if not _can_create_in(path):
            raise OutputPathError(f"cannot write into {path}: no write permission; choose another folder")
        return path
    ancestor = path.absolute().parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputPathError(f"cannot create {path}: {ancestor} is a file, not a folder")
    if not _can_create_in(ancestor):
        raise OutputPathError(f"cannot create {path}: no write permission in {ancestor}; choose another folder")
    return path


def _can_create_in(folder: Path) -> bool:
    """Try it: permission bits lie for root, read-only mounts and pseudo file systems like /sys."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".contextlens-check-"):
            return True
    except OSError:
        return False
