"""A vector index in PostgreSQL with pgvector: the same documents, manifest and answers as FAISS.

``index build --engine pgvector`` writes the index folder as for FAISS (``CURRENT`` and a version
folder with ``manifest.json`` and ``docs.jsonl``), but the vectors live in a table of the database:
one table per build, ``cl_<folder digest>_<time>_<pid>`` with ``(pos integer, embedding)``, filled
by one binary ``COPY`` and indexed, all in one transaction. The manifest names the table and
records the vectors' provenance as FAISS's does, so a query from another model is refused. Only
after the transaction commits is ``CURRENT`` switched to the new version; then the tables this
folder no longer names are dropped. A build killed at any point leaves the old index (or the new
one) in use and at most an unreferenced table, which the next build drops; never a half-filled one.

Storage types: ``float32`` -> ``vector(d)``, ``float16`` -> ``halfvec(d)``, ``binary`` -> a
``vector(d)`` column indexed on ``binary_quantize(embedding)::bit(d)`` by Hamming distance, with
the candidates (``rerank`` per result) re-ranked by the exact cosine, as pgvector's README does.
Index types: ``flat`` (no index: an exact scan), ``hnsw`` (m, ef_construction, ef_search) and
``ivfflat`` (lists, probes), with pgvector's defaults. Scores are cosines, ``1 - (a <=> b)``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from contextlens.analyses.search import index_files, pg_server
from contextlens.analyses.search.encoders import StaticTextEncoder, TextEncoder, encoder_dict
from contextlens.analyses.search.index import (
    FORMAT,
    DamagedIndexError,
    Document,
    Hit,
    SearchResult,
    VectorIndex,
    manifest_provenance,
    open_for_query,
    read_manifest,
)
from contextlens.analyses.search.index_config import normalize
from contextlens.analyses.search.index_files import DOCS_FILE, MANIFEST, current_folder
from contextlens.analyses.search.pg_dsn import checked_dsn, dsn_parameters, without_secrets
from contextlens.analyses.search.pg_table import (  # noqa: F401 - named here too
    COLUMN_TYPE,
    MAX_INDEXED_DIM,
    OPCLASS,
    PG_DEFAULT_PARAMS,
    PG_DTYPES,
    PG_INDEX_TYPES,
    PG_PARAM_RANGES,
    RERANK,
    BuildReport,
    PgIndexConfig,
    copy_payload,
    create_table,
    index_expression,
    recall_at_k,
    relation_sizes,
    search_table,
    vector_literal,
)
from contextlens.core.arguments import given, whole_number
from contextlens.core.cache_folders import running_elsewhere
from contextlens.core.private_files import open_lock, private_folder
from contextlens.core.resources import cache_dir
from contextlens.core.vectors import Provenance
from contextlens.errors import InputError, ParameterError

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel
    from contextlens.core.static_models import StaticModel

ENGINES: tuple[str, ...] = ("faiss", "pgvector")
TABLE_RE = re.compile(r"^cl_([0-9a-f]{12})_(\d{8}t\d{12})_(\d+)$")


def folder_digest(folder: Path) -> str:
    return hashlib.sha256(str(Path(folder).resolve()).encode("utf-8")).hexdigest()[:12]


def new_table_name(folder: Path) -> str:
    import os

    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dt%H%M%S%f")
    return f"cl_{folder_digest(folder)}_{stamp}_{os.getpid()}"


def drop_unreferenced(conn, folder: Path, keep: str | None) -> list[str]:
    """Drop this folder's tables other than ``keep``, except those of a build still running."""
    prefix = f"cl_{folder_digest(folder)}_"
    rows = conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND left(tablename, %s) = %s",
        (len(prefix), prefix),
    ).fetchall()
    dropped = []
    for (name,) in rows:
        match = TABLE_RE.match(name)
        if name == keep or match is None or running_elsewhere(int(match.group(3))):
            continue
        conn.execute(f"DROP TABLE IF EXISTS {name}")
        dropped.append(name)
    return dropped


def _folder_lock(folder: Path):
    """The index folder's build lock (0600 in a 0700 folder: no other user can hold it)."""
    private_folder(cache_dir() / "pgvector")
    return open_lock(cache_dir() / "pgvector" / "locks" / f"{folder_digest(folder)}.lock")


# --- the index --------------------------------------------------------------------------------


class PgVectorIndex:
    """Documents, their vectors in a pgvector table, and the provenance of those vectors."""

    def __init__(self, provenance: Provenance, config: PgIndexConfig, table: str, documents: Sequence[Document],
                 dsn: str | None = None, report: BuildReport | None = None):  # fmt: skip
        self.provenance, self.config, self.table = provenance, config, table
        self.documents, self.dsn, self.report = list(documents), dsn, report
        self.static: dict[str, Any] | None = None  # a static encoder's record (encoders.static_record)
        # index build --dedupe: documents read and folded (identical texts kept once), kept in the manifest
        self.dedupe: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.documents)

    check_encoder = VectorIndex.check_encoder

    @classmethod
    def build(
        cls,
        documents: Sequence[Document],
        encoder: TextEncoder | StaticTextEncoder,
        folder: Path | str,
        config: PgIndexConfig | None = None,
        dsn: str | None = None,
        batch_size: int = 32,
        show_progress_bar: bool = False,
        model_source: str | None = None,
        force: bool = False,
        dedupe: dict[str, int] | None = None,
    ) -> PgVectorIndex:
        """Encode the documents, load their vectors into a new table and switch ``folder`` to it
        (``dedupe``: what :func:`.index.dedupe_documents` folded, recorded in the manifest)."""
        if not documents:
            raise InputError("no documents to index")
        dsn = checked_dsn(dsn)  # parsed and tried before the encoding
        if config is not None and not isinstance(config, PgIndexConfig):
            raise ParameterError("config", f"must be a PgIndexConfig (e.g. PgIndexConfig('hnsw')), got {given(config)}")
        folder = index_files.check_index_folder(folder, force)
        config = (config or PgIndexConfig()).resolved(encoder.provenance.dim)
        vectors = encoder.encode([d.text for d in documents], batch_size=batch_size,
                                 show_progress_bar=show_progress_bar)  # fmt: skip
        built = cls(encoder.provenance, config, "", documents, dsn)
        built.static = getattr(encoder, "static_record", None)
        built.dedupe = dedupe
        built._store(folder, normalize(vectors), model_source)
        return built

    def _store(self, folder: Path, vectors: np.ndarray, model_source: str | None) -> None:
        with pg_server.database(self.dsn) as conninfo, pg_server.connect(conninfo) as conn:
            server = conn.execute("SELECT current_setting('server_version'), extversion FROM pg_extension "
                                  "WHERE extname = 'vector'").fetchone()  # fmt: skip
            lock = _folder_lock(folder)
            try:
                drop_unreferenced(conn, folder, _current_table(folder))
                table = new_table_name(folder)
                self.report = create_table(conn, table, vectors, self.config)
                self.table = table
                docs_bytes = "".join(
                    json.dumps({"id": d.id, "text": d.text}, ensure_ascii=False) + "\n" for d in self.documents
                ).encode("utf-8")
                manifest = self.manifest(docs_bytes, model_source, server)
                files = {DOCS_FILE: docs_bytes, MANIFEST: (json.dumps(manifest, indent=2) + "\n").encode("utf-8")}
                previous = _current_table(folder)
                index_files.write_version(folder, files)
                if previous and previous != table and TABLE_RE.match(previous):  # also after the folder moved
                    conn.execute(f"DROP TABLE IF EXISTS {previous}")
                drop_unreferenced(conn, folder, table)
            finally:
                lock.close()

    def manifest(self, docs_bytes: bytes, model_source: str | None, server: tuple[str, str]) -> dict[str, Any]:
        from contextlens.version import __version__

        r = self.report
        return {
            "format": FORMAT,
            "contextlens_version": __version__,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "engine": "pgvector",
            "encoder": encoder_dict(self.provenance),
            **({"static": self.static} if self.static else {}),
            **({"dedupe": self.dedupe} if self.dedupe else {}),
            "model_source": model_source,
            "dimension": self.provenance.dim,
            "dtype": self.config.dtype,
            "count": len(self.documents),
            "normalized": True,
            "metric": "cosine (pgvector <=>)"
            + (", candidates by Hamming distance" if self.config.dtype == "binary" else ""),  # fmt: skip
            "index": self.config.to_dict(),
            "database": {
                "server": "dsn" if self.dsn else "embedded",
                "dsn": without_secrets(self.dsn) if self.dsn else None,  # libpq reads the password at use
                "table": self.table,
                "column": self.config.column(self.provenance.dim),
                "postgresql": server[0],
                "pgvector": server[1],
                "table_bytes": r.table_bytes if r else None,
                "index_bytes": r.index_bytes if r else None,
                "total_bytes": r.total_bytes if r else None,
                "build_notices": r.notices if r else [],
            },
            "files": {DOCS_FILE: {"sha256": hashlib.sha256(docs_bytes).hexdigest(), "bytes": len(docs_bytes)}},
        }

    @classmethod
    def load(cls, folder: Path | str, dsn: str | None = None) -> PgVectorIndex:
        """The index in ``folder``: manifest and documents checked; the table is checked on search."""
        manifest = read_manifest(folder)
        if manifest.get("engine") != "pgvector":
            raise InputError(f"{folder} is a FAISS index, not a pgvector one; search it without `engine` pgvector")
        path = current_folder(folder) / DOCS_FILE
        blob = path.read_bytes() if path.is_file() else b""
        expected = manifest["files"][DOCS_FILE]
        if len(blob) != expected["bytes"] or hashlib.sha256(blob).hexdigest() != expected["sha256"]:
            raise DamagedIndexError(f"{path} is missing or does not match its checksum in the manifest; rebuild it")
        documents = [Document(o["id"], o["text"]) for o in map(json.loads, blob.decode("utf-8").splitlines())]
        db = manifest["database"]
        config = PgIndexConfig(manifest["index"]["type"], manifest["index"]["params"], manifest["dtype"])
        given = dsn or (db.get("dsn") if db.get("server") == "dsn" else None)
        if given is not None and not dsn:
            try:
                dsn_parameters(given)
            except ParameterError:
                raise DamagedIndexError(
                    f"the DSN recorded in {Path(folder) / MANIFEST} is not a libpq connection string; give --dsn"
                ) from None
        return cls(manifest_provenance(manifest), config, db["table"], documents, given)

    def verify(self) -> None:
        """The index's table checked in its database now (present, one row per document), as a
        FAISS index's files are checked when it loads; the embedded server starts if it must."""
        with pg_server.database(self.dsn) as conninfo, pg_server.connect(conninfo) as conn:
            self._check_table(conn)

    def search_vectors(self, queries: np.ndarray, k: int = 10, exact: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Raw ``(scores, positions)``; ``exact`` scans the whole table (the index unused)."""
        k = whole_number(k, "k", minimum=1)
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        with pg_server.database(self.dsn) as conninfo, pg_server.connect(conninfo) as conn:
            self._check_table(conn)
            return search_table(conn, self.table, self.config, queries, min(k, len(self)), exact)

    def _check_table(self, conn) -> None:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = %s", (self.table,)).fetchone()
        if not row[0]:
            raise DamagedIndexError(f"the index's table {self.table} is not in the database; rebuild the index")
        rows = conn.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0]
        if rows != len(self.documents):
            raise DamagedIndexError(f"table {self.table} holds {rows} rows, the index {len(self)}; rebuild the index")

    def search(
        self, encoder: TextEncoder | StaticTextEncoder, queries: Sequence[str], k: int = 10
    ) -> list[PgSearchResult]:
        """Encode the queries (the encoder must match the index), rank documents, and measure the
        recall@k of that ranking against an exact scan of the same table."""
        self.check_encoder(encoder.provenance)
        if not queries or any(not q.strip() for q in queries):
            raise InputError("the query is empty; give some text to search for")
        vectors = encoder.encode(list(queries))
        scores, ids = self.search_vectors(vectors, k)
        _, exact_ids = self.search_vectors(vectors, k, exact=True) if self.config.type != "flat" else (None, ids)
        results = []
        for query, row_scores, row_ids, row_exact in zip(queries, scores, ids, exact_ids, strict=True):
            found = [(s, i) for s, i in zip(row_scores, row_ids, strict=True) if i >= 0]
            hits = [Hit(rank, float(s), self.documents[i].id, self.documents[i].text) for rank, (s, i) in
                    enumerate(found, 1)]  # fmt: skip
            other = encoder.provenance.runtime if encoder.provenance.runtime != self.provenance.runtime else None
            recall = recall_at_k(row_ids[None], row_exact[None])
            results.append(PgSearchResult(query, self.provenance, self.config.type, hits, other, recall))
        return results


@dataclass(frozen=True)
class PgSearchResult(SearchResult):
    """A FAISS :class:`SearchResult` (the same fields and JSON), plus the engine and the recall@k of
    the ranking against an exact scan of the same table (1.0 for ``flat``, which is that scan)."""

    recall: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["engine"] = "pgvector"
        out["recall_vs_exact_scan"] = self.recall
        return out


def _current_table(folder: Path) -> str | None:
    try:
        manifest = read_manifest(folder)
    except Exception:  # noqa: BLE001 - no index yet (or a FAISS one): no table to keep
        return None
    return manifest.get("database", {}).get("table")


def engine_of(folder: Path | str) -> str:
    """``faiss`` or ``pgvector``: which engine holds the index in ``folder`` (from its manifest)."""
    return read_manifest(folder).get("engine", "faiss")


def check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise ParameterError("engine", f"must be one of {', '.join(ENGINES)}, got {engine!r}")
    return engine


def search_pg_index(
    folder: Path | str,
    query: str,
    k: int = 10,
    model: ContextualModel | str | None = None,
    kind: str | None = None,
    layer: int | None = None,
    precision: str | None = None,
    runtime: str | None = None,
    dsn: str | None = None,
    static: StaticModel | str | None = None,
    device: str | None = None,
) -> PgSearchResult:
    """:func:`~contextlens.analyses.search.index.search_index` for an index in pgvector; ``device``
    as there (the query's device: default the CPU for an fp32 or int8 index, else the index's;
    fp16/bf16 across devices refused)."""
    checked_dsn(dsn)  # before the model encodes the query
    index, encoder = open_for_query(
        folder, model, kind, layer, precision, runtime, lambda f: PgVectorIndex.load(f, dsn), static, device
    )
    (result,) = index.search(encoder, [query], k)
    return result
