"""How many vectors of D dimensions fit on the managed platforms of the seeds: their documented formulas.

contextlens measures FAISS and pgvector for real (:mod:`.capacity`, :mod:`.pg_capacity`); the
managed services cannot be run here, so their sizes come from each vendor's own documentation,
evaluated exactly and labelled **documented, not measured** with the page they come from:

* **OpenSearch k-NN** (the AWS OpenSearch vector engine): an HNSW graph (faiss or nmslib engine)
  takes ``1.1·(4d + 8m)`` bytes per vector of native memory, ``1.1·(d·bits/8 + 8m)`` with binary
  quantization at 1, 2 or 4 bits; every replica holds all vectors again; the graphs live off the
  JVM heap under a circuit breaker of 50% of the memory left after the heap.
* **Azure AI Search**: a vector field takes ``raw × (1 + HNSW overhead) × (1 + deleted ratio)``
  with ``raw = n·d·(4 | 2 | 1 bytes)``; the HNSW overhead is 1-20% (the vendor's table at m = 4:
  20% at 96 dims ... 0.5% at 3,072), deleted-document ratio under 10% for half of the services; the
  vector quota is per partition by tier and a hard limit (indexing fails past it).
* **Vertex AI Vector Search**: the index is split into shards of 2, 20 or 50 GiB (small, medium,
  large), and the shard size decides the machine types that can serve it. The vendor gives no
  per-vector overhead, so the count here is raw float32 data per shard: an upper bound.

Every number is computed with exact fractions from the documented constants, so a test can check
it against the arithmetic done by hand.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

from contextlens.core.arguments import whole_number
from contextlens.errors import ParameterError

PLATFORMS: tuple[str, ...] = ("opensearch", "azure", "vertex")
LABEL = "documented, not measured"
GIB = 2**30

OPENSEARCH_SOURCES = [
    {"title": "OpenSearch documentation: Methods and engines, HNSW memory estimation",
     "url": "https://docs.opensearch.org/latest/field-types/supported-field-types/knn-methods-engines/"},
    {"title": "OpenSearch documentation: Binary quantization, HNSW memory estimation",
     "url": "https://docs.opensearch.org/latest/vector-search/optimizing-storage/binary-quantization/"},
    {"title": "OpenSearch documentation: Vector search settings (knn.memory.circuit_breaker.limit)",
     "url": "https://docs.opensearch.org/latest/vector-search/settings/"},
]  # fmt: skip
AZURE_SOURCES = [
    {"title": "Azure AI Search: Vector index size and staying under limits",
     "url": "https://learn.microsoft.com/azure/search/vector-search-index-size"},
    {"title": "Azure AI Search: Service limits, Vector index size limits",
     "url": "https://learn.microsoft.com/azure/search/search-limits-quotas-capacity#vector-index-size-limits"},
]  # fmt: skip
VERTEX_SOURCES = [
    {"title": "Vertex AI Vector Search: Manage indexes, Index size (shard sizes and machine types)",
     "url": "https://cloud.google.com/vertex-ai/docs/vector-search/create-manage-index"},
]  # fmt: skip

OPENSEARCH_BITS = (1, 2, 4)
CIRCUIT_BREAKER = Fraction(1, 2)
OPENSEARCH_OVERHEAD = Fraction(11, 10)

# Vector quota per partition in GB (the service statistics API reports 1 GB as 1,073,741,824 bytes),
# for services created after May 17, 2024, and the most partitions of each tier.
AZURE_QUOTA_GB = {"basic": 5, "s1": 35, "s2": 150, "s3": 300, "s3hd": 300, "l1": 150, "l2": 300}
AZURE_MAX_PARTITIONS = {"basic": 3, "s1": 12, "s2": 12, "s3": 12, "s3hd": 3, "l1": 12, "l2": 12}
AZURE_BYTES = {"float32": 4, "float16": 2, "int8": 1}  # Edm.Single, Edm.Half, Edm.SByte
# HNSW overhead observed by the vendor at m = 4 (its default), by dimension
AZURE_HNSW_OVERHEAD = {96: Fraction(20, 100), 200: Fraction(8, 100), 768: Fraction(2, 100),
                       1536: Fraction(1, 100), 3072: Fraction(5, 1000)}  # fmt: skip
AZURE_DELETED_RATIO = Fraction(10, 100)

VERTEX_SHARDS_GIB = {"small": 2, "medium": 20, "large": 50}
VERTEX_DEFAULT_MACHINE = {"small": "e2-standard-2", "medium": "e2-standard-16", "large": "e2-highmem-16"}


@dataclass
class PlatformCapacity:
    """What ``count`` vectors of ``dim`` dimensions take on a platform, and how many fit its budget."""

    platform: str
    count: int
    dim: int
    params: dict[str, Any]
    bytes_per_vector: float  # one copy, by the documented formula
    bytes: int  # all of them, every copy the platform keeps
    formula: str
    budget_bytes: int  # the memory or quota they must fit in
    budget_formula: str
    fits: int  # how many vectors of ``dim`` dimensions fit in the budget
    fits_count: bool  # whether ``count`` does
    label: str = LABEL
    sources: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check(count: int, dim: int) -> tuple[int, int]:
    return whole_number(count, "count", minimum=1, floats=True), whole_number(dim, "dim", minimum=1)


def _fraction(value: Any, name: str, low: float, high: float) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction) or not low <= value <= high:
        raise ParameterError(name, f"must be a number from {low} to {high}, got {value!r}")
    return Fraction(value).limit_denominator(10**9)


def opensearch(
    count: int, dim: int, m: int = 16, replicas: int = 1, bits: int | None = None, node_memory_gib: float = 64,
    heap_gib: float | None = None, nodes: int = 1,
) -> PlatformCapacity:  # fmt: skip
    """OpenSearch k-NN HNSW: native memory for ``count`` vectors and ``replicas`` copies more, against
    the circuit breaker of ``nodes`` data nodes of ``node_memory_gib`` with a JVM heap of ``heap_gib``
    (default half the node's memory, at most 32 GiB)."""
    n, d = _check(count, dim)
    m = whole_number(m, "m", minimum=2, maximum=100)
    replicas = whole_number(replicas, "replicas", minimum=0, maximum=100)
    nodes = whole_number(nodes, "nodes", minimum=1, maximum=10_000)
    if bits is not None and bits not in OPENSEARCH_BITS:
        raise ParameterError("bits", f"binary quantization takes 1, 2 or 4 bits, got {bits!r}")
    memory = _fraction(node_memory_gib, "node_memory_gib", 1, 1_000_000)
    heap = min(memory / 2, Fraction(32)) if heap_gib is None else _fraction(heap_gib, "heap_gib", 0, float(memory))
    if heap >= memory:
        raise ParameterError("heap_gib", f"must be less than the node's memory ({float(memory):g} GiB)")
    value = Fraction(4 * d) if bits is None else Fraction(d * bits, 8)
    per_vector = OPENSEARCH_OVERHEAD * (value + 8 * m)
    copies = replicas + 1
    budget = nodes * (memory - heap) * GIB * CIRCUIT_BREAKER
    formula = ("1.1*(4*d + 8*m)" if bits is None else f"1.1*(d*{bits}/8 + 8*m)") + " bytes/vector x (replicas + 1)"
    fits = math.floor(budget / (per_vector * copies))
    notes = [
        f"every replica holds all vectors again: {copies} cop{'y' if copies == 1 else 'ies'} of the graph",
        "the graphs live off the JVM heap; past the circuit breaker k-NN evicts the least recently used graphs",
    ]
    if bits is not None:
        notes.append(f"binary quantization at {bits} bit(s): {32 // bits}x compression of the vectors; "
                     "the graph's 8*m bytes per vector stay")  # fmt: skip
    return PlatformCapacity(
        platform="opensearch", count=n, dim=d,
        params={"m": m, "replicas": replicas, "bits": bits, "node_memory_gib": float(memory),
                "heap_gib": float(heap), "nodes": nodes, "circuit_breaker": float(CIRCUIT_BREAKER)},
        bytes_per_vector=float(per_vector), bytes=math.ceil(per_vector * n * copies), formula=formula,
        budget_bytes=math.floor(budget),
        budget_formula=f"nodes {nodes} x (memory {float(memory):g} GiB - heap {float(heap):g} GiB) x breaker 50%",
        fits=fits, fits_count=n <= fits, sources=OPENSEARCH_SOURCES, notes=notes,
    )  # fmt: skip


def azure_overhead(dim: int) -> Fraction:
    """The vendor's observed HNSW overhead (m = 4) for the tabulated dimension nearest ``dim`` (by ratio)."""
    nearest = min(AZURE_HNSW_OVERHEAD, key=lambda t: abs(math.log(dim / t)))
    return AZURE_HNSW_OVERHEAD[nearest]


def azure(
    count: int, dim: int, tier: str = "s1", partitions: int = 1, dtype: str = "float32",
    overhead: float | None = None, deleted_ratio: float | None = None,
) -> PlatformCapacity:  # fmt: skip
    """Azure AI Search: the vector index size of ``count`` vectors against the vector quota of
    ``partitions`` partitions of ``tier`` (services created after May 17, 2024)."""
    n, d = _check(count, dim)
    tier = str(tier).lower().replace(" ", "")
    if tier not in AZURE_QUOTA_GB:
        raise ParameterError("tier", f"must be one of {', '.join(AZURE_QUOTA_GB)}, got {tier!r}")
    partitions = whole_number(partitions, "partitions", minimum=1, maximum=AZURE_MAX_PARTITIONS[tier])
    if dtype not in AZURE_BYTES:
        raise ParameterError("dtype", f"Azure AI Search stores float32, float16 or int8 vectors, got {dtype!r}")
    hnsw = azure_overhead(d) if overhead is None else _fraction(overhead, "overhead", 0, 1)
    deleted = AZURE_DELETED_RATIO if deleted_ratio is None else _fraction(deleted_ratio, "deleted_ratio", 0, 10)
    raw = Fraction(d * AZURE_BYTES[dtype])
    per_vector = raw * (1 + hnsw) * (1 + deleted)
    budget = AZURE_QUOTA_GB[tier] * partitions * GIB
    fits = math.floor(budget / per_vector)
    notes = [
        "the quota is a hard limit: past it, indexing requests fail until documents are deleted or partitions added",
        f"on disk a vector index takes about three times its memory size (~{3 * float(per_vector) * n / GIB:,.2f} GiB)",
    ]
    if overhead is None:
        notes.append(f"HNSW overhead {float(hnsw):.1%}: the vendor's figure for the dimension nearest {d} at m = 4")
    return PlatformCapacity(
        platform="azure", count=n, dim=d,
        params={"tier": tier, "partitions": partitions, "dtype": dtype, "overhead": float(hnsw),
                "deleted_ratio": float(deleted), "quota_gb_per_partition": AZURE_QUOTA_GB[tier]},
        bytes_per_vector=float(per_vector), bytes=math.ceil(per_vector * n),
        formula=f"n*d*{AZURE_BYTES[dtype]} x (1 + HNSW overhead) x (1 + deleted ratio)",
        budget_bytes=budget,
        budget_formula=f"{AZURE_QUOTA_GB[tier]} GB vector quota per {tier} partition x {partitions} partition(s)",
        fits=fits, fits_count=n <= fits, sources=AZURE_SOURCES, notes=notes,
    )  # fmt: skip


def vertex(count: int, dim: int, shard_size: str = "medium") -> PlatformCapacity:
    """Vertex AI Vector Search: shards of ``shard_size`` for ``count`` float32 vectors (raw data only)."""
    n, d = _check(count, dim)
    shard_size = str(shard_size).lower().removeprefix("shard_size_")
    if shard_size not in VERTEX_SHARDS_GIB:
        raise ParameterError("shard_size", f"must be small, medium or large, got {shard_size!r}")
    shard = VERTEX_SHARDS_GIB[shard_size] * GIB
    per_vector = 4 * d
    per_shard = shard // per_vector
    if per_shard == 0:
        raise ParameterError("dim", f"one vector of {d:,} float32 dimensions is larger than a {shard_size} shard")
    shards = math.ceil(n / per_shard)
    return PlatformCapacity(
        platform="vertex", count=n, dim=d,
        params={"shard_size": shard_size, "shard_gib": VERTEX_SHARDS_GIB[shard_size], "shards": shards,
                "machine_type": VERTEX_DEFAULT_MACHINE[shard_size]},
        bytes_per_vector=float(per_vector), bytes=n * per_vector,
        formula="n*d*4 (float32, raw: no documented overhead)",
        budget_bytes=shard, budget_formula=f"one {shard_size} shard: {VERTEX_SHARDS_GIB[shard_size]} GiB",
        fits=per_shard, fits_count=n <= per_shard, sources=VERTEX_SOURCES,
        notes=[f"{n:,} vectors need {shards:,} {shard_size} shard(s), each served by its own machine "
               f"({VERTEX_DEFAULT_MACHINE[shard_size]} by default for {shard_size} shards)",
               "the shard size is fixed when the index is created and decides which machine types can serve it",
               "the vendor documents no per-vector overhead: vectors per shard is an upper bound"],
    )  # fmt: skip


def platform_capacity(platform: str, count: int, dim: int, **params: Any) -> PlatformCapacity:
    """Dispatch to :func:`opensearch`, :func:`azure` or :func:`vertex` (``params``: theirs, None for default)."""
    functions = {"opensearch": opensearch, "azure": azure, "vertex": vertex}
    if platform not in functions:
        raise ParameterError("engine", f"must be one of {', '.join(PLATFORMS)}, got {platform!r}")
    return functions[platform](count, dim, **{k: v for k, v in params.items() if v is not None})
