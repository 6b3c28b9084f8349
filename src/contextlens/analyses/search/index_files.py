"""An index folder on disk: a pointer file and version folders, replaced so an index is always found.

``index build`` must never leave a moment with no index at ``--out``, must clean what a killed
build left behind, and must never delete files that are not its own. So a build writes a fresh
version folder ``v-<utc time>-<pid>``, switches the one-line pointer ``CURRENT`` to it with an
atomic :func:`os.replace`, and only then removes the version it replaced. Whatever step a kill
interrupts, ``CURRENT`` names a complete version (the old one or the new one); the next build
removes unreferenced versions, stray pointer temporaries and the hidden ``.<name>.tmp-PID`` /
``.<name>.old-PID`` siblings of the layout before this one, skipping those of a live process.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from contextlens.core import atomic_files
from contextlens.core.cache_folders import running_elsewhere
from contextlens.errors import DataFileError, InputError

CURRENT = "CURRENT"
MANIFEST = "manifest.json"
INDEX_FILE = "index.faiss"
DOCS_FILE = "docs.jsonl"
LEGACY_FILES = (MANIFEST, INDEX_FILE, DOCS_FILE)  # an index written before the pointer: files at the top
VERSION_RE = re.compile(r"^v-\d{8}T\d{12}-(\d+)$")
POINTER_TMP_RE = re.compile(rf"^(?:{CURRENT}|\.{CURRENT}\.[0-9a-f]+)\.tmp-(\d+)$")  # older builds: CURRENT.tmp-PID


class DamagedIndexError(DataFileError):
    """An index folder has no manifest, or a file whose checksum or shape disagrees with it."""


def check_index_folder(folder: Path | str, force: bool = False) -> Path:
    """Refuse an ``--out`` that is a file, or a folder holding files that are not an index's.

    With ``force`` such a folder is accepted; its other files are left alone. Called before any
    model is loaded, so a wrong ``--out`` costs nothing.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"`out` {folder} is a file, not a folder; give a folder for the index")
    if folder.is_dir() and not force:
        foreign = sorted(p.name for p in folder.iterdir() if not _is_ours(p))
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise InputError(
                f"`out` {folder} holds files that are not a contextlens index's ({shown}); choose a new or "
                "empty folder, or pass `force` to build beside them (they are left alone)"
            )
    return folder


def _is_ours(path: Path) -> bool:
    name = path.name
    if name == CURRENT or name in LEGACY_FILES or POINTER_TMP_RE.match(name):
        return True
    return bool(VERSION_RE.match(name)) and path.is_dir()


def require_index_folder(folder: Path | str) -> Path:
    """``folder`` if it is a folder, else the one line a user needs (cheap: no index library loaded)."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "is a file, not an index folder" if folder.exists() else "does not exist"
        raise DataFileError(f"index folder {folder} {what}; build one with `contextlens index build`")
    return folder


def current_folder(folder: Path | str) -> Path:
    """The folder holding the files of the index in use: the version ``CURRENT`` names, or
    ``folder`` itself for an index in the layout before the pointer."""
    folder = Path(folder)
    pointer = folder / CURRENT
    if not pointer.is_file():
        return folder
    name = pointer.read_text(encoding="utf-8").strip()
    if not VERSION_RE.match(name) or not (folder / name).is_dir():
        raise DamagedIndexError(
            f"{pointer} names no version folder of this index ({name!r}); rebuild it with `contextlens index build`"
        )
    return folder / name


def write_version(folder: Path | str, files: Mapping[str, bytes]) -> Path:
    """Write ``files`` as a new version of the index in ``folder`` and make it the current one."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    clean_leftovers(folder)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    version = folder / f"v-{stamp}-{os.getpid()}"
    version.mkdir()
    for name, blob in files.items():
        _write_durably(version / name, blob)
    switch_current(folder, version.name)
    remove_replaced(folder)
    return version


def switch_current(folder: Path, name: str) -> None:
    """Point ``CURRENT`` at version ``name``: write a temporary pointer, then one atomic rename."""
    atomic_files.write_text(folder / CURRENT, name + "\n", durable=True)


def remove_replaced(folder: Path) -> None:
    """Remove every version but the current one, and the files of an index in the old layout."""
    clean_leftovers(folder)


def clean_leftovers(folder: Path) -> None:
    """Remove what earlier builds left: versions ``CURRENT`` does not name, pointer temporaries,
    top-level files superseded by ``CURRENT``, and the hidden siblings of the layout before it.
    Leftovers of a process that is still running (another build) are kept."""
    pointer = folder / CURRENT
    current = pointer.read_text(encoding="utf-8").strip() if pointer.is_file() else None
    for path in folder.iterdir():
        version, tmp = VERSION_RE.match(path.name), POINTER_TMP_RE.match(path.name)
        superseded = current is not None and path.name in LEGACY_FILES and path.is_file()
        if version and path.is_dir() and path.name != current and not running_elsewhere(int(version.group(1))):
            shutil.rmtree(path, ignore_errors=True)
        elif (tmp and not running_elsewhere(int(tmp.group(1)))) or superseded:
            path.unlink(missing_ok=True)
    old_layout = re.compile(rf"^\.{re.escape(folder.name)}\.(?:tmp|old)-(\d+)$")
    for path in folder.parent.iterdir():
        match = old_layout.match(path.name)
        if match and path.is_dir() and not running_elsewhere(int(match.group(1))):
            shutil.rmtree(path, ignore_errors=True)


def _write_durably(path: Path, blob: bytes) -> None:
    with open(path, "wb") as f:
        f.write(blob)
        f.flush()
        os.fsync(f.fileno())
