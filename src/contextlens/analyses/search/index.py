"""Semantic search on a real FAISS index: build, save with a manifest, load, verify, search.

A saved index is a folder holding a pointer file and one version folder of three files::

    CURRENT             the name of the version folder in use (one line)
    v-<time>-<pid>/
      manifest.json     what the vectors are (encoder model, kind, layer, dim), how they are stored
                        (index type and parameters, dtype, count) and the sha256 of the two files below
      index.faiss       the FAISS index, as ``faiss.serialize_index`` writes it
      docs.jsonl        the documents, one ``{"id": ..., "text": ...}`` per line, in index order

A new build writes a fresh version folder, then switches ``CURRENT`` to it with one atomic
``os.replace``, then removes the old version: at every moment either the old or the new index is
found, and a build killed half-way leaves only an unreferenced folder, removed by the next
build. A folder holding anything else is refused unless ``force`` (the other files are then
left alone). A folder in the layout of contextlens before the pointer (the three files directly
in it) is still read, and is replaced by the new layout on the next build.

Loading checks the manifest and both checksums before anything is read; searching checks that
the query encoder has the provenance stored in the manifest. A wrong model or kind, a damaged
file or a missing manifest is a one-line error, never wrong results. Index types and their
parameters: :mod:`contextlens.analyses.search.index_config`.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from contextlens.analyses.search import index_files
from contextlens.analyses.search.documents import (  # noqa: F401 - named here too
    Document,
    dedupe_documents,
    load_documents,
    unique_ids,
)
from contextlens.analyses.search.encoders import (
    STATIC,
    StaticTextEncoder,
    TextEncoder,
    describe_encoder,
    device_refusal,
    encoder_dict,
    encoder_kind,
    make_encoder,
    provenance_from_dict,
    query_device,
    runtime_refusal,
    runtimes_agree,
    static_fingerprint,
)
from contextlens.analyses.search.index_config import (
    ALLOWED_DTYPES,
    INDEX_TYPES,
    IndexConfig,
    apply_search_params,
    build_faiss_index,
    deserialize,
    search_faiss,
    serialized_bytes,
)
from contextlens.analyses.search.index_files import (
    DOCS_FILE,
    INDEX_FILE,
    MANIFEST,
    current_folder,
    require_index_folder,
)
from contextlens.core.arguments import whole_number
from contextlens.core.choices import check_runtime
from contextlens.core.devices import devices_agree
from contextlens.core.vectors import Provenance
from contextlens.errors import ContextlensError, InputError

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel
    from contextlens.core.static_models import StaticModel

__all__ = ["INDEX_TYPES", "IndexConfig", "build_faiss_index", "search_faiss"]
FORMAT = "contextlens-index/1"


class IndexMismatchError(ContextlensError):
    """The query encoder is not the encoder the index was built with."""


DamagedIndexError = index_files.DamagedIndexError


# --- the index --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    rank: int
    score: float
    id: str
    text: str


@dataclass(frozen=True)
class SearchResult:
    """The ranked documents for one query."""

    query: str
    encoder: Provenance
    index_type: str
    hits: list[Hit]
    query_runtime: str | None = None  # the query's runtime, when not the index's (fp32 on both sides)

    def describe_encoder(self) -> str:
        query = f", query on {self.query_runtime}" if self.query_runtime else ""
        return describe_encoder(self.encoder) + query

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only; ``encoder`` in the manifest's shape (the index's), and
        ``query_runtime`` when the query ran on another runtime."""
        out: dict[str, Any] = {
            "query": self.query,
            "encoder": encoder_dict(self.encoder),
            "index": self.index_type,
            "hits": [asdict(h) for h in self.hits],
        }
        if self.query_runtime:
            out["query_runtime"] = self.query_runtime
        return out


class VectorIndex:
    """Documents, their vectors in a FAISS index, and the provenance of those vectors."""

    def __init__(self, provenance: Provenance, config: IndexConfig, index, documents: Sequence[Document]):
        if index.ntotal != len(documents):
            raise DamagedIndexError(f"the index holds {index.ntotal} vectors but there are {len(documents)} documents")
        self.provenance = provenance
        self.config = config
        self.index = index
        self.documents = list(documents)
        self.static: dict[str, Any] | None = None  # a static encoder's record (encoders.static_record)
        # index build --dedupe: documents read and folded (identical texts kept once), kept in the manifest
        self.dedupe: dict[str, int] | None = None

    @classmethod
    def build(
        cls,
        documents: Sequence[Document],
        encoder: TextEncoder | StaticTextEncoder,
        config: IndexConfig | None = None,
        batch_size: int = 32,
        show_progress_bar: bool = False,
        dedupe: dict[str, int] | None = None,
    ) -> VectorIndex:
        """Encode the documents and index their vectors (``dedupe``: what :func:`dedupe_documents`
        folded, recorded in the manifest)."""
        if not documents:
            raise InputError("no documents to index")
        config = (config or IndexConfig()).resolved(len(documents), encoder.provenance.dim)
        vectors = encoder.encode(
            [d.text for d in documents], batch_size=batch_size, show_progress_bar=show_progress_bar
        )
        built = cls(encoder.provenance, config, build_faiss_index(vectors, config), documents)
        built.static = getattr(encoder, "static_record", None)
        built.dedupe = dedupe
        return built

    def __len__(self) -> int:
        return len(self.documents)

    def check_encoder(self, provenance: Provenance) -> None:
        """Refuse a query encoder that is not the index's: its vectors live in another space (or,
        int8 on another runtime, another quantizer's copy of it)."""
        mine, theirs = encoder_dict(self.provenance), encoder_dict(provenance)
        for what in ("model", "kind", "layer", "dim", "precision"):
            if theirs[what] != mine[what]:
                raise IndexMismatchError(
                    f"this index was built with {describe_encoder(self.provenance)} vectors but the query encoder "
                    f"is {describe_encoder(provenance)} ({what} differs); query with the index's encoder or "
                    "rebuild the index"
                )
        if not runtimes_agree(mine["precision"], self.provenance.runtime, theirs["precision"], provenance.runtime):
            raise IndexMismatchError(runtime_refusal(self.provenance, provenance.runtime))

    def search_vectors(self, queries: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Raw ``(scores, positions)`` for query vectors; positions index :attr:`documents`."""
        k = whole_number(k, "k", minimum=1)
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if queries.shape[1] != self.provenance.dim:
            raise IndexMismatchError(
                f"query vectors have {queries.shape[1]} dimensions, the index {self.provenance.dim}"
            )
        return search_faiss(self.index, self.config, queries, k)

    def search(
        self, encoder: TextEncoder | StaticTextEncoder, queries: Sequence[str], k: int = 10
    ) -> list[SearchResult]:
        """Encode the queries with ``encoder`` (which must match the index) and rank documents."""
        self.check_encoder(encoder.provenance)
        if not queries or any(not q.strip() for q in queries):
            raise InputError("the query is empty; give some text to search for")
        scores, ids = self.search_vectors(encoder.encode(list(queries)), k)
        results = []
        for query, row_scores, row_ids in zip(queries, scores, ids, strict=True):
            hits = [
                Hit(rank, float(s), self.documents[i].id, self.documents[i].text)
                for rank, (s, i) in enumerate(((s, i) for s, i in zip(row_scores, row_ids, strict=True) if i >= 0), 1)
            ]
            other = encoder.provenance.runtime if encoder.provenance.runtime != self.provenance.runtime else None
            results.append(SearchResult(query, self.provenance, self.config.type, hits, other))
        return results

    # --- persistence ----------------------------------------------------------------------

    def serialized(self) -> bytes:
        return serialized_bytes(self.index)

    def save(self, folder: Path | str, model_source: str | None = None, force: bool = False) -> Path:
        """Write index, documents and manifest as a new version of ``folder`` (see the module docstring).

        Returns ``folder``; the files lie in :func:`current_folder` of it.
        """
        folder = index_files.check_index_folder(folder, force)
        index_bytes = self.serialized()
        docs_bytes = "".join(
            json.dumps({"id": d.id, "text": d.text}, ensure_ascii=False) + "\n" for d in self.documents
        ).encode("utf-8")
        manifest = json.dumps(self.manifest(index_bytes, docs_bytes, model_source), indent=2) + "\n"
        files = {INDEX_FILE: index_bytes, DOCS_FILE: docs_bytes, MANIFEST: manifest.encode("utf-8")}
        index_files.write_version(folder, files)
        return folder

    def manifest(self, index_bytes: bytes, docs_bytes: bytes, model_source: str | None = None) -> dict[str, Any]:
        from contextlens.version import __version__

        return {
            "format": FORMAT,
            "contextlens_version": __version__,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "encoder": encoder_dict(self.provenance),
            **({"static": self.static} if self.static else {}),
            **({"dedupe": self.dedupe} if self.dedupe else {}),
            "model_source": model_source,
            "dimension": self.provenance.dim,
            "dtype": self.config.code,
            "count": len(self.documents),
            "normalized": True,
            "metric": "hamming" if self.config.type == "binary" else "cosine (inner product of unit vectors)",
            "index": self.config.to_dict(),
            "files": {
                INDEX_FILE: {"sha256": hashlib.sha256(index_bytes).hexdigest(), "bytes": len(index_bytes)},
                DOCS_FILE: {"sha256": hashlib.sha256(docs_bytes).hexdigest(), "bytes": len(docs_bytes)},
            },
        }

    @classmethod
    def load(cls, folder: Path | str) -> VectorIndex:
        """Read and verify a saved index: manifest present, checksums and counts consistent."""
        manifest = read_manifest(folder)
        if manifest.get("engine") == "pgvector":
            raise InputError(
                f"{folder} is a pgvector index; open it with PgVectorIndex.load, or search it with "
                "contextlens.search_index or search_folder, which read the engine from the manifest"
            )
        folder = current_folder(folder)
        blobs = {}
        for name in (INDEX_FILE, DOCS_FILE):
            path = folder / name
            if not path.is_file():
                raise DamagedIndexError(f"{path} is missing; the index folder is incomplete, rebuild it")
            blob = path.read_bytes()
            expected = manifest["files"][name]
            if len(blob) != expected["bytes"] or hashlib.sha256(blob).hexdigest() != expected["sha256"]:
                raise DamagedIndexError(
                    f"{path} does not match its checksum in the manifest ({len(blob)} bytes, expected "
                    f"{expected['bytes']}): the file is damaged or was changed; rebuild the index"
                )
            blobs[name] = blob
        index_type = manifest["index"]["type"]
        stored = manifest.get("dtype")
        dtype = stored if stored in ALLOWED_DTYPES.get(index_type, ()) else ALLOWED_DTYPES.get(index_type, (None,))[0]
        config = IndexConfig(index_type, manifest["index"]["params"], dtype)
        try:
            index = deserialize(blobs[INDEX_FILE], config)
        except RuntimeError as exc:
            raise DamagedIndexError(f"{folder / INDEX_FILE} is not a readable FAISS index; rebuild it") from exc
        apply_search_params(index, config)
        documents = []
        for line in blobs[DOCS_FILE].decode("utf-8").splitlines():
            obj = json.loads(line)
            documents.append(Document(obj["id"], obj["text"]))
        provenance = manifest_provenance(manifest)
        if index.d != provenance.dim or len(documents) != manifest["count"]:
            raise DamagedIndexError(f"{folder}: the index or documents disagree with the manifest; rebuild the index")
        loaded = cls(provenance, config, index, documents)
        loaded.static = manifest.get("static")
        return loaded


def read_manifest(folder: Path | str) -> dict[str, Any]:
    """The manifest of an index folder, checked for the fields contextlens relies on."""
    folder = require_index_folder(folder)
    path = current_folder(folder) / MANIFEST
    if not path.is_file():
        raise DamagedIndexError(
            f"{folder} has no {MANIFEST}, so it is not a usable contextlens index; "
            "rebuild it with `contextlens index build`"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if manifest.get("format") != FORMAT:
            raise DamagedIndexError(f"{path} has format {manifest.get('format')!r}, expected {FORMAT!r}; rebuild it")
        for key in ("encoder", "index", "files", "count"):
            manifest[key]  # noqa: B018 - presence check
        manifest_provenance(manifest)
        # a pgvector index keeps its vectors in a database table (manifest["database"]), not a file
        for name in (DOCS_FILE,) if manifest.get("engine") == "pgvector" else (INDEX_FILE, DOCS_FILE):
            manifest["files"][name]["sha256"]  # noqa: B018
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError, ValueError) as exc:
        raise DamagedIndexError(f"{path} is not a valid contextlens manifest; rebuild the index") from exc
    return manifest


def manifest_provenance(manifest: dict[str, Any]) -> Provenance:
    """The provenance of an index's vectors, from its manifest's ``encoder``."""
    return provenance_from_dict(manifest["encoder"])


def index_encoder(
    folder: Path | str,
    model: str | None = None,
    kind: str | None = None,
    layer: int | None = None,
    precision: str | None = None,
    runtime: str | None = None,
    static: str | None = None,
    device: str | None = None,
) -> Provenance:
    """The provenance of the vectors in ``folder``, after checking that the query encoder asked for
    (each of ``model``, ``kind``, ``layer``, ``precision``, ``runtime``, ``static``, ``device``
    optional) agrees with it;
    read from the manifest alone, before any model is loaded. A query's precision must be the
    index's: an int8 query against fp32 documents (or the reverse) is refused, not approximated.
    Its runtime may differ at fp32 only (:func:`runtimes_agree`). An index of a static model
    (``static``) is refused once that name holds another model than the one it was built with."""
    manifest = read_manifest(folder)
    provenance = manifest_provenance(manifest)
    stored = encoder_dict(provenance)
    if static is not None:
        static = str(static)
        if stored["kind"] != STATIC:
            raise IndexMismatchError(
                f"{folder} holds {describe_encoder(provenance)} vectors but the query asks for the static model "
                f"{static!r}; drop `static` or rebuild the index with it"
            )
    asked = {"model": model if static is None else static, "kind": kind, "layer": layer, "precision": precision}
    for what, value in asked.items():
        if value is not None and value != stored[what]:
            name = "static" if what == "model" and static is not None else what
            label = "the static model" if name == "static" else what
            raise IndexMismatchError(
                f"{folder} holds {describe_encoder(provenance)} vectors but the query asks for {label} {value!r}; "
                f"drop `{name}` or rebuild the index with that encoder"
            )
    if stored["kind"] == STATIC:
        record = manifest.get("static") or {}
        if record.get("fingerprint") != static_fingerprint(provenance.model):
            raise IndexMismatchError(
                f"{folder} was built with the static model {provenance.model!r} as it was then "
                f"({record.get('made', 'unrecorded')}); that name now stands for another model (made again, "
                "or its file changed), whose vectors live in another space; rebuild the index"
            )
    if runtime is not None:
        check_runtime(runtime)
        if not runtimes_agree(provenance.precision, provenance.runtime, provenance.precision, runtime):
            raise IndexMismatchError(runtime_refusal(provenance, runtime))
    if device is not None and not devices_agree(provenance.precision, provenance.device, device):
        raise IndexMismatchError(device_refusal(provenance, device))
    return provenance


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
    """Load the index in ``folder``, encode ``query`` with the index's own encoder and rank documents.

    ``model`` (a name, or a loaded model, used as the query encoder's), ``kind``, ``layer``,
    ``precision`` and ``runtime`` (each optional) must agree with the index's encoder; they are
    checked against the manifest before any model is loaded. Without a loaded model, the index's
    model is loaded at the index's precision, on ``runtime`` or else the index's runtime. An index
    of a static model loads it by the name it recorded (``static``, a name or a loaded model, must
    be that one). A FAISS index: ``contextlens.search_index`` (analyses/search/folders.py) takes
    either engine, as the folder's manifest says. ``device``: where the query runs (default the
    CPU for an fp32 or int8 index, else the index's device; fp16/bf16 across devices is refused).
    """
    index, encoder = open_for_query(folder, model, kind, layer, precision, runtime, VectorIndex.load, static, device)
    (result,) = index.search(encoder, [query], k)
    return result


def open_for_query(
    folder: Path | str,
    model: ContextualModel | str | None,
    kind: str | None,
    layer: int | None,
    precision: str | None,
    runtime: str | None,
    load_index: Callable[[Path | str], Any],
    static: StaticModel | str | None = None,
    device: str | None = None,
) -> tuple[Any, TextEncoder | StaticTextEncoder]:
    """``(index, the index's own encoder for a query)``, shared by the FAISS and pgvector engines:
    the request is checked against the manifest before any model loads, then ``load_index(folder)``
    opens the index (a damaged one is refused before the model load), then the encoder is made."""
    from contextlens.core.contextual_models import (  # torch: once the arguments are checked
        ContextualModel,
        load_contextual,
    )

    loaded_model = model if isinstance(model, ContextualModel) else None
    if loaded_model is not None:
        model, precision = loaded_model.name, precision or loaded_model.precision
        runtime, device = runtime or loaded_model.runtime, device or loaded_model.backend.device
    from contextlens.core.static_models import StaticModel

    loaded_static = static if isinstance(static, StaticModel) else None
    static_name = loaded_static.name if loaded_static is not None else static
    stored = index_encoder(folder, model, kind, layer, precision, runtime, static_name)  # type: ignore[arg-type]
    index_device = query_device(stored, device)
    if not devices_agree(stored.precision, stored.device, index_device):
        raise IndexMismatchError(device_refusal(stored, index_device))
    index = load_index(folder)
    if encoder_kind(stored) == STATIC:
        return index, StaticTextEncoder(loaded_static or stored.model, stored.model)
    encoder_model = loaded_model or load_contextual(
        stored.model, stored.precision, runtime or stored.runtime, index_device
    )
    return index, make_encoder(encoder_model, encoder_kind(stored), stored.layer)
