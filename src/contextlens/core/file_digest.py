"""A file's sha256, read in 8 MB blocks: what a shipped model's weights are verified against and
what names a tuned model's folder (a plain piece, so that the registry of tuned models, below the
resources layer, can compare a file with the digest its folder is named by)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(8 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
