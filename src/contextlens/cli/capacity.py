"""`contextlens capacity`: memory and disk for N vectors in a FAISS index, in PostgreSQL with pgvector, or
(documented formulas, not measured) on OpenSearch k-NN, Azure AI Search and Vertex AI Vector Search."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.cli.common import JsonOpt, console, print_json
from contextlens.cli.index import DsnOpt, IndexTypeOpt, NlistOpt, PqMOpt
from contextlens.cli.registry import app
from contextlens.errors import InputError

if TYPE_CHECKING:  # numpy comes with it: `--help` must not pay for it
    from contextlens.analyses.search.distinct_vectors import DataCount

PLATFORMS = ("opensearch", "azure", "vertex")  # analyses.search.platforms.PLATFORMS (kept torch-free here)
MAX_MEASURE = 100_000  # --max-measure's default (analyses.search.pg_capacity.MAX_MEASURE; measure()'s own)
CapacityEngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        help="faiss, pgvector (built and measured), or opensearch, azure, vertex (their documented formulas).",
    ),
]


CountOpt = Annotated[int | None, typer.Option("--count", "-n", help="Number of vectors (or --data's).")]
DimOpt = Annotated[int | None, typer.Option("--dim", "-d", help="Dimensions per vector (or a .npy --data's).")]
DataOpt = Annotated[
    Path | None,
    typer.Option(
        "--data",
        help="The data: a .npy array (n, d) of the vectors, or documents (any file `index build` reads); "
        "pgvector's HNSW counts its distinct vectors (identical ones fold into one element).",
    ),
]
DtypeOpt = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        help="float32, float16, int8 or binary (default: the index's own); opensearch: float32, int8, binary; "
        "azure: float32, float16, int16, int8.",
    ),
]
MOpt = Annotated[int | None, typer.Option("--m", help="HNSW: neighbors per node (default 32; pgvector 16).")]
NbitsOpt = Annotated[
    int | None, typer.Option("--nbits", help="IVF-PQ: bits per sub-code (default 8); opensearch: PQ code_size.")
]
MeasureOpt = Annotated[bool, typer.Option("--measure", help="Also build the real FAISS index and measure it.")]
MaxMeasureOpt = Annotated[
    int | None,
    typer.Option(
        help="--measure: build on at most this many vectors (default 100,000); above it faiss "
        "extrapolates two samples, pgvector refuses (its pages hold whole vectors)."
    ),
]
ListsOpt = Annotated[int | None, typer.Option(help="pgvector IVFFlat: inverted lists (default 100).")]
ReplicasOpt = Annotated[
    int | None, typer.Option(help="opensearch: replicas of each shard; azure: replicas (default 1).")
]
BitsOpt = Annotated[
    int | None,
    typer.Option(help="opensearch: Faiss quantization at 1, 2, 4 or 16 bits, Lucene's at 7 (default: none)."),
]
MethodOpt = Annotated[str | None, typer.Option(help="opensearch: hnsw or ivf (default hnsw).")]
KnnEngineOpt = Annotated[
    str | None, typer.Option(help="opensearch: the k-NN engine, faiss, lucene or nmslib (default faiss).")
]
SegmentsOpt = Annotated[
    int | None, typer.Option(help="opensearch PQ (--pq-m): segments, each with its code book (default 300).")
]
NodeMemoryGibOpt = Annotated[
    float | None, typer.Option(help="opensearch: memory of each data node in GiB (default 64).")
]
HeapGibOpt = Annotated[
    float | None, typer.Option(help="opensearch: JVM heap per node in GiB (default half the memory, at most 32).")
]
NodesOpt = Annotated[int | None, typer.Option(help="opensearch: data nodes (default 1).")]
TierOpt = Annotated[str | None, typer.Option(help="azure: basic, s1, s2, s3, s3hd, l1 or l2 (default s1).")]
PartitionsOpt = Annotated[int | None, typer.Option(help="azure: partitions (default 1).")]
OverheadOpt = Annotated[
    float | None, typer.Option(help="azure: HNSW overhead, 0.01-0.20 (default: the vendor's figure for d).")
]
DeletedRatioOpt = Annotated[float | None, typer.Option(help="azure: deleted-documents ratio (default 0.10).")]
ShardSizeOpt = Annotated[
    str | None,
    typer.Option(help="vertex: small (2 GiB), medium (20 GiB) or large (50 GiB) shards (default medium)."),
]
MachineOpt = Annotated[
    str | None, typer.Option(help="vertex: the machine type serving each shard (default: the shard size's).")
]


@app.command("capacity")
def capacity_cmd(  # noqa: PLR0913 - a command: one parameter per option
    count: CountOpt = None,
    dim: DimOpt = None,
    data: DataOpt = None,
    dtype: DtypeOpt = None,
    index: IndexTypeOpt = "flat",
    m: MOpt = None,
    nlist: NlistOpt = None,
    pq_m: PqMOpt = None,
    nbits: NbitsOpt = None,
    measure: MeasureOpt = False,
    max_measure: MaxMeasureOpt = None,
    engine: CapacityEngineOpt = "faiss",
    dsn: DsnOpt = None,
    lists: ListsOpt = None,
    replicas: ReplicasOpt = None,
    bits: BitsOpt = None,
    method: MethodOpt = None,
    knn_engine: KnnEngineOpt = None,
    segments: SegmentsOpt = None,
    node_memory_gib: NodeMemoryGibOpt = None,
    heap_gib: HeapGibOpt = None,
    nodes: NodesOpt = None,
    tier: TierOpt = None,
    partitions: PartitionsOpt = None,
    overhead: OverheadOpt = None,
    deleted_ratio: DeletedRatioOpt = None,
    shard_size: ShardSizeOpt = None,
    machine: MachineOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Memory and disk for N vectors in FAISS or pgvector (formula; --measure builds it), or how many fit on
    OpenSearch, Azure AI Search or Vertex AI (their documented formulas, not measured)."""
    from contextlens.analyses.search.pg_index import check_engine

    given_platform = {"replicas": replicas, "bits": bits, "node_memory_gib": node_memory_gib, "heap_gib": heap_gib,
                      "nodes": nodes, "tier": tier, "partitions": partitions, "overhead": overhead,
                      "deleted_ratio": deleted_ratio, "shard_size": shard_size, "method": method,
                      "knn_engine": knn_engine, "segments": segments, "machine": machine}  # fmt: skip
    if engine not in ("faiss", "pgvector", *PLATFORMS):
        raise InputError(f"--engine must be one of faiss, pgvector, {', '.join(PLATFORMS)}, got {engine!r}")
    count, dim, counted = _shape(data, dtype, count, dim)
    if max_measure is not None and not measure:
        raise InputError("--max-measure is for --measure: the formula builds nothing")
    if engine in PLATFORMS:
        given_platform |= {"nlist": nlist, "pq_m": pq_m, "nbits": nbits}
        _platform_capacity(engine, count, dim, dtype, m, measure, given_platform, json_out)
        return
    extra = [f"--{k.replace('_', '-')}" for k, v in given_platform.items() if v is not None]
    if extra:
        raise InputError(f"{', '.join(extra)} {'is' if len(extra) == 1 else 'are'} for --engine opensearch, azure "
                         "or vertex")  # fmt: skip
    if check_engine(engine) == "pgvector":
        _pgvector_capacity(count, dim, dtype, index, m, lists, measure, dsn, json_out, max_measure, counted)
        return
    if dsn is not None or lists is not None:
        raise InputError("--dsn and --lists are for --engine pgvector")
    given = {"m": 32 if m is None else m, "nlist": nlist, "pq_m": pq_m, "nbits": 8 if nbits is None else nbits}
    result = _faiss_capacity(index, given, dtype, count, dim, measure, max_measure, quiet=json_out)
    print_json(result.to_dict()) if json_out else _print_faiss_capacity(result)


def _faiss_capacity(index: str, given: dict, dtype, count: int, dim: int, measure: bool, max_measure, *, quiet: bool):
    """The FAISS index's bytes by formula, or also built and measured (--measure)."""
    from contextlens.analyses.search.capacity import estimate
    from contextlens.analyses.search.capacity import measure as measure_size
    from contextlens.analyses.search.index_config import DEFAULT_PARAMS, IndexConfig

    if index not in DEFAULT_PARAMS:
        raise InputError(f"unknown --index {index!r}; use one of {', '.join(DEFAULT_PARAMS)}")
    config = IndexConfig(index, {k: v for k, v in given.items() if k in DEFAULT_PARAMS[index]}, dtype)
    if not measure:
        return estimate(config, count, dim)
    with contextlib.nullcontext() if quiet else console.status("building the FAISS index to measure it..."):
        return measure_size(config, count, dim, max_measure=MAX_MEASURE if max_measure is None else max_measure)


def _print_faiss_capacity(result) -> None:
    """The formula's parts, its total, and the measured size beside it when --measure built the index."""
    extra = ", ".join(f"{k}={v}" for k, v in result.params.items())
    console.print(
        f"[bold]{result.count:,}[/bold] vectors x {result.dim} dims, {result.dtype}, "
        f"[bold]{result.index}[/bold] index{f' ({extra})' if extra else ''}"
    )
    table = Table(show_header=True)
    table.add_column("part")
    table.add_column("bytes", justify="right")
    table.add_column("", justify="right")
    for part, size in result.parts.items():
        table.add_row(part, f"{size:,}", human_bytes(size))
    table.add_row("[bold]total (formula)[/bold]", f"[bold]{result.bytes:,}[/bold]", human_bytes(result.bytes))
    if result.measured_bytes is not None:
        err = f"{100 * result.relative_error:+.2f}%"
        table.add_row(
            "measured (faiss.serialize_index)", f"{result.measured_bytes:,}", human_bytes(result.measured_bytes)
        )
        table.add_row("formula vs measured", err, "")
    console.print(table)
    console.print(f"formula: {result.formula}")
    console.print("[dim]memory ~= disk: FAISS keeps the same arrays in RAM that it serializes[/dim]")
    if result.measured_on:
        console.print(f"[dim]measured: {result.measured_on} in {result.measure_seconds:.1f} s[/dim]")


def _shape(
    data: Path | None, dtype: str | None, count: int | None, dim: int | None
) -> tuple[int, int, DataCount | None]:
    """--count and --dim, given or read from --data (with --data's count of rows and distinct vectors)."""
    counted = None
    if data is not None:
        counted = _count_data(data, dtype or "float32")
        count, dim = _data_shape(counted, count, dim)
    if count is None or dim is None:
        raise InputError("give --count and --dim, or --data (a .npy array gives both; documents give --count)")
    return count, dim, counted


def _count_data(data: Path, dtype: str) -> DataCount:
    """--data's rows, distinct values and HNSW elements (a .npy array, or documents by their texts)."""
    from contextlens.analyses.search.distinct_vectors import count_array, count_texts

    if data.suffix.lower() == ".npy":
        return count_array(data, dtype)
    from contextlens.analyses.corpus.index_documents import index_documents

    return count_texts([d.text for d in index_documents(data)], str(data))


def _data_shape(counted: DataCount, count: int | None, dim: int | None) -> tuple[int, int | None]:
    """--count and --dim from --data; a given one that disagrees with the data is refused."""
    if count is not None and count != counted.rows:
        raise InputError(f"--count {count:,} but --data holds {counted.rows:,} rows; drop --count")
    if counted.dim is not None and dim is not None and dim != counted.dim:
        raise InputError(f"--dim {dim} but --data's vectors have {counted.dim} dimensions; drop --dim")
    if counted.dim is None and dim is None:
        raise InputError("--data of documents gives the count, not the width: give --dim (the encoder's)")
    return counted.rows, counted.dim or dim


def _pgvector_capacity(
    count: int, dim: int, dtype: str | None, index: str, m: int | None, lists: int | None, measure: bool,
    dsn: str | None, json_out: bool, max_measure: int | None = None, counted: DataCount | None = None,
) -> None:  # fmt: skip
    from contextlens.analyses.search.pg_capacity import pg_estimate, pg_measure
    from contextlens.analyses.search.pg_index import PgIndexConfig

    given = {"hnsw": {"m": m}, "ivfflat": {"lists": lists}}.get(index, {})
    params = {k: v for k, v in given.items() if v is not None}
    config = PgIndexConfig(index, params, dtype or "float32")
    if dsn is not None and not measure:
        raise InputError("--dsn is for --measure: the formula needs no server")
    if measure and counted is not None and counted.dim is None:
        raise InputError("--measure with --data builds the vectors themselves: give a .npy array, not documents")
    if measure:
        import numpy as np

        vectors = None if counted is None else np.load(counted.source, allow_pickle=False)
        with contextlib.nullcontext() if json_out else console.status("building the table and index in PostgreSQL..."):
            result = pg_measure(config, count, dim, dsn=dsn, vectors=vectors,
                                max_measure=MAX_MEASURE if max_measure is None else max_measure)  # fmt: skip
    else:
        result = pg_estimate(config, count, dim, None if counted is None else counted.elements)
    if json_out:
        print_json(result.to_dict() | ({"data": counted.to_dict()} if counted is not None else {}))
    else:
        _print_pg_capacity(result, config, dim, measure, counted)


def _print_pg_capacity(result, config, dim: int, measure: bool, counted: DataCount | None) -> None:
    """The predicted sizes beside the measured ones (--measure), the formulas, and how the page rule replayed."""
    if counted is not None:
        console.print(
            f"--data {escape(counted.source)}: {counted.rows:,} rows, {counted.distinct:,} distinct "
            f"({counted.compared}), {counted.elements:,} HNSW elements ({counted.folded:,} rows folded)"
        )
    extra = ", ".join(f"{k}={v}" for k, v in result.params.items())
    console.print(
        f"[bold]{result.count:,}[/bold] vectors x {result.dim} dims, {result.dtype} "
        f"({config.column(dim)}), pgvector [bold]{result.index}[/bold]{f' ({extra})' if extra else ''}"
    )
    measured = result.measured or {}
    console.print(_pg_table(result, measured, measure))
    console.print(f"index: {result.index_formula}" + ("" if result.exact else " [dim](an estimate)[/dim]"))
    if result.index_pages_range and not result.exact:
        low, high = result.index_pages_range
        console.print(
            f"index pages: {result.index_pages:,} expected, {low:,} to {high:,} for 95% of builds: pgvector draws "
            "each element's level at random while it builds, so no formula knows the count beforehand"
        )
    _print_replay(measured.get("replay"), result.index)
    if result.build_memory_formula:
        console.print(f"build memory: {result.build_memory_formula}")
    for note in result.notes:
        console.print(f"[dim]{note}[/dim]")
    if result.index == "ivfflat" and "build_below" in measured:
        below, above = measured["memory_probe_kb"]
        console.print(f"[dim]with maintenance_work_mem = {below:,} kB: {measured['build_below']}; "
                      f"with {above:,} kB: {measured['build_above']}[/dim]")  # fmt: skip
    if measured.get("memory_probe_notices"):
        console.print(f"[dim]with maintenance_work_mem = {measured['memory_probe_kb']:,} kB: "
                      f"{'; '.join(measured['memory_probe_notices'])}[/dim]")  # fmt: skip


def _pg_table(result, measured: dict, measure: bool) -> Table:
    """Each part's predicted bytes, and with --measure the bytes PostgreSQL reports and the function that did."""
    table = Table(show_header=True)
    table.add_column("part")
    table.add_column("predicted bytes", justify="right")
    table.add_column("", justify="right")
    if measure:
        table.add_column("measured bytes", justify="right")
        table.add_column("measured by")
    rows = [(f"index ({result.index_pages:,} pages)", result.index_bytes, measured.get("index_bytes"),
             "pg_relation_size(index)")]  # fmt: skip
    rows += [(f"table: {part}", size, None, "") for part, size in result.table.items()]
    rows.append(("table (heap + TOAST)", result.table_bytes, measured.get("table_bytes"), "pg_table_size"))
    total = result.table_bytes + result.index_bytes
    rows.append(("[bold]total[/bold]", total, measured.get("total_bytes"), "pg_total_relation_size"))
    if result.build_memory_bytes is not None:
        rows.append(("build memory (maintenance_work_mem)", result.build_memory_bytes,
                     measured.get("build_memory_bytes"),
                     "NOTICE point of a smaller budget" if result.index == "hnsw" else
                     "fails 1 kB under, builds at this"))  # fmt: skip
    for part, size, got, how in rows:
        cells = [part, f"{size:,}", human_bytes(size)]
        if measure:
            cells += [f"{got:,}" if got is not None else "", how if got is not None else ""]
        table.add_row(*cells)
    return table


def _print_replay(replay: dict | None, index: str) -> None:
    """The page rule replayed on the lists (IVFFlat) or levels (HNSW) the measured build drew."""
    if replay and "skipped" in replay:
        console.print(f"[dim]{replay['skipped']}[/dim]")
    elif replay and index == "ivfflat":
        where = "each list on the pages it predicts" if replay["same_lists"] else "[red]some lists elsewhere[/red]"
        console.print(
            f"the page rule on the lists this index's k-means made ({replay['lists']:,} lists of "
            f"{replay['shortest_list']:,} to {replay['longest_list']:,} entries; read back from its pages): "
            f"{replay['pages']:,} pages against {replay['measured_pages']:,} built, {where}"
        )
    elif replay:
        levels = ", ".join(f"{n:,} on level {level}" for level, n in enumerate(replay["levels"]))
        where = "every element on the block it predicts" if replay["same_blocks"] else "[red]some elsewhere[/red]"
        console.print(
            f"the page rule on the levels this index drew ({levels}; read back from its pages): "
            f"{replay['pages']:,} pages against {replay['measured_pages']:,} built, {where}"
        )


PLATFORM_PARAMS = {
    "opensearch": ("replicas", "bits", "node_memory_gib", "heap_gib", "nodes", "method", "knn_engine", "nlist",
                   "pq_m", "nbits", "segments"),
    "azure": ("tier", "partitions", "overhead", "deleted_ratio", "replicas"),
    "vertex": ("shard_size", "machine"),
}  # fmt: skip
PLATFORM_NAMES = {"opensearch": "OpenSearch k-NN", "azure": "Azure AI Search", "vertex": "Vertex AI Vector Search"}


def _platform_capacity(
    engine: str, count: int, dim: int, dtype: str | None, m: int | None, measure: bool, given: dict, json_out: bool
) -> None:
    from contextlens.analyses.search.platforms import platform_capacity

    if measure:
        raise InputError(f"--measure is for faiss and pgvector; {PLATFORM_NAMES[engine]} cannot run here, so its "
                         "figures are its vendor's documented formulas")  # fmt: skip
    wrong = [k for k, v in given.items() if v is not None and k not in PLATFORM_PARAMS[engine]]
    wrong += ["m"] * (m is not None and engine != "opensearch") + ["dtype"] * (dtype is not None and engine == "vertex")
    if wrong:
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in wrong)
        raise InputError(f"{flags} {'is' if len(wrong) == 1 else 'are'} not an option of --engine {engine}")
    params = {k: given[k] for k in PLATFORM_PARAMS[engine]}
    if engine == "opensearch":
        params["m"] = m
    if engine in ("azure", "opensearch"):
        params["dtype"] = dtype
    result = platform_capacity(engine, count, dim, **params)
    if json_out:
        print_json(result.to_dict())
    else:
        _print_platform_capacity(result, engine)


def _print_platform_capacity(result, engine: str) -> None:
    """Bytes per vector and in all against the budget, how many fit (or how many shards), the notes and sources."""
    shown = ", ".join(f"{k}={v}" for k, v in result.params.items() if v is not None and not isinstance(v, list))
    console.print(f"[bold]{result.count:,}[/bold] vectors x {result.dim} dims on [bold]{PLATFORM_NAMES[engine]}[/bold] "
                  f"({shown}) [yellow]{result.label}[/yellow]")  # fmt: skip
    table = Table(show_header=True)
    table.add_column("")
    table.add_column("bytes", justify="right")
    table.add_column("", justify="right")
    table.add_row("per vector (one copy)", f"{result.bytes_per_vector:,.1f}", human_bytes(result.bytes_per_vector))
    if result.fixed_bytes:
        table.add_row("fixed (one copy)", f"{result.fixed_bytes:,}", human_bytes(result.fixed_bytes))
    table.add_row(f"{result.count:,} vectors", f"{result.bytes:,}", human_bytes(result.bytes))
    table.add_row("budget", f"{result.budget_bytes:,}", human_bytes(result.budget_bytes))
    console.print(table)
    console.print(f"formula: {result.formula}")
    console.print(f"budget: {result.budget_formula}")
    if "shards" in result.params:  # Vertex AI: the index is split into as many shards as it needs
        shards, size = result.params["shards"], result.params["shard_size"]
        console.print(f"[bold]{result.fits:,}[/bold] vectors of {result.dim} dims fit in one {size} shard; "
                      f"{result.count:,} need {shards:,} shard{'s' if shards > 1 else ''}")  # fmt: skip
        verdict = None
    else:
        verdict = "fit" if result.fits_count else "do NOT fit"
    if verdict:
        console.print(f"[bold]{result.fits:,}[/bold] vectors of {result.dim} dims fit in the budget; "
                      f"{result.count:,} {verdict}")  # fmt: skip
    if len(result.limits) > 1:  # the count is the least of several documented limits
        console.print("limits: " + "; ".join(f"{lim['limit']} {lim['fits']:,}" for lim in result.limits))
    for note in result.notes:
        console.print(f"[dim]{note}[/dim]")
    for source in result.sources:
        console.print(f"[dim]source: {source['title']} <{source['url']}>[/dim]")


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"
