"""Write a file so that a reader sees the old one or the whole new one, never a part.

Every file contextlens writes (figures, pages, manifests, cache entries, index pointers) goes
through here: it is written under a hidden temporary name in the same folder (same file system)
and moved over the target with :func:`os.replace`, which is atomic. A kill during the write
leaves the old file untouched and at most the hidden temporary, named ``.<name>.<random>.tmp-<pid>``
(so :func:`contextlens.core.cache_folders.clean_leftovers` can tell whose it is) and removed on
failure. Writers that want a path of their own (matplotlib, pyarrow, ONNX) use
:func:`atomic_path`; the temporary does not end in the target's suffix, so a writer that picks
its format from the name (matplotlib's ``savefig``) is given the format explicitly.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: Path | str, durable: bool = False, mode: int | None = None) -> Iterator[Path]:
    """A temporary path beside ``path``; when the block ends without an exception it replaces
    ``path`` in one step, otherwise it is removed and ``path`` is left as it was. ``durable``
    also flushes the file to disk before the rename (for files that must survive a power cut);
    ``mode`` gives the new file that mode (0o600: private), whatever the old one had."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _new_temporary(path, mode)
    try:
        yield tmp
        if durable:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _new_temporary(path: Path, mode: int | None = None) -> Path:
    """An empty, new file beside ``path`` with ``mode``, or else the permissions a plain write
    would give it (the umask's, or the old file's), not mkstemp's 0600."""
    exact = mode is not None
    if mode is None:
        mode = stat.S_IMODE(path.stat().st_mode) if path.is_file() else 0o666
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp-{os.getpid()}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            continue
        os.close(fd)
        if exact or path.is_file():
            os.chmod(tmp, mode)  # os.open applies the umask; an existing file keeps its own mode
        return tmp


def write_bytes(path: Path | str, data: bytes, durable: bool = False, mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` atomically (``mode``: see :func:`atomic_path`); returns ``path``."""
    with atomic_path(path, durable, mode) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(
    path: Path | str, text: str, encoding: str = "utf-8", durable: bool = False, mode: int | None = None
) -> Path:
    """Write ``text`` to ``path`` atomically (``mode``: see :func:`atomic_path`); returns ``path``."""
    return write_bytes(path, text.encode(encoding), durable, mode)
