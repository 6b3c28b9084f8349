"""An index folder opened or searched with the engine its manifest names: FAISS or pgvector.

The two engines' modules (``index``, ``pg_index``) each know their own folders; what takes either
(``contextlens.search_index``, ``serve --index``, the web's ``/api/search``) reads the manifest here,
above both, so neither imports the other to dispatch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from contextlens.analyses.search.index import SearchResult, VectorIndex
from contextlens.analyses.search.index import search_index as search_faiss_index
from contextlens.analyses.search.pg_index import PgVectorIndex, engine_of, search_pg_index
from contextlens.core.arguments import one_text, path_argument

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel
    from contextlens.core.static_models import StaticModel


def search_index(
    folder: Path | str,
    query: str,
    k: int = 10,
    model: ContextualModel | str | None = None,
    kind: str | None = None,
    layer: int | None = None,
    precision: str | None = None,
    runtime: str | None = None,
    static: StaticModel | str | None = None,
    device: str | None = None,
) -> SearchResult:
    """Rank the documents of the index in ``folder`` for ``query``, with the index's own encoder, in
    the engine its manifest names (a pgvector index by the DSN it records, or the embedded server).
    ``device``: where the query runs (default the CPU for an fp32 or int8 index, else the index's)."""
    query = one_text(query, "query")
    if engine_of(path_argument(folder, "folder")) == "pgvector":
        return search_pg_index(folder, query, k, model, kind, layer, precision, runtime, static=static, device=device)
    return search_faiss_index(folder, query, k, model, kind, layer, precision, runtime, static, device)


def load_folder(folder: Path | str) -> VectorIndex | PgVectorIndex:
    """The index in ``folder`` with its own engine, checked as a search would check it (a pgvector
    index's table too): what ``serve --index`` loads at start, so a damaged index fails there."""
    if engine_of(folder) == "pgvector":
        index = PgVectorIndex.load(folder)
        index.verify()
        return index
    return VectorIndex.load(folder)


def search_folder(
    folder: Path | str, query: str, k: int = 10, model: ContextualModel | str | None = None
) -> SearchResult:
    """Search the index in ``folder`` with its own engine (FAISS or pgvector, from its manifest), as
    the web's ``/api/search`` does: the same answer as ``index search FOLDER QUERY --json``, whose
    query runs on the lean path too (:func:`lean_query_model`) unless told otherwise."""
    return search_index(folder, query, k, model=lean_query_model(folder) if model is None else model)


def lean_query_model(folder: Path | str) -> ContextualModel | None:
    """The index's own encoder for a query, on the lean path where its numbers agree: ONNX Runtime
    at fp32 (an fp32 index of either runtime; checked at export), its own runtime at int8. None for
    an index of a static model (it is loaded by the name it recorded)."""
    from contextlens.analyses.search.index import index_encoder
    from contextlens.core.contextual_models import load_contextual

    stored = index_encoder(folder)
    if stored.kind == "static":
        return None
    return load_contextual(stored.model, stored.precision, lean_runtime(stored.precision, stored.runtime))


def lean_runtime(precision: str, runtime: str) -> str:
    """The query's runtime for an index built at ``precision`` on ``runtime``: ``auto`` (ONNX Runtime
    for an encoder) at fp32, whose vectors agree across runtimes; the index's own at int8."""
    return "auto" if precision == "fp32" else runtime
