"""A small on-disk cache for expensive arrays (encoded benchmark sentences, embeddings).

Keyed by everything that determines the result (model name, weights checksum or path, data
version, request); stored as ``.npz`` under the contextlens cache folder, written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from contextlens.core.atomic_files import atomic_path
from contextlens.core.cache_folders import clean_leftovers
from contextlens.core.resources import cache_dir, note_rebuild


def cache_key(*parts: Any) -> str:
    """A stable hex key for JSON-serializable parts."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


def cache_path(namespace: str, key: str) -> Path:
    folder = cache_dir() / "arrays" / namespace
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{key}.npz"


def cached_arrays(
    namespace: str, key: str, compute: Callable[[], dict[str, np.ndarray]], *, enabled: bool = True
) -> dict[str, np.ndarray]:
    """Load the arrays stored under ``namespace/key``, or compute, store and return them.

    ``CONTEXTLENS_NO_CACHE=1`` (or ``enabled=False``) always recomputes.
    """
    if not enabled or os.environ.get("CONTEXTLENS_NO_CACHE") == "1":
        return compute()
    path = cache_path(namespace, key)
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as data:
                return {k: data[k] for k in data.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            note_rebuild(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            path.unlink(missing_ok=True)  # a damaged cache entry is recomputed, never trusted
    arrays = compute()
    clean_leftovers(path)  # temporaries of runs that were killed mid-write
    with atomic_path(path) as tmp, tmp.open("wb") as f:  # an interrupted write leaves no half-written entry
        np.savez(f, **arrays)
    return arrays
