"""Results the server keeps: what was computed once is answered again without recomputing.

A long analysis (the sense map of a large extraction takes minutes) is kept under a key that names
everything its answer depends on: the request and a fingerprint of the files it read. A changed
folder is a new key, so a kept answer is never stale; the oldest keys go first past ``size``.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any


class Kept:
    """A small thread-safe LRU of results; ``hits`` and ``misses`` count how each was answered."""

    def __init__(self, size: int = 16) -> None:
        self.size, self.hits, self.misses = size, 0, 0
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The result kept under ``key``, or ``make()``'s, kept (a raised error is not kept)."""
        with self._lock:
            if key in self._items:
                self.hits += 1
                self._items.move_to_end(key)
                return self._items[key]
        value = make()  # outside the lock: another request for another key need not wait
        with self._lock:
            self.misses += 1
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


def folder_fingerprint(folder: Path, skip: frozenset[str] = frozenset()) -> str:
    """The folder's files by name, size and modification time (the manifest's bytes too): any
    rewrite of the manifest or a shard changes it. Reads no shard. ``skip``: names of files that
    reading the folder writes (the record of shards already checked)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name not in skip:
            stat = path.stat()
            digest.update(f"{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    manifest = folder / "manifest.json"
    if manifest.is_file():
        digest.update(manifest.read_bytes())
    return digest.hexdigest()
