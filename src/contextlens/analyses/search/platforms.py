"""How many vectors of D dimensions fit on the managed platforms of the seeds: their documented formulas.

contextlens measures FAISS and pgvector for real (:mod:`.capacity`, :mod:`.pg_capacity`); the
managed services cannot be run here, so their sizes come from each vendor's own documentation,
evaluated exactly and labelled **documented, not measured** with the page they come from:

* **OpenSearch k-NN** (the AWS OpenSearch vector engine): an HNSW graph (faiss or nmslib engine)
  takes ``1.1·(4d + 8m)`` bytes per vector of native memory, ``1.1·(d·bits/8 + 8m)`` with Faiss
  quantization at 1, 2, 4 or 16 bits, ``1.1·(d + 8m)`` for byte vectors or Lucene's 7-bit scalar
  quantization, ``1.1·(d/8 + 8m)`` for binary vectors; an IVF index takes
  ``1.1·(bytes·d·n + 4·nlist·d)``; product quantization has its own two formulas with a per-segment
  code book. Every replica holds all vectors again; the graphs live off the JVM heap under a circuit
  breaker of 50% of the memory left after the heap.
* **Azure AI Search**: a vector field takes ``raw × (1 + HNSW overhead) × (1 + deleted ratio)``
  with ``raw = n·d·(4 | 2 | 1 bytes)``; the HNSW overhead is 1-20% (the vendor's table at m = 4:
  20% at 96 dims ... 0.5% at 3,072), deleted-document ratio under 10% for half of the services; the
  vector quota is per partition by tier and a hard limit (indexing fails past it); on disk the
  vectors take about three times that, against the partition's storage; a vector field has at most
  4,096 dimensions and an index a tier's maximum of documents.
* **Vertex AI Vector Search**: the index is split into shards of 2, 20 or 50 GiB (small, medium,
  large), and the shard size decides the machine types that can serve it (the vendor's table of
  six machine types). The vendor gives no per-vector overhead, so the count here is raw float32
  data per shard: an upper bound.

Every number is computed with exact fractions from the documented constants, so a test can check
it against the arithmetic done by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from contextlens.analyses.search.platform_options import (
    LABEL,  # noqa: F401 - named here too
    PlatformCapacity,
    checked_size,
    choice_option,
    real_option,
)
from contextlens.core.arguments import whole_number
from contextlens.errors import ParameterError

PLATFORMS: tuple[str, ...] = ("opensearch", "azure", "vertex")
GIB = 2**30

OPENSEARCH_SOURCES = [
    {"title": "OpenSearch documentation: Methods and engines, HNSW memory estimation",
     "url": "https://docs.opensearch.org/latest/field-types/supported-field-types/knn-methods-engines/"},
    {"title": "OpenSearch documentation: Binary quantization, HNSW memory estimation",
     "url": "https://docs.opensearch.org/latest/vector-search/optimizing-storage/binary-quantization/"},
    {"title": "OpenSearch documentation: Vector search settings (knn.memory.circuit_breaker.limit)",
     "url": "https://docs.opensearch.org/latest/vector-search/settings/"},
]  # fmt: skip
# the pages of the variants added beside HNSW float32: each formula's own page, cited with it
OPENSEARCH_VARIANT_SOURCES = {
    "ivf": {"title": "OpenSearch documentation: Methods and engines, IVF memory estimation (and IVF nlist default 4, "
                     "PQ parameters, engine recommendations: 16,000 dimensions at most)",
            "url": "https://docs.opensearch.org/latest/mappings/supported-field-types/knn-methods-engines/"},
    "sq": {"title": "OpenSearch documentation: Faiss scalar quantization, memory estimation (1, 2, 4 and 16 bits)",
           "url": "https://docs.opensearch.org/latest/vector-search/optimizing-storage/faiss-scalar-quantization/"},
    "lucene": {"title": "OpenSearch documentation: Lucene scalar quantization, HNSW memory estimation",
               "url": "https://docs.opensearch.org/latest/vector-search/optimizing-storage/lucene-scalar-quantization/"},
    "memory_optimized": {"title": "OpenSearch documentation: Memory-optimized vectors, byte and binary vectors, "
                                  "memory estimation",
                         "url": "https://docs.opensearch.org/latest/mappings/supported-field-types/knn-memory-optimized/"},
    "pq": {"title": "OpenSearch documentation: Faiss product quantization, memory estimation",
           "url": "https://docs.opensearch.org/latest/vector-search/optimizing-storage/faiss-product-quantization/"},
}  # fmt: skip
AZURE_SOURCES = [
    {"title": "Azure AI Search: Vector index size and staying under limits",
     "url": "https://learn.microsoft.com/azure/search/vector-search-index-size"},
    {"title": "Azure AI Search: Service limits, Vector index size limits",
     "url": "https://learn.microsoft.com/azure/search/search-limits-quotas-capacity#vector-index-size-limits"},
    {"title": "Azure AI Search: Service limits, Partition storage (GB), partitions, replicas, search units, "
              "index limits (dimensions per vector field) and document limits",
     "url": "https://learn.microsoft.com/azure/search/search-limits-quotas-capacity#partition-storage-gb"},
]  # fmt: skip
VERTEX_SOURCES = [
    {"title": "Vertex AI Vector Search: Manage indexes, Index size (shard sizes and machine types)",
     "url": "https://cloud.google.com/vertex-ai/docs/vector-search/create-manage-index"},
]  # fmt: skip

OPENSEARCH_BITS = (1, 2, 4)  # Faiss binary quantization of float vectors (HNSW only)
OPENSEARCH_SQ_BITS = {"faiss": (1, 2, 4, 16), "lucene": (7,)}  # the encoder's `bits`; Lucene's sq is 7-bit
OPENSEARCH_ENGINES = ("faiss", "lucene", "nmslib")
OPENSEARCH_METHODS = ("hnsw", "ivf")
# bytes per dimension of each knn_vector data_type: float, byte, binary (one bit, dimension a multiple of 8)
OPENSEARCH_DTYPES = {"float32": Fraction(4), "int8": Fraction(1), "binary": Fraction(1, 8)}
OPENSEARCH_MAX_DIM = 16_000  # a knn_vector's dimension, "[1, 16,000]" (k-NN vector; "Engine recommendations" too)
OPENSEARCH_NLIST = 4  # the IVF method's default nlist
OPENSEARCH_SEGMENTS = 300  # PQ: "a recommended default value is 300" segments
OPENSEARCH_PQ_MAX_M = 1024
LUCENE_MAX_VECTORS = 10_000_000  # "Number of vectors: less than 10 million" for Lucene/HNSW
CIRCUIT_BREAKER = Fraction(1, 2)
OPENSEARCH_OVERHEAD = Fraction(11, 10)

# Vector quota per partition in GB (the service statistics API reports 1 GB as 1,073,741,824 bytes),
# for services created after May 17, 2024, and the most partitions of each tier.
AZURE_QUOTA_GB = {"basic": 5, "s1": 35, "s2": 150, "s3": 300, "s3hd": 300, "l1": 150, "l2": 300}
AZURE_MAX_PARTITIONS = {"basic": 3, "s1": 12, "s2": 12, "s3": 12, "s3hd": 3, "l1": 12, "l2": 12}
# Partition storage in GB for services created after May 17, 2024 (the same after February 10, 2025);
# the statistics API reports the storage quota in the same GB of 2^30 bytes as the vector quota.
AZURE_STORAGE_GB = {"basic": 15, "s1": 160, "s2": 512, "s3": 1024, "s3hd": 1024, "l1": 2048, "l2": 4096}
AZURE_MAX_REPLICAS = {"basic": 3, "s1": 12, "s2": 12, "s3": 12, "s3hd": 12, "l1": 12, "l2": 12}
AZURE_MAX_SEARCH_UNITS = 36  # replicas x partitions, Standard and Storage Optimized tiers
AZURE_MAX_DIMENSIONS = 4096  # per vector field, every tier
AZURE_MAX_DOCUMENTS = {"basic": 24 * 10**9, "s1": 24 * 10**9, "s2": 24 * 10**9, "s3": 24 * 10**9,
                       "s3hd": 2 * 10**9, "l1": 288 * 10**9, "l2": 576 * 10**9}  # fmt: skip
AZURE_DISK_FACTOR = 3  # "the disk consumption for vector data is roughly three times" the in-memory size
AZURE_BYTES = {"float32": 4, "float16": 2, "int16": 2, "int8": 1}  # Edm.Single, Edm.Half, Edm.Int16, Edm.SByte
# HNSW overhead observed by the vendor at m = 4 (its default), by dimension
AZURE_HNSW_OVERHEAD = {96: Fraction(20, 100), 200: Fraction(8, 100), 768: Fraction(2, 100),
                       1536: Fraction(1, 100), 3072: Fraction(5, 1000)}  # fmt: skip
AZURE_DELETED_RATIO = Fraction(10, 100)

VERTEX_SHARDS_GIB = {"small": 2, "medium": 20, "large": 50}
# the vendor's table "the shard sizes that each machine type supports", in its order
VERTEX_MACHINES = {
    "n1-standard-16": ("small", "medium"),
    "n1-standard-32": ("small", "medium", "large"),
    "e2-standard-2": ("small",),
    "e2-standard-16": ("small", "medium"),
    "e2-highmem-16": ("small", "medium", "large"),
    "n2d-standard-32": ("small", "medium", "large"),
}
VERTEX_DEFAULT_MACHINE = {"small": "e2-standard-2", "medium": "e2-standard-16", "large": "e2-highmem-16"}


def vertex_machines(shard_size: str) -> list[str]:
    """The machine types the vendor's table allows for ``shard_size`` shards, in the table's order."""
    return [machine for machine, sizes in VERTEX_MACHINES.items() if shard_size in sizes]


@dataclass
class _OpenSearchLayout:
    """One documented OpenSearch memory formula: bytes per vector, bytes per copy fixed, and its text."""

    per_vector: Fraction
    fixed: Fraction
    formula: str
    source: str | None  # a key of OPENSEARCH_VARIANT_SOURCES (None: the HNSW float32 pages)
    notes: list[str]


def _opensearch_layout(
    d: int, m: int, method: str, knn_engine: str, dtype: str, bits: int | None, nlist: int, pq_m: int | None,
    nbits: int, segments: int,
) -> _OpenSearchLayout:  # fmt: skip
    """The documented formula for this method, engine and encoding (each refused where the docs do not give one)."""
    k = OPENSEARCH_OVERHEAD
    if pq_m is not None:  # Faiss product quantization, HNSW or IVF
        return _opensearch_pq_layout(d, m, method, knn_engine, dtype, bits, nlist, pq_m, nbits, segments)
    if bits is not None:  # an encoder of float vectors
        value, text, source, note = _opensearch_quantized(method, knn_engine, dtype, bits)
    else:
        value, text, source, note = _opensearch_encoded(d, knn_engine, dtype)
    notes = [note] if note else []
    if method == "hnsw":
        return _OpenSearchLayout(k * (value * d + 8 * m), Fraction(0), f"1.1*({text} + 8*m) bytes/vector",
                                 source, notes)  # fmt: skip
    centroids = Fraction(nlist * d, 8) if dtype == "binary" else Fraction(4 * nlist * d)
    term = "nlist*d/8" if dtype == "binary" else "4*nlist*d"
    notes.append(f"IVF: nlist {nlist} centroids, counted once per copy")
    product = text if text == "d" else f"({text})"
    formula = f"1.1*({product}*n + {term}) bytes"
    return _OpenSearchLayout(k * value * d, k * centroids, formula, source or "ivf", notes)


def _opensearch_pq_layout(
    d: int, m: int, method: str, knn_engine: str, dtype: str, bits: int | None, nlist: int, pq_m: int,
    nbits: int, segments: int,
) -> _OpenSearchLayout:  # fmt: skip
    """Faiss product quantization, HNSW or IVF: codes per vector, a code book (and centroids) per segment."""
    k = OPENSEARCH_OVERHEAD
    if knn_engine != "faiss" or dtype != "float32" or bits is not None:
        raise ParameterError("pq_m", "is Faiss product quantization of float32 vectors: not with the lucene or "
                                     "nmslib engine, a dtype other than float32, or bits")  # fmt: skip
    if d % pq_m:
        raise ParameterError("pq_m", f"must divide the dimension ({d}), got {pq_m}")
    if method == "hnsw" and nbits != 8:
        raise ParameterError("nbits", f"must be 8 with the hnsw method (PQ code_size), got {nbits}")
    code = Fraction(nbits, 8) * pq_m + 24
    book = segments * 2**nbits * 4 * d
    if method == "hnsw":
        return _OpenSearchLayout(k * (code + 8 * m), k * book,
                                 "1.1*(((code_size/8)*pq_m + 24 + 8*m)*n + segments*(2^code_size*4*d)) bytes",
                                 "pq", [f"PQ: pq_m {pq_m} sub-vectors of code_size {nbits} bits, a code book of "
                                        f"2^{nbits} x 4d bytes in each of {segments} segments"])  # fmt: skip
    note = (f"IVF-PQ: pq_m {pq_m} sub-vectors of code_size {nbits} bits, nlist {nlist}; the code book and "
            f"centroids count once in each of {segments} segments")  # fmt: skip
    return _OpenSearchLayout(k * code, k * (book + segments * 4 * nlist * d),
                             "1.1*(((code_size/8)*pq_m + 24)*n + segments*(2^code_size*4*d + 4*nlist*d)) bytes",
                             "pq", [note])  # fmt: skip


def _opensearch_quantized(method: str, knn_engine: str, dtype: str, bits: int) -> tuple[Fraction, str, str | None, str]:
    """An encoder of float vectors at ``bits``: bytes per dimension, its formula term, source and note."""
    if dtype != "float32":
        raise ParameterError("bits", f"is for float32 vectors (an encoder of a float field), not {dtype}")
    if bits not in OPENSEARCH_SQ_BITS.get(knn_engine, ()):
        takes = {"faiss": "1, 2, 4 or 16 with the faiss engine (7 with lucene)",
                 "lucene": "7 with the lucene engine (its scalar quantizer; 1, 2, 4 or 16 with faiss)",
                 "nmslib": "unset with the nmslib engine (it has no quantizer)"}[knn_engine]  # fmt: skip
        raise ParameterError("bits", f"must be {takes}, got {bits!r}")
    if method == "ivf" and bits != 16:
        raise ParameterError("bits", f"must be 16 with the ivf method (1, 2 and 4 bits are HNSW only), got {bits}")
    value = Fraction(bits, 8) if knn_engine == "faiss" else Fraction(1)
    if knn_engine == "lucene":
        note = ("Lucene scalar quantization to 7 bits (one byte per dimension): 4x compression of the vectors; "
                "the raw float vectors stay on disk beside them")  # fmt: skip
    elif bits == 16:
        note = "Faiss 16-bit scalar quantization (fp16 or bf16): 2x compression of the vectors"
    else:
        note = (f"binary quantization at {bits} bit(s): {32 // bits}x compression of the vectors; "
                "the graph's 8*m bytes per vector stay")  # fmt: skip
    source = "lucene" if knn_engine == "lucene" else (None if bits in OPENSEARCH_BITS else "sq")
    text = "d" if knn_engine == "lucene" else f"d*{bits}/8"
    return value, text, source, note


def _opensearch_encoded(d: int, knn_engine: str, dtype: str) -> tuple[Fraction, str, str | None, str]:
    """Vectors stored as ``dtype``, no encoder: bytes per dimension, its formula term, source and note."""
    if dtype != "float32" and knn_engine == "nmslib":
        raise ParameterError("dtype", f"must be float32 with the nmslib engine, got {dtype!r}")
    if dtype == "binary" and knn_engine != "faiss":
        raise ParameterError("dtype", f"binary is for the faiss engine only, not {knn_engine}")
    if dtype == "binary" and d % 8:
        raise ParameterError("dim", f"must be a multiple of 8 for binary vectors, got {d}")
    value = OPENSEARCH_DTYPES[dtype]
    text = {"float32": "4*d", "int8": "d", "binary": "d/8"}[dtype]
    source = None if dtype == "float32" else "memory_optimized"
    note = {"float32": "", "int8": "byte vectors: one signed byte per dimension, quantized before ingestion",
            "binary": "binary vectors: one bit per dimension (hamming space)"}[dtype]  # fmt: skip
    return value, text, source, note


def opensearch(  # noqa: PLR0913 - one keyword per documented OpenSearch setting (the CLI's options)
    count: int, dim: int, m: int = 16, replicas: int = 1, bits: int | None = None, node_memory_gib: float = 64,
    heap_gib: float | None = None, nodes: int = 1, method: str = "hnsw", knn_engine: str = "faiss",
    dtype: str = "float32", nlist: int | None = None, pq_m: int | None = None, nbits: int | None = None,
    segments: int | None = None,
) -> PlatformCapacity:  # fmt: skip
    """OpenSearch k-NN: native memory for ``count`` vectors and ``replicas`` copies more, against
    the circuit breaker of ``nodes`` data nodes of ``node_memory_gib`` with a JVM heap of ``heap_gib``
    (default half the node's memory, at most 32 GiB). ``method`` hnsw or ivf (``nlist``, default 4);
    ``knn_engine`` faiss, lucene or nmslib; ``dtype`` float32, int8 (byte) or binary; ``bits`` Faiss's
    1, 2, 4 or 16-bit quantization or Lucene's 7-bit one; ``pq_m`` Faiss product quantization with
    ``nbits`` code size (default 8) and ``segments`` segments (default 300, the docs' recommendation)."""
    n, d = checked_size(count, dim)
    m = whole_number(m, "m", minimum=2, maximum=100)
    replicas = whole_number(replicas, "replicas", minimum=0, maximum=100)
    nodes = whole_number(nodes, "nodes", minimum=1, maximum=10_000)
    method = choice_option(method, "method", OPENSEARCH_METHODS)
    knn_engine = choice_option(knn_engine, "knn_engine", OPENSEARCH_ENGINES)
    dtype = _opensearch_dtype(dtype, bits)
    if method == "ivf" and knn_engine != "faiss":
        raise ParameterError("method", f"ivf is for the faiss engine only, not {knn_engine}")
    nlist, pq_m, nbits, segments = _opensearch_codes(method, nlist, pq_m, nbits, segments)
    if d > OPENSEARCH_MAX_DIM:
        raise ParameterError("dim", f"must be at most {OPENSEARCH_MAX_DIM:,} on OpenSearch (a knn_vector field's "
                                    f"dimension, every engine), got {d:,}")  # fmt: skip
    memory = real_option(node_memory_gib, "node_memory_gib", 1, 1_000_000, unit=" GiB")
    heap = min(memory / 2, Fraction(32)) if heap_gib is None else real_option(
        heap_gib, "heap_gib", 0, memory, low_open=True, high_open=True, unit=" GiB",
        why=" (the node's memory, `node_memory_gib`)")  # fmt: skip
    layout = _opensearch_layout(d, m, method, knn_engine, dtype, bits, nlist, pq_m, nbits, segments)
    per_vector = layout.per_vector
    copies = replicas + 1
    budget = nodes * (memory - heap) * GIB * CIRCUIT_BREAKER
    plain = method == "hnsw" and pq_m is None and dtype == "float32" and (bits is None or bits in OPENSEARCH_BITS)
    if plain and knn_engine != "lucene":  # the formulas and text as they were first written
        formula = ("1.1*(4*d + 8*m)" if bits is None else f"1.1*(d*{bits}/8 + 8*m)") + " bytes/vector x (replicas + 1)"
    else:
        formula = f"{layout.formula} x (replicas + 1)"
    fits = max(0, math.floor((budget / copies - layout.fixed) / per_vector))
    notes = _opensearch_notes(n, copies, knn_engine, dtype, bits, layout)
    sources = list(OPENSEARCH_SOURCES)
    if layout.source is not None:
        sources.append(OPENSEARCH_VARIANT_SOURCES[layout.source])
    if method == "ivf" and layout.source != "ivf":
        sources.append(OPENSEARCH_VARIANT_SOURCES["ivf"])
    budget_formula = f"nodes {nodes} x (memory {float(memory):g} GiB - heap {float(heap):g} GiB) x breaker 50%"
    return PlatformCapacity(
        platform="opensearch", count=n, dim=d,
        params={"m": m, "replicas": replicas, "bits": bits, "node_memory_gib": float(memory),
                "heap_gib": float(heap), "nodes": nodes, "circuit_breaker": float(CIRCUIT_BREAKER),
                "method": method, "knn_engine": knn_engine, "dtype": dtype,
                "nlist": nlist if method == "ivf" else None, "pq_m": pq_m,
                "nbits": nbits if pq_m is not None else None, "segments": segments if pq_m is not None else None},
        bytes_per_vector=float(per_vector), bytes=math.ceil((per_vector * n + layout.fixed) * copies),
        formula=formula, budget_bytes=math.floor(budget), budget_formula=budget_formula,
        fits=fits, fits_count=n <= fits, sources=sources, notes=notes, fixed_bytes=math.ceil(layout.fixed),
        limits=[{"limit": "k-NN circuit breaker (native memory)", "budget_bytes": math.floor(budget), "fits": fits}],
    )  # fmt: skip


def _opensearch_dtype(dtype: str, bits: int | None) -> str:
    """``dtype`` checked (float16 is an encoder on OpenSearch, not a stored type) and ``bits`` a whole number."""
    if str(dtype).lower() == "float16":
        raise ParameterError("dtype", "must be float32, int8 or binary on OpenSearch, got 'float16': 16-bit floats "
                                      "are Faiss scalar quantization of float32 vectors (16 bits)")  # fmt: skip
    dtype = choice_option(dtype, "dtype", OPENSEARCH_DTYPES)
    if bits is not None and (isinstance(bits, bool) or not isinstance(bits, int)):
        raise ParameterError("bits", f"must be a whole number of bits, got {bits!r}")
    return dtype


def _opensearch_codes(
    method: str, nlist: int | None, pq_m: int | None, nbits: int | None, segments: int | None
) -> tuple[int, int | None, int, int]:
    """IVF's ``nlist`` and product quantization's ``pq_m``, ``nbits`` and ``segments``, checked, with defaults."""
    if nlist is not None and method != "ivf":
        raise ParameterError("nlist", "is for the ivf method")
    nlist = OPENSEARCH_NLIST if nlist is None else whole_number(nlist, "nlist", minimum=1)
    if pq_m is not None:
        pq_m = whole_number(pq_m, "pq_m", minimum=1, maximum=OPENSEARCH_PQ_MAX_M)
    for name, value in (("nbits", nbits), ("segments", segments)):
        if value is not None and pq_m is None:
            raise ParameterError(name, "is for product quantization (pq_m)")
    nbits = 8 if nbits is None else whole_number(nbits, "nbits", minimum=1, maximum=8)
    segments = OPENSEARCH_SEGMENTS if segments is None else whole_number(segments, "segments", minimum=1)
    return nlist, pq_m, nbits, segments


def _opensearch_notes(
    n: int, copies: int, knn_engine: str, dtype: str, bits: int | None, layout: _OpenSearchLayout
) -> list[str]:
    """What the replicas and the circuit breaker mean here, the layout's notes, and the engine's caveats."""
    notes = [
        f"every replica holds all vectors again: {copies} cop{'y' if copies == 1 else 'ies'} of the graph",
        "the graphs live off the JVM heap; past the circuit breaker k-NN evicts the least recently used graphs",
        *layout.notes,
    ]
    if knn_engine == "lucene" and dtype == "float32" and bits is None:
        notes.append("the docs give no Lucene formula for float32 vectors without a quantizer: this is the general "
                     "HNSW formula of the k-NN docs")  # fmt: skip
    if knn_engine == "lucene":
        notes.append(
            "the docs size native-library indexes (faiss, nmslib) against the circuit breaker; "
            "a Lucene graph is not one, so that budget is a comparison, not a documented Lucene limit"
        )
        if n >= LUCENE_MAX_VECTORS:
            notes.append(f"the docs recommend Lucene/HNSW for less than {LUCENE_MAX_VECTORS:,} vectors; faiss for more")
    if knn_engine == "nmslib":
        notes.append("nmslib is deprecated in favor of the faiss and lucene engines")
    return notes


def azure_overhead(dim: int) -> Fraction:
    """The vendor's observed HNSW overhead (m = 4) for the tabulated dimension nearest ``dim`` (by ratio)."""
    nearest = min(AZURE_HNSW_OVERHEAD, key=lambda t: abs(math.log(dim / t)))
    return AZURE_HNSW_OVERHEAD[nearest]


def azure(
    count: int, dim: int, tier: str = "s1", partitions: int = 1, dtype: str = "float32",
    overhead: float | None = None, deleted_ratio: float | None = None, replicas: int = 1,
) -> PlatformCapacity:  # fmt: skip
    """Azure AI Search: the vector index size of ``count`` vectors against the vector quota of
    ``partitions`` partitions of ``tier`` (services created after May 17, 2024), and the other
    documented limits: the partitions' storage (the vectors take about 3x on disk), the documents
    per index, the dimensions per vector field and the search units (``replicas`` x ``partitions``)."""
    n, d = checked_size(count, dim)
    tier = str(tier).lower().replace(" ", "")
    if tier not in AZURE_QUOTA_GB:
        raise ParameterError("tier", f"must be one of {', '.join(AZURE_QUOTA_GB)}, got {tier!r}")
    partitions = whole_number(partitions, "partitions", minimum=1, maximum=AZURE_MAX_PARTITIONS[tier])
    replicas = whole_number(replicas, "replicas", minimum=1, maximum=AZURE_MAX_REPLICAS[tier])
    if tier != "basic" and partitions * replicas > AZURE_MAX_SEARCH_UNITS:
        raise ParameterError("replicas", f"x partitions is at most {AZURE_MAX_SEARCH_UNITS} search units on {tier}, "
                                         f"got {replicas} x {partitions} = {replicas * partitions}")  # fmt: skip
    if d > AZURE_MAX_DIMENSIONS:
        raise ParameterError("dim", f"must be at most {AZURE_MAX_DIMENSIONS:,} on Azure AI Search (dimensions per "
                                    f"vector field), got {d:,}")  # fmt: skip
    if not isinstance(dtype, str) or dtype not in AZURE_BYTES:
        raise ParameterError("dtype", f"Azure AI Search stores float32, float16, int16 or int8 vectors, got {dtype!r}")
    hnsw = azure_overhead(d) if overhead is None else real_option(overhead, "overhead", 0, 1)
    # the share of the index's documents deleted but not yet merged away: below 1 while any document lives
    deleted = AZURE_DELETED_RATIO if deleted_ratio is None else real_option(deleted_ratio, "deleted_ratio", 0, 1,
                                                                      high_open=True)  # fmt: skip
    raw = Fraction(d * AZURE_BYTES[dtype])
    per_vector = raw * (1 + hnsw) * (1 + deleted)
    budget = AZURE_QUOTA_GB[tier] * partitions * GIB
    storage = AZURE_STORAGE_GB[tier] * partitions * GIB
    by_quota = math.floor(budget / per_vector)
    by_storage = math.floor(storage / (AZURE_DISK_FACTOR * per_vector))
    by_documents = AZURE_MAX_DOCUMENTS[tier]
    fits = min(by_quota, by_storage, by_documents)
    notes = _azure_notes(n, d, tier, partitions, replicas, per_vector, None if overhead is not None else hnsw)
    limits = [
        {"limit": "vector index quota (memory)", "budget_bytes": budget, "fits": by_quota},
        {"limit": "partition storage (disk, vectors ~3x their memory size)", "budget_bytes": storage,
         "fits": by_storage},
        {"limit": "documents per index", "budget_bytes": None, "fits": by_documents},
    ]  # fmt: skip
    return PlatformCapacity(
        platform="azure", count=n, dim=d,
        params={"tier": tier, "partitions": partitions, "dtype": dtype, "overhead": float(hnsw),
                "deleted_ratio": float(deleted), "quota_gb_per_partition": AZURE_QUOTA_GB[tier],
                "replicas": replicas, "search_units": replicas * partitions,
                "storage_gb_per_partition": AZURE_STORAGE_GB[tier], "max_dimensions": AZURE_MAX_DIMENSIONS,
                "max_documents": by_documents, "disk_bytes": math.ceil(AZURE_DISK_FACTOR * per_vector * n)},
        bytes_per_vector=float(per_vector), bytes=math.ceil(per_vector * n),
        formula=f"n*d*{AZURE_BYTES[dtype]} x (1 + HNSW overhead) x (1 + deleted ratio)",
        budget_bytes=budget,
        budget_formula=f"{AZURE_QUOTA_GB[tier]} GB vector quota per {tier} partition x {partitions} partition(s)",
        fits=fits, fits_count=n <= fits, sources=AZURE_SOURCES, notes=notes, limits=limits,
    )  # fmt: skip


def _azure_notes(
    n: int, d: int, tier: str, partitions: int, replicas: int, per_vector: Fraction, vendor_overhead: Fraction | None
) -> list[str]:
    """The quota's hardness, the size on disk, the overhead's source, storage, and what replicas cost."""
    notes = [
        "the quota is a hard limit: past it, indexing requests fail until documents are deleted or partitions added",
        f"on disk a vector index takes about three times its memory size (~{3 * float(per_vector) * n / GIB:,.2f} GiB)",
    ]
    if vendor_overhead is not None:
        notes.append(
            f"HNSW overhead {float(vendor_overhead):.1%}: the vendor's figure for the dimension nearest {d} at m = 4"
        )
    notes.append(f"storage ({AZURE_STORAGE_GB[tier]:,} GB per {tier} partition) holds every index's content too: "
                 "the vectors' share of it is an upper bound")  # fmt: skip
    if replicas > 1:
        notes.append(f"{replicas} replicas copy the index for queries; the vector quota is per partition, not per "
                     f"replica ({replicas * partitions} search units billed)")  # fmt: skip
    return notes


def vertex(count: int, dim: int, shard_size: str = "medium", machine: str | None = None) -> PlatformCapacity:
    """Vertex AI Vector Search: shards of ``shard_size`` for ``count`` float32 vectors (raw data only),
    each served by ``machine`` (one the vendor's table allows for that shard size; default its default)."""
    n, d = checked_size(count, dim)
    shard_size = str(shard_size).lower().removeprefix("shard_size_")
    if shard_size not in VERTEX_SHARDS_GIB:
        raise ParameterError("shard_size", f"must be small, medium or large, got {shard_size!r}")
    allowed = vertex_machines(shard_size)
    if machine is None:
        machine = VERTEX_DEFAULT_MACHINE[shard_size]
    elif str(machine).lower() not in allowed:
        raise ParameterError("machine", f"for {shard_size} shards must be one of {', '.join(allowed)}, got {machine!r}")
    machine = str(machine).lower()
    shard = VERTEX_SHARDS_GIB[shard_size] * GIB
    per_vector = 4 * d
    per_shard = shard // per_vector
    if per_shard == 0:
        raise ParameterError("dim", f"one vector of {d:,} float32 dimensions is larger than a {shard_size} shard")
    shards = -(-n // per_shard)  # whole numbers: n / per_shard rounds through a float past 2**53
    default = VERTEX_DEFAULT_MACHINE[shard_size]
    return PlatformCapacity(
        platform="vertex", count=n, dim=d,
        params={"shard_size": shard_size, "shard_gib": VERTEX_SHARDS_GIB[shard_size], "shards": shards,
                "machine_type": machine, "machine_types_allowed": allowed},
        bytes_per_vector=float(per_vector), bytes=n * per_vector,
        formula="n*d*4 (float32, raw: no documented overhead)",
        budget_bytes=shard, budget_formula=f"one {shard_size} shard: {VERTEX_SHARDS_GIB[shard_size]} GiB",
        fits=per_shard, fits_count=n <= per_shard, sources=VERTEX_SOURCES,
        notes=[f"{n:,} vectors need {shards:,} {shard_size} shard(s), each served by its own machine "
               f"({machine}{' by default' if machine == default else ''} for {shard_size} shards)",
               f"{shard_size} shards can be served by {', '.join(allowed)} (the vendor's table; default {default})",
               "the shard size is fixed when the index is created and decides which machine types can serve it",
               "the vendor documents no per-vector overhead: vectors per shard is an upper bound"],
        limits=[{"limit": f"one {shard_size} shard", "budget_bytes": shard, "fits": per_shard}],
    )  # fmt: skip


def platform_capacity(platform: str, count: int, dim: int, **params: Any) -> PlatformCapacity:
    """Dispatch to :func:`opensearch`, :func:`azure` or :func:`vertex` (``params``: theirs, None for default)."""
    functions = {"opensearch": opensearch, "azure": azure, "vertex": vertex}
    if platform not in functions:
        raise ParameterError("engine", f"must be one of {', '.join(PLATFORMS)}, got {platform!r}")
    return functions[platform](count, dim, **{k: v for k, v in params.items() if v is not None})
