"""The small index ``serve`` offers when none is named: the Lee corpus's 50 news documents.

Why: the lesson's kind (c), a sentence embedding that a search index stores, led to "No index is
served" unless the server was started with ``--index``. This index needs no file of the learner's:
the 50 rated documents of gensim's Lee corpus (data/lee.py), encoded once per model by its sentence
embedding (the encoder ``index build`` uses by default) and kept in the cache folder, so a second
start reads it back.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from contextlens.analyses.search.encoders import make_encoder
from contextlens.analyses.search.index import Document, VectorIndex, read_manifest
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.resources import cache_dir

NAME = "lee"  # its served name
WHAT = "the Lee corpus's 50 news documents (gensim's test data)"
_BUILDING = threading.Lock()


def lee_folder(model: ContextualModel) -> Path:
    """Where the index of ``model``'s vectors lives in the cache (one per model, precision and runtime)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model.name)
    return cache_dir() / "indexes" / f"lee-{safe}-{model.precision}-{model.runtime}"


def lee_index(model: ContextualModel | str) -> Path:
    """The built-in index's folder for ``model``, built now (a few seconds) if the cache lacks it."""
    from contextlens.data.lee import load_lee

    loaded = as_contextual(model)
    folder = lee_folder(loaded)
    with _BUILDING:
        if _complete(folder):
            return folder
        docs = [Document(str(i), text) for i, text in enumerate(load_lee().documents)]
        encoder = make_encoder(loaded)
        VectorIndex.build(docs, encoder).save(folder, model_source=loaded.source, force=True)  # over a broken one
    return folder


def lee_index_ready(model: ContextualModel) -> bool:
    """Whether ``model``'s built-in index is in the cache (what `contextlens prepare` reports)."""
    return _complete(lee_folder(model))


def _complete(folder: Path) -> bool:
    """Whether ``folder`` holds a complete index (its manifest reads)."""
    if not folder.exists():
        return False
    try:
        read_manifest(folder)
    except Exception:  # noqa: BLE001 - absent or incomplete: built again
        return False
    return True
