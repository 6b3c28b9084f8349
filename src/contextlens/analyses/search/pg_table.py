"""One pgvector table: the index configuration (:class:`PgIndexConfig`), the binary ``COPY`` that
fills it, the index built on it, its sizes, and a search of it (exact, or through the index).

:mod:`.pg_index` keeps such a table behind an index folder (manifest, documents, ``CURRENT``)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextlens.analyses.search.index_config import normalize
from contextlens.core.arguments import given, whole_number
from contextlens.errors import InputError, ParameterError

PG_INDEX_TYPES: tuple[str, ...] = ("flat", "hnsw", "ivfflat")
PG_DTYPES: tuple[str, ...] = ("float32", "float16", "binary")
COLUMN_TYPE = {"float32": "vector", "float16": "halfvec", "binary": "vector"}
OPCLASS = {"float32": "vector_cosine_ops", "float16": "halfvec_cosine_ops", "binary": "bit_hamming_ops"}
# pgvector's limits on indexed dimensions (HNSW and IVFFlat alike; a flat scan has vector's 16,000).
MAX_INDEXED_DIM = {"float32": 2000, "float16": 4000, "binary": 64000}
PG_DEFAULT_PARAMS: dict[str, dict[str, int]] = {  # pgvector's own defaults
    "flat": {},
    "hnsw": {"m": 16, "ef_construction": 64, "ef_search": 40},
    "ivfflat": {"lists": 100, "probes": 1},
}
PG_PARAM_RANGES = {"m": (2, 100), "ef_construction": (4, 1000), "ef_search": (1, 1000), "lists": (1, 32768),
                   "probes": (1, 32768), "rerank": (1, 1000)}  # fmt: skip
RERANK = 4  # binary: candidates fetched by Hamming distance per result, re-ranked by cosine


@dataclass(frozen=True)
class PgIndexConfig:
    """A pgvector index type, the stored type of the vectors and the type's parameters."""

    type: str = "flat"
    params: dict[str, int] = field(default_factory=dict)
    dtype: str = "float32"

    def __post_init__(self) -> None:
        if self.params is None:  # no parameters: pgvector's defaults
            object.__setattr__(self, "params", {})
        if not isinstance(self.params, dict):
            raise ParameterError(
                "params", f"must be a dict of the index's parameters (e.g. {{'m': 16}}), got {given(self.params)}"
            )
        if self.type not in PG_INDEX_TYPES:
            raise InputError(f"pgvector has no `index` {self.type!r}; use one of {', '.join(PG_INDEX_TYPES)}")
        if self.dtype not in PG_DTYPES:
            raise InputError(
                f"pgvector stores no `dtype` {self.dtype!r}; use float32 (vector), float16 (halfvec) or binary (bit)"
            )
        allowed = set(PG_DEFAULT_PARAMS[self.type]) | ({"rerank"} if self.dtype == "binary" else set())
        unknown = set(self.params) - allowed
        if unknown:
            raise InputError(
                f"pgvector index {self.type!r} takes no {sorted(unknown)} parameter; it takes: "
                f"{', '.join(sorted(allowed)) or 'none'}"
            )
        for name, value in self.params.items():
            low, high = PG_PARAM_RANGES[name]
            whole_number(value, name, minimum=low, maximum=high)

    def resolved(self, dim: int) -> PgIndexConfig:
        """pgvector's defaults filled in, and the dimension checked against its limits."""
        whole_number(dim, "dim", minimum=1)
        if self.type != "flat" and dim > MAX_INDEXED_DIM[self.dtype]:
            raise InputError(
                f"pgvector indexes at most {MAX_INDEXED_DIM[self.dtype]:,} dimensions of {self.dtype}, got {dim:,}; "
                "use `dtype` float16 or binary, or `index` flat"
            )
        params = {**PG_DEFAULT_PARAMS[self.type], **self.params}
        if self.dtype == "binary":
            params.setdefault("rerank", RERANK)
        return PgIndexConfig(self.type, params, self.dtype)

    @property
    def code(self) -> str:
        """How one vector is stored, in pgvector's words (``vector``, ``halfvec``, or ``bit`` index keys)."""
        return {"float32": "vector", "float16": "halfvec", "binary": "vector, indexed as bit"}[self.dtype]

    def column(self, dim: int) -> str:
        return f"{COLUMN_TYPE[self.dtype]}({dim})"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "params": dict(self.params)}


# --- the table --------------------------------------------------------------------------------


def copy_payload(vectors: np.ndarray, dtype: str) -> bytes:
    """The rows ``(pos, embedding)`` in PostgreSQL's binary COPY format (pgvector's binary I/O:
    int16 dim, int16 unused, then big-endian float4, or float2 for halfvec)."""
    n, d = vectors.shape
    value = np.dtype(">f2") if dtype == "float16" else np.dtype(">f4")
    row = np.dtype([("fields", ">i2"), ("len_pos", ">i4"), ("pos", ">i4"), ("len_vec", ">i4"),
                    ("dim", ">i2"), ("unused", ">i2"), ("values", value, (d,))])  # fmt: skip
    rows = np.zeros(n, dtype=row)
    rows["fields"], rows["len_pos"], rows["pos"] = 2, 4, np.arange(n)
    rows["len_vec"], rows["dim"], rows["values"] = 4 + d * value.itemsize, d, vectors
    return b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0) + rows.tobytes() + struct.pack(">h", -1)


def vector_literal(vector: np.ndarray) -> str:
    """A vector as pgvector's text form, every float32 kept exactly (9 significant digits)."""
    return "[" + ",".join(f"{float(x):.9g}" for x in vector) + "]"


def index_expression(config: PgIndexConfig, dim: int) -> str:
    return f"(binary_quantize(embedding)::bit({dim}))" if config.dtype == "binary" else "embedding"


@dataclass
class BuildReport:
    """What a build did in the database: its table, sizes and the NOTICEs PostgreSQL sent."""

    table: str
    seconds: float
    notices: list[str]
    table_bytes: int  # pg_table_size: heap + TOAST (+ their maps)
    index_bytes: int  # pg_relation_size of the vector index (0 for flat)
    total_bytes: int  # pg_total_relation_size: everything


def create_table(
    conn, table: str, vectors: np.ndarray, config: PgIndexConfig, maintenance_work_mem: str | None = None
) -> BuildReport:
    """Create ``table`` holding ``vectors`` (unit rows) and its index, in one transaction."""
    import time

    n, d = vectors.shape
    notices: list[str] = []

    def keep(diag) -> None:
        notices.append(diag.message_primary or "")

    conn.add_notice_handler(keep)
    start = time.perf_counter()
    try:
        with conn.transaction():
            conn.execute("SET LOCAL max_parallel_maintenance_workers = 0")  # a serial build: sizes and notices repeat
            if maintenance_work_mem:
                conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,))
            conn.execute(f"CREATE TABLE {table} (pos integer NOT NULL, embedding {config.column(d)} NOT NULL)")
            with conn.cursor().copy(f"COPY {table} (pos, embedding) FROM STDIN (FORMAT BINARY)") as copy:
                copy.write(copy_payload(vectors, config.dtype))
            if config.type != "flat":
                p = config.params
                with_ = f"m = {p['m']}, ef_construction = {p['ef_construction']}" if config.type == "hnsw" else (
                    f"lists = {p['lists']}")  # fmt: skip
                conn.execute(
                    f"CREATE INDEX {table}_ann ON {table} USING {config.type} "
                    f"({index_expression(config, d)} {OPCLASS[config.dtype]}) WITH ({with_})"
                )
    finally:
        conn.remove_notice_handler(keep)  # a failed or cancelled build too: the connection lives on
    seconds = time.perf_counter() - start
    return BuildReport(table, seconds, notices, *relation_sizes(conn, table, config))


def relation_sizes(conn, table: str, config: PgIndexConfig) -> tuple[int, int, int]:
    index = f"{table}_ann" if config.type != "flat" else None
    row = conn.execute(
        "SELECT pg_table_size(%s::regclass), coalesce(pg_relation_size(%s::regclass), 0), "
        "pg_total_relation_size(%s::regclass)",
        (table, index, table),
    ).fetchone()
    return int(row[0]), int(row[1]), int(row[2])


def search_table(
    conn, table: str, config: PgIndexConfig, queries: np.ndarray, k: int, exact: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, positions)`` of the ``k`` best rows per query (unit rows); ``exact`` forbids the index."""
    q = normalize(queries)
    d = q.shape[1]
    p = config.params
    scores = np.full((len(q), k), -np.inf, dtype=np.float32)
    ids = np.full((len(q), k), -1, dtype=np.int64)
    cast = f"{COLUMN_TYPE[config.dtype]}({d})"
    if config.dtype == "binary":
        inner = f"ORDER BY binary_quantize(embedding)::bit({d}) <~> binary_quantize(%(q)s::vector({d})) LIMIT %(c)s"
        sql = (f"SELECT pos, 1 - (embedding <=> %(q)s::{cast}) FROM (SELECT pos, embedding FROM {table} {inner}) c "
               f"ORDER BY embedding <=> %(q)s::{cast} LIMIT %(k)s")  # fmt: skip
    else:
        order = f"ORDER BY embedding <=> %(q)s::{cast} LIMIT %(k)s"
        sql = f"SELECT pos, 1 - (embedding <=> %(q)s::{cast}) FROM {table} {order}"
    with conn.transaction():
        if exact:
            conn.execute("SET LOCAL enable_indexscan = off")
            conn.execute("SET LOCAL enable_bitmapscan = off")
        elif config.type == "hnsw":
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(p["ef_search"]),))
        elif config.type == "ivfflat":
            conn.execute("SELECT set_config('ivfflat.probes', %s, true)", (str(p["probes"]),))
        for row, vector in enumerate(q):
            args = {"q": vector_literal(vector), "k": k, "c": k * p.get("rerank", RERANK)}
            for col, (pos, score) in enumerate(conn.execute(sql, args).fetchall()):
                ids[row, col], scores[row, col] = pos, score
    return scores, ids


def recall_at_k(approximate: np.ndarray, exact: np.ndarray) -> float:
    """Mean share of each query's exact top k that the approximate search also returned."""
    pairs = zip(approximate, exact, strict=True)
    hits = [len(set(a[a >= 0]) & set(e[e >= 0])) / max(1, int((e >= 0).sum())) for a, e in pairs]
    return float(np.mean(hits)) if hits else 1.0


# --- tables of an index folder ----------------------------------------------------------------
