"""Semantic search on a real FAISS index: build, save with a manifest, load, verify, search.

A saved index is a folder of three files::

    manifest.json   what the vectors are (encoder model, kind, layer, dim), how they are stored
                    (index type and parameters, dtype, count) and the sha256 of the two files below
    index.faiss     the FAISS index, as ``faiss.serialize_index`` writes it
    docs.jsonl      the documents, one ``{"id": ..., "text": ...}`` per line, in index order

It is written into a temporary sibling folder and renamed into place, so a crash never leaves a
half-written index behind. Loading checks the manifest and both checksums before anything is
read; searching checks that the query encoder has the identity stored in the manifest. A wrong
model or kind, a damaged file or a missing manifest is a one-line error, never wrong results.

Vectors are L2-normalized before they enter the index, so inner product is cosine similarity
(``flat``, ``hnsw``, ``ivfpq``, ``sq8``); ``binary`` keeps one sign bit per dimension and scores
by Hamming distance, reported as ``1 - 2 * hamming / dim`` (the cosine of the two sign vectors).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from contextlens.analyses.search.encoders import EncoderIdentity, TextEncoder
from contextlens.errors import ContextlensError, DataFileError, InputError

INDEX_TYPES: tuple[str, ...] = ("flat", "hnsw", "ivfpq", "sq8", "binary")
MANIFEST = "manifest.json"
INDEX_FILE = "index.faiss"
DOCS_FILE = "docs.jsonl"
FORMAT = "contextlens-index/1"

# Parameters each index type takes, with their defaults (None = chosen from the data).
DEFAULT_PARAMS: dict[str, dict[str, int | None]] = {
    "flat": {},
    "hnsw": {"m": 32, "ef_construction": 80, "ef_search": 64},
    "ivfpq": {"nlist": None, "pq_m": None, "nbits": 8, "nprobe": 16},
    "sq8": {},
    "binary": {},
}


class IndexMismatchError(ContextlensError):
    """The query encoder is not the encoder the index was built with."""


class DamagedIndexError(DataFileError):
    """An index folder has no manifest, or a file whose checksum or shape disagrees with it."""


# --- documents ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    id: str
    text: str


def load_documents(path: Path | str) -> list[Document]:
    """Documents from a text file (one per line), a folder of ``.txt`` files, or JSONL.

    Ids: the line number (text file), the file name without ``.txt`` (folder), or the ``id``
    field (JSONL; the line number when absent). Blank lines are skipped; ids must be unique.
    """
    path = Path(path)
    if not path.exists():
        raise DataFileError(f"documents {path} do not exist; give a text file, a folder of .txt files or a .jsonl file")
    if path.is_dir():
        files = sorted(path.rglob("*.txt"))
        if not files:
            raise DataFileError(f"folder {path} has no .txt files; put one document per .txt file in it")
        docs = [Document(str(f.relative_to(path).with_suffix("")), _read_text(f).strip()) for f in files]
        empty = [d.id for d in docs if not d.text]
        if empty:
            raise DataFileError(f"{path}/{empty[0]}.txt is empty; remove it or give it some text")
    elif path.suffix.lower() in {".jsonl", ".ndjson"}:
        docs = _jsonl_documents(path)
    else:
        docs = [
            Document(str(n), line.strip()) for n, line in enumerate(_read_text(path).splitlines(), 1) if line.strip()
        ]
    if not docs:
        raise DataFileError(f"{path} holds no documents; give one document per line")
    seen: set[str] = set()
    for d in docs:
        if d.id in seen:
            raise DataFileError(f"{path}: document id {d.id!r} appears twice; ids must be unique")
        seen.add(d.id)
    return docs


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{path} is not UTF-8 text (byte {exc.start}); convert it to UTF-8") from exc


def _jsonl_documents(path: Path) -> list[Document]:
    docs = []
    for n, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFileError(f"{path}:{n}: not valid JSON ({exc.msg}); write one JSON object per line") from exc
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or not obj["text"].strip():
            raise DataFileError(
                f'{path}:{n}: expected an object with a non-empty "text" string, like {{"id": 1, "text": "..."}}'
            )
        docs.append(Document(str(obj.get("id", n)), obj["text"].strip()))
    return docs


# --- index types ----------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexSpec:
    """An index type and its parameters (see :data:`DEFAULT_PARAMS`)."""

    type: str = "flat"
    params: dict[str, int | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.type not in INDEX_TYPES:
            raise InputError(f"unknown index type {self.type!r}; use one of {', '.join(INDEX_TYPES)}")
        unknown = set(self.params) - set(DEFAULT_PARAMS[self.type])
        if unknown:
            allowed = ", ".join(DEFAULT_PARAMS[self.type]) or "none"
            raise InputError(f"index {self.type!r} takes no {sorted(unknown)} parameter; it takes: {allowed}")

    def resolved(self, count: int, dim: int) -> IndexSpec:
        """Fill in defaults for ``count`` vectors of ``dim`` dimensions, and check they can work."""
        params = {**DEFAULT_PARAMS[self.type], **{k: v for k, v in self.params.items() if v is not None}}
        if self.type == "binary" and dim % 8:
            raise InputError(f"binary codes need a dimension divisible by 8, got {dim}")
        if self.type == "hnsw":
            for name in ("m", "ef_construction", "ef_search"):
                if params[name] < 1:
                    raise InputError(f"--{name.replace('_', '-')} must be at least 1, got {params[name]}")
        if self.type == "ivfpq":
            if params["nlist"] is None:
                params["nlist"] = max(1, min(int(4 * math.sqrt(count)), count // 39 or 1))
            if params["pq_m"] is None:
                params["pq_m"] = next(m for m in (dim // 8, dim // 4, dim // 2, dim) if m and dim % m == 0)
            nlist, pq_m, nbits = params["nlist"], params["pq_m"], params["nbits"]
            if not 1 <= nlist <= count:
                raise InputError(f"--nlist must be between 1 and the number of vectors ({count}), got {nlist}")
            if pq_m < 1 or dim % pq_m:
                raise InputError(f"--pq-m must divide the dimension {dim}, got {pq_m}")
            if not 1 <= nbits <= 16:
                raise InputError(f"--nbits must be between 1 and 16, got {nbits}")
            if count < 2**nbits:
                raise InputError(
                    f"ivfpq with --nbits {nbits} trains {2**nbits} centroids per sub-vector and needs at least "
                    f"{2**nbits} vectors, but there are {count}; lower --nbits or use --index flat"
                )
            params["nprobe"] = max(1, min(params["nprobe"], nlist))
        return IndexSpec(self.type, params)

    @property
    def dtype(self) -> str:
        """How one vector is stored."""
        if self.type == "ivfpq":
            return f"pq{self.params.get('pq_m')}x{self.params.get('nbits')}"
        return {"flat": "float32", "hnsw": "float32", "sq8": "int8", "binary": "binary"}[self.type]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "params": dict(self.params)}


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float32 and contiguous for FAISS."""
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.ascontiguousarray(x / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """One bit per dimension (1 where the value is positive), packed 8 to a byte."""
    return np.packbits(np.asarray(vectors) > 0, axis=1)


def build_faiss_index(vectors: np.ndarray, spec: IndexSpec):
    """A trained FAISS index holding ``vectors`` (normalized here), per ``spec`` (resolved)."""
    x = normalize(vectors)
    n, d = x.shape
    spec = spec.resolved(n, d)
    p = spec.params
    ip = faiss.METRIC_INNER_PRODUCT
    if spec.type == "binary":
        index = faiss.IndexBinaryFlat(d)
        index.add(sign_bits(x))
        return index
    if spec.type == "flat":
        index = faiss.IndexFlatIP(d)
    elif spec.type == "hnsw":
        index = faiss.IndexHNSWFlat(d, p["m"], ip)
        index.hnsw.efConstruction = p["ef_construction"]
    elif spec.type == "sq8":
        index = faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_8bit, ip)
    else:
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFPQ(quantizer, d, p["nlist"], p["pq_m"], p["nbits"], ip)
        index.own_fields = True
        quantizer.this.disown()
        # FAISS prints a warning per sub-quantizer when there are fewer than 39 points per centroid;
        # the quality cost of a small training set shows in the recall, so keep stderr to one line.
        index.cp.min_points_per_centroid = 1
        index.pq.cp.min_points_per_centroid = 1
    if not index.is_trained:
        index.train(x)
    index.add(x)
    apply_search_params(index, spec)
    return index


def apply_search_params(index, spec: IndexSpec) -> None:
    """Set the query-time knobs (HNSW efSearch, IVF nprobe) on a built or loaded index."""
    if spec.type == "hnsw":
        index.hnsw.efSearch = spec.params["ef_search"]
    elif spec.type == "ivfpq":
        index.nprobe = spec.params["nprobe"]


def search_faiss(index, spec: IndexSpec, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, ids)`` of the ``k`` best matches per query; scores are cosines (higher is better)."""
    q = normalize(queries)
    k = min(k, index.ntotal)
    if spec.type == "binary":
        dist, ids = index.search(sign_bits(q), k)
        return 1.0 - 2.0 * dist.astype(np.float32) / q.shape[1], ids
    scores, ids = index.search(q, k)
    return scores, ids


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
    encoder: EncoderIdentity
    index_type: str
    hits: list[Hit]

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "encoder": self.encoder.to_dict(),
            "index": self.index_type,
            "hits": [asdict(h) for h in self.hits],
        }


class VectorIndex:
    """Documents, their vectors in a FAISS index, and the identity of the encoder that made them."""

    def __init__(self, identity: EncoderIdentity, spec: IndexSpec, index, documents: Sequence[Document]):
        if index.ntotal != len(documents):
            raise DamagedIndexError(f"the index holds {index.ntotal} vectors but there are {len(documents)} documents")
        self.identity = identity
        self.spec = spec
        self.index = index
        self.documents = list(documents)

    @classmethod
    def build(
        cls,
        documents: Sequence[Document],
        encoder: TextEncoder,
        spec: IndexSpec | None = None,
        batch_size: int = 32,
        show_progress_bar: bool = False,
    ) -> VectorIndex:
        """Encode the documents and index their vectors."""
        if not documents:
            raise InputError("no documents to index")
        spec = (spec or IndexSpec()).resolved(len(documents), encoder.identity.dim)
        vectors = encoder.encode(
            [d.text for d in documents], batch_size=batch_size, show_progress_bar=show_progress_bar
        )
        return cls(encoder.identity, spec, build_faiss_index(vectors, spec), documents)

    def __len__(self) -> int:
        return len(self.documents)

    def check_encoder(self, identity: EncoderIdentity) -> None:
        """Refuse a query encoder that is not the index's: its vectors live in another space."""
        mine = self.identity
        for what in ("model", "kind", "layer", "dim"):
            if getattr(identity, what) != getattr(mine, what):
                raise IndexMismatchError(
                    f"this index was built with {mine.describe()} vectors but the query encoder is "
                    f"{identity.describe()} ({what} differs); query with the index's encoder or rebuild the index"
                )

    def search_vectors(self, queries: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """Raw ``(scores, positions)`` for query vectors; positions index :attr:`documents`."""
        if k < 1:
            raise InputError(f"-k must be at least 1, got {k}")
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if queries.shape[1] != self.identity.dim:
            raise IndexMismatchError(f"query vectors have {queries.shape[1]} dimensions, the index {self.identity.dim}")
        return search_faiss(self.index, self.spec, queries, k)

    def search(self, encoder: TextEncoder, queries: Sequence[str], k: int = 10) -> list[SearchResult]:
        """Encode the queries with ``encoder`` (which must match the index) and rank documents."""
        self.check_encoder(encoder.identity)
        if not queries or any(not q.strip() for q in queries):
            raise InputError("the query is empty; give some text to search for")
        scores, ids = self.search_vectors(encoder.encode(list(queries)), k)
        results = []
        for query, row_scores, row_ids in zip(queries, scores, ids, strict=True):
            hits = [
                Hit(rank, float(s), self.documents[i].id, self.documents[i].text)
                for rank, (s, i) in enumerate(((s, i) for s, i in zip(row_scores, row_ids, strict=True) if i >= 0), 1)
            ]
            results.append(SearchResult(query, self.identity, self.spec.type, hits))
        return results

    # --- persistence ----------------------------------------------------------------------

    def serialized(self) -> bytes:
        if self.spec.type == "binary":
            return faiss.serialize_index_binary(self.index).tobytes()
        return faiss.serialize_index(self.index).tobytes()

    def save(self, folder: Path | str, model_source: str | None = None) -> Path:
        """Write index, documents and manifest atomically (temporary folder, then rename)."""
        folder = Path(folder)
        if folder.exists() and (not folder.is_dir() or (any(folder.iterdir()) and not (folder / MANIFEST).exists())):
            raise InputError(f"--out {folder} exists and is not a contextlens index folder; choose a new folder")
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = folder.parent / f".{folder.name}.tmp-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        index_bytes = self.serialized()
        docs_bytes = "".join(
            json.dumps({"id": d.id, "text": d.text}, ensure_ascii=False) + "\n" for d in self.documents
        ).encode("utf-8")
        (tmp / INDEX_FILE).write_bytes(index_bytes)
        (tmp / DOCS_FILE).write_bytes(docs_bytes)
        (tmp / MANIFEST).write_text(json.dumps(self.manifest(index_bytes, docs_bytes, model_source), indent=2) + "\n")
        old = folder.parent / f".{folder.name}.old-{os.getpid()}"
        if folder.exists():
            folder.rename(old)
        tmp.rename(folder)
        if old.exists():
            shutil.rmtree(old)
        return folder

    def manifest(self, index_bytes: bytes, docs_bytes: bytes, model_source: str | None = None) -> dict[str, Any]:
        from contextlens.version import __version__

        return {
            "format": FORMAT,
            "contextlens_version": __version__,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "encoder": self.identity.to_dict(),
            "model_source": model_source,
            "dimension": self.identity.dim,
            "dtype": self.spec.dtype,
            "count": len(self.documents),
            "normalized": True,
            "metric": "hamming" if self.spec.type == "binary" else "cosine (inner product of unit vectors)",
            "index": self.spec.to_dict(),
            "files": {
                INDEX_FILE: {"sha256": hashlib.sha256(index_bytes).hexdigest(), "bytes": len(index_bytes)},
                DOCS_FILE: {"sha256": hashlib.sha256(docs_bytes).hexdigest(), "bytes": len(docs_bytes)},
            },
        }

    @classmethod
    def load(cls, folder: Path | str) -> VectorIndex:
        """Read and verify a saved index: manifest present, checksums and counts consistent."""
        folder = Path(folder)
        manifest = read_manifest(folder)
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
        spec = IndexSpec(manifest["index"]["type"], manifest["index"]["params"])
        array = np.frombuffer(blobs[INDEX_FILE], dtype=np.uint8)
        try:
            index = faiss.deserialize_index_binary(array) if spec.type == "binary" else faiss.deserialize_index(array)
        except RuntimeError as exc:
            raise DamagedIndexError(f"{folder / INDEX_FILE} is not a readable FAISS index; rebuild it") from exc
        apply_search_params(index, spec)
        documents = []
        for line in blobs[DOCS_FILE].decode("utf-8").splitlines():
            obj = json.loads(line)
            documents.append(Document(obj["id"], obj["text"]))
        enc = manifest["encoder"]
        identity = EncoderIdentity(enc["model"], enc["kind"], enc["layer"], int(enc["dim"]))
        if index.d != identity.dim or len(documents) != manifest["count"]:
            raise DamagedIndexError(f"{folder}: the index or documents disagree with the manifest; rebuild the index")
        return cls(identity, spec, index, documents)


def read_manifest(folder: Path | str) -> dict[str, Any]:
    """The manifest of an index folder, checked for the fields contextlens relies on."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataFileError(f"index folder {folder} does not exist; build one with `contextlens index build`")
    path = folder / MANIFEST
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
        for name in (INDEX_FILE, DOCS_FILE):
            manifest["files"][name]["sha256"]  # noqa: B018
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise DamagedIndexError(f"{path} is not a valid contextlens manifest; rebuild the index") from exc
    return manifest
