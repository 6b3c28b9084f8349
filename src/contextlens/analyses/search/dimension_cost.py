"""What a million vectors cost, by dimension: the lesson's "cost of a dimension" table, once.

One row per width (the served model's beside the common ones), in bytes, by the project's capacity
formulas: FAISS flat, sq8 and HNSW (``capacity.estimate``) and pgvector HNSW on ``vector`` and
``halfvec``, index plus table (``pg_capacity.pg_estimate``). The web lesson draws its figure and its
table from these rows; any face may print them.
"""

from __future__ import annotations

from contextlens.errors import InputError

COUNT = 1_000_000  # vectors in the table
# the widths shown beside the served model's: glove-50d's, then common embedding models' (768 .. 3072)
WIDTHS = (50, 768, 1024, 1536, 3072)
COLUMNS = ("flat", "sq8", "faiss_hnsw", "pg_vector_hnsw", "pg_halfvec_hnsw")  # bytes per row, None where refused


def widths(served: int) -> list[int]:
    """The widths of the table: ``served`` (the model's hidden size) among :data:`WIDTHS`, ascending."""
    return sorted({*WIDTHS, served})


def cost_rows(dims: list[int], count: int = COUNT) -> list[dict[str, int | None]]:
    """Bytes of ``count`` vectors per dimension, one dict per width: ``dimensions`` and each of
    :data:`COLUMNS` (None where pgvector refuses the index: HNSW on vector stops at 2,000 dimensions)."""
    from contextlens.analyses.search.capacity import estimate
    from contextlens.analyses.search.index_config import IndexConfig
    from contextlens.analyses.search.pg_capacity import pg_estimate
    from contextlens.analyses.search.pg_index import PgIndexConfig

    def pg(dtype: str, d: int) -> int | None:
        try:
            found = pg_estimate(PgIndexConfig("hnsw", dtype=dtype), count, d)
        except InputError:
            return None
        return found.index_bytes + found.table_bytes

    return [
        {
            "dimensions": d,
            "flat": estimate(IndexConfig("flat"), count, d).bytes,
            "sq8": estimate(IndexConfig("sq8"), count, d).bytes,
            "faiss_hnsw": estimate(IndexConfig("hnsw"), count, d).bytes,
            "pg_vector_hnsw": pg("float32", d),
            "pg_halfvec_hnsw": pg("float16", d),
        }
        for d in dims
    ]


def index_memory(served: int, count: int = COUNT) -> list[dict[str, int | None]]:
    """:func:`cost_rows` for :func:`widths` of ``served``: the table the lesson shows."""
    return cost_rows(widths(served), count)
