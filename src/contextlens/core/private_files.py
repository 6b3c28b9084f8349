"""Lock files only their owner can open: a lock another user could take would hang every command.

A lock file is created 0600 in a folder of mode 0700 (``os.open`` with the mode, then ``fchmod``, since
the umask can only take bits away and an older file may carry 0644); so another user who can pass
through the cache folder can neither ``flock`` the file nor replace it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO


def private_folder(path: Path) -> Path:
    """``path`` created if missing (parents too), mode 0700."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def open_private(path: Path, flags: int = os.O_RDWR) -> int:
    """A descriptor of ``path``, created if missing and made 0600 either way (an older file may be 0644)."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_lock(path: Path, how: int = fcntl.LOCK_EX) -> IO[str]:
    """``path`` (in a 0700 folder) opened 0600 and ``flock``-ed ``how``; the caller closes it to unlock."""
    private_folder(path.parent)
    f = os.fdopen(open_private(path, os.O_RDWR | os.O_APPEND), "a+")
    try:
        fcntl.flock(f, how)
    except BaseException:
        f.close()
        raise
    return f
