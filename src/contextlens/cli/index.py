"""`contextlens index build|search`: semantic search on a FAISS index, or in PostgreSQL with pgvector."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_MODEL,
    MODEL_NAMES,
    DeviceOpt,
    JsonOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    console,
    contextual_option,
    encoding_progress,
    fmt,
    layer_text,
    note,
    print_json,
)
from contextlens.cli.registry import app
from contextlens.errors import InputError

index_app = typer.Typer(
    help="Semantic search on a FAISS index or in PostgreSQL with pgvector: build one from documents, search it.",
    no_args_is_help=True,
)
app.add_typer(index_app, name="index")
server_app = typer.Typer(
    help="The embedded PostgreSQL of --engine pgvector: it stays up between commands and stops after an idle "
    "timeout ($CONTEXTLENS_PG_IDLE_SECONDS, default 300 s).",
    no_args_is_help=True,
)
index_app.add_typer(server_app, name="server")

KindOpt = Annotated[
    str | None,
    typer.Option("--kind", help="Encoder kind: sentence (default), hidden-mean, or input-row (the baseline)."),
]
LayerOpt = Annotated[int | None, typer.Option("--layer", help="Layer for --kind hidden-mean (default: last).")]
BuildLayerOpt = Annotated[
    str | None,
    typer.Option(
        "--layer",
        help="Layer for --kind hidden-mean (default: last), or auto: the layer with the best retrieval MRR on "
        "dev WordNet synsets for this model.",
    ),
]
IndexTypeOpt = Annotated[
    str,
    typer.Option("--index", help="Index type: flat (exact), hnsw, ivfpq, sq8, binary; pgvector: flat, hnsw, ivfflat."),
]
MOpt = Annotated[int | None, typer.Option("--m", help="HNSW: neighbors per node (default 32; pgvector 16).")]
EngineOpt = Annotated[
    str,
    typer.Option("--engine", help="faiss (a file) or pgvector (a PostgreSQL table; the embedded server unless --dsn)."),
]
DsnOpt = Annotated[
    str | None,
    typer.Option(
        "--dsn", help="pgvector: your PostgreSQL with pgvector (libpq URL or key=value); default: the embedded one."
    ),
]
NlistOpt = Annotated[int | None, typer.Option("--nlist", help="IVF-PQ: inverted lists (default ~4*sqrt(n)).")]
PqMOpt = Annotated[
    int | None, typer.Option("--pq-m", help="IVF-PQ: sub-quantizers, must divide the dim (default d/8).")
]
StaticOpt = Annotated[
    str | None,
    typer.Option(
        "--static",
        "-s",
        help="Encode with a static model instead (glove-50d, or one made by `contextlens static`): the mean of "
        "its word vectors, no forward pass.",
    ),
]
NbitsOpt = Annotated[int | None, typer.Option("--nbits", help="IVF-PQ: bits per sub-code (default 8).")]


DocsArg = Annotated[
    Path,
    typer.Argument(
        help="A text file (one document per line), a folder of .txt, JSONL, or Parquet with a "
        "'text' column (.gz/.bz2 too)."
    ),
]
BuildModelOpt = Annotated[str | None, typer.Option("--model", "-m", help=f"Contextual model: {MODEL_NAMES}, ...")]
DtypeOpt = Annotated[
    str | None,
    typer.Option(
        "--dtype",
        help="Stored type: float32 (default), float16, int8, binary; pgvector: float32 "
        "(vector), float16 (halfvec), binary (bit, re-ranked by cosine).",
    ),
]
EfConstructionOpt = Annotated[int | None, typer.Option(help="HNSW: build-time beam width (default 80; pgvector 64).")]
EfSearchOpt = Annotated[int | None, typer.Option(help="HNSW: query-time beam width (default 64; pgvector 40).")]
NprobeOpt = Annotated[int | None, typer.Option(help="IVF-PQ: lists visited per query (default 16).")]
ListsOpt = Annotated[int | None, typer.Option(help="pgvector IVFFlat: inverted lists (default 100).")]
ProbesOpt = Annotated[int | None, typer.Option(help="pgvector IVFFlat: lists visited per query (default 1).")]
ForceOpt = Annotated[
    bool, typer.Option("--force", help="Build into an --out folder that also holds other files (kept).")
]
DedupeOpt = Annotated[
    bool,
    typer.Option("--dedupe", help="Index each distinct text once (its first id); says how many were folded."),
]


@index_app.command("build")
def index_build(  # noqa: PLR0913 - a command: one parameter per option
    docs: DocsArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the index into.")],
    model: BuildModelOpt = None,
    kind: KindOpt = None,
    layer: BuildLayerOpt = None,
    static: StaticOpt = None,
    index: IndexTypeOpt = "flat",
    engine: EngineOpt = "faiss",
    dsn: DsnOpt = None,
    dtype: DtypeOpt = None,
    m: MOpt = None,
    ef_construction: EfConstructionOpt = None,
    ef_search: EfSearchOpt = None,
    nlist: NlistOpt = None,
    pq_m: PqMOpt = None,
    nbits: NbitsOpt = None,
    nprobe: NprobeOpt = None,
    lists: ListsOpt = None,
    probes: ProbesOpt = None,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass.")] = 32,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    force: ForceOpt = False,
    dedupe: DedupeOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Encode documents and save them in a FAISS index (or a pgvector table) with a manifest (atomically)."""
    from contextlens.analyses.corpus.index_documents import index_documents
    from contextlens.analyses.search.encoders import StaticTextEncoder, check_batch_size
    from contextlens.analyses.search.index import read_manifest
    from contextlens.analyses.search.index_files import check_index_folder
    from contextlens.reports.output_paths import check_output_folder

    check_batch_size(batch_size)  # before the model loads
    if static is not None:
        _refuse_with_static(model=model, kind=kind, layer=layer, precision=precision, runtime=runtime, device=device)
    given = dict(m=m, ef_construction=ef_construction, ef_search=ef_search, nlist=nlist, pq_m=pq_m, nbits=nbits)
    given |= dict(nprobe=nprobe, lists=lists, probes=probes)
    config = _index_config(engine, index, {k: v for k, v in given.items() if v is not None}, dtype, dsn)
    check_index_folder(check_output_folder(out), force)  # and that --out can take an index
    documents = index_documents(docs)
    documents, dedupe_record = _deduped(documents) if dedupe else (documents, None)
    if static is not None:
        encoder, choice = StaticTextEncoder(static), None
        source = encoder.model_source
    else:
        encoder, choice = _contextual_encoder(model, kind, layer, precision, threads, runtime, device)
        source = encoder.model.source
    built, folder = _built(
        engine, documents, encoder, out, config, dsn=dsn, batch_size=batch_size, source=source, force=force,
        dedupe_record=dedupe_record, quiet=json_out,
    )  # fmt: skip
    if json_out:
        print_json(read_manifest(folder) | ({"layer_choice": choice.to_dict()} if choice is not None else {}))
    else:
        _print_built(built, folder, docs, choice, engine=engine, dsn=dsn, dedupe_record=dedupe_record)


def _refuse_with_static(*, model, kind, layer, precision: str, runtime: str, device: str) -> None:
    """--static encodes with a static model: a contextual encoder's options given with it are refused."""
    contextual = {"--model": model, "--kind": kind, "--layer": layer}
    contextual |= {"--precision": None if precision == "fp32" else precision}
    contextual |= {"--runtime": None if runtime == "torch" else runtime}
    contextual |= {"--device": None if device == "auto" else device}
    given_too = [flag for flag, value in contextual.items() if value is not None]
    if given_too:
        raise InputError(
            f"--static encodes with a static model, so {', '.join(given_too)} (a contextual encoder's) cannot go "
            "with it; drop one"
        )


def _index_config(engine: str, index: str, params: dict, dtype: str | None, dsn: str | None):
    """The engine's index configuration, checked (and a --dsn parsed and tried) before the model loads."""
    from contextlens.analyses.search.index import IndexConfig
    from contextlens.analyses.search.pg_dsn import checked_dsn
    from contextlens.analyses.search.pg_index import PgIndexConfig, check_engine

    if check_engine(engine) == "pgvector":
        config = PgIndexConfig(index, params, dtype or "float32")
        checked_dsn(dsn)
        return config
    if dsn is not None:
        raise InputError("--dsn is for --engine pgvector; a FAISS index is a file in --out")
    return IndexConfig(index, params, dtype)


def _deduped(documents):
    """--dedupe: each distinct text once, with the record of how many were folded."""
    from contextlens.analyses.search.index import dedupe_documents

    read = len(documents)
    documents, folded = dedupe_documents(documents)
    note(f"--dedupe: {folded:,} duplicate document(s) folded into their first copy; {len(documents):,} indexed")
    return documents, {"documents_read": read, "folded": folded, "indexed": len(documents)}


def _contextual_encoder(model, kind, layer, precision: str, threads, runtime: str, device: str):
    """The contextual encoder and, for --layer auto, the layer choice that picked its layer."""
    from contextlens.analyses.search.encoders import check_kind, make_encoder

    kind = check_kind(kind or "sentence")  # before the model loads
    wanted = None if layer is None else layer_text(layer)
    if wanted == "auto" and kind != "hidden-mean":
        raise InputError(f"--layer auto is for --kind hidden-mean; a {kind} encoder has no layer to choose")
    layers = [wanted] if kind == "hidden-mean" and wanted not in (None, "auto") else []
    loaded = contextual_option(model or DEFAULT_MODEL, precision, threads, runtime, layers=layers, device=device)  # type: ignore[arg-type]
    choice = None
    if wanted == "auto":
        from contextlens.analyses.measures.layer_choice import choose_layer

        with encoding_progress(loaded.name) as progress:
            choice = choose_layer(loaded, "retrieval", progress=progress, announce=note)
        wanted = choice.layer
    return make_encoder(loaded, kind, wanted), choice  # type: ignore[arg-type]


def _built(engine: str, documents, encoder, out: Path, config, *, dsn, batch_size: int, source, force: bool,
           dedupe_record, quiet: bool):  # fmt: skip
    """The index built (a pgvector table, or a FAISS index saved into --out) and its folder."""
    if engine == "pgvector":
        from contextlens.analyses.search.pg_index import PgVectorIndex

        with contextlib.nullcontext() if quiet else console.status("loading the vectors into PostgreSQL..."):
            built = PgVectorIndex.build(
                documents, encoder, out, config, dsn=dsn, batch_size=batch_size,
                show_progress_bar=console.is_terminal, model_source=source, force=force, dedupe=dedupe_record,
            )  # fmt: skip
        return built, out
    from contextlens.analyses.search.index import VectorIndex

    built = VectorIndex.build(
        documents,
        encoder,
        config,
        batch_size=batch_size,
        show_progress_bar=console.is_terminal,
        dedupe=dedupe_record,
    )
    return built, built.save(out, model_source=source, force=force)


def _print_built(built, folder: Path, docs: Path, choice, *, engine: str, dsn: str | None, dedupe_record) -> None:
    """What was indexed, how it is stored, and where (the table's sizes for pgvector)."""
    from contextlens.analyses.search.encoders import describe_encoder
    from contextlens.analyses.search.index_files import current_folder

    if choice is not None:
        console.print(f"[dim]{escape(choice.label())}[/dim]")
    p = built.config.params
    params_text = ", ".join(f"{k}={v}" for k, v in p.items()) or "no parameters"
    folded_text = f" ({dedupe_record['folded']:,} duplicates folded by --dedupe)" if dedupe_record else ""
    console.print(
        f"indexed [bold]{len(built)}[/bold] documents{folded_text} from {escape(str(docs))} as "
        f"{escape(describe_encoder(built.provenance))} vectors in a [bold]{built.config.type}[/bold] index "
        f"({params_text}; stored as {built.config.code})"
    )
    version = current_folder(folder).name
    if engine == "pgvector":
        r = built.report
        where = "your PostgreSQL (--dsn)" if dsn else "the embedded PostgreSQL"
        console.print(
            f"vectors in table [bold]{built.table}[/bold] of {where}: table {r.table_bytes:,} bytes "
            f"(pg_table_size, with TOAST), index {r.index_bytes:,} bytes (pg_relation_size), built in {r.seconds:.2f} s"
        )
        for notice in r.notices:
            console.print(f"[yellow]PostgreSQL: {escape(notice)}[/yellow]")
        console.print(f"written to {escape(str(folder))} ({version}/: manifest.json, docs.jsonl)")
        return
    console.print(f"written to {escape(str(folder))} ({version}/: manifest.json, index.faiss, docs.jsonl)")


QueryStaticOpt = Annotated[
    str | None,
    typer.Option("--static", "-s", help="Query static model (default: the index's, when it holds static vectors)."),
]
QueryPrecisionOpt = Annotated[
    str | None,
    typer.Option(
        "--precision",
        help="Query precision (default: the index's, recorded in its manifest; another one is refused:"
        " fp32 and int8 vectors are not mixed).",
    ),
]
QueryRuntimeOpt = Annotated[
    str | None,
    typer.Option(
        "--runtime",
        help="Query runtime: auto, torch or onnx (default: auto, the lean path: ONNX Runtime at fp32, checked "
        "within 1e-4 of torch, its check printed; at int8 the index's own, recorded in its manifest: int8 "
        "vectors of two runtimes are not mixed).",
    ),
]

QueryDeviceOpt = Annotated[
    str | None,
    typer.Option(
        "--device",
        help="Where the query runs: auto, cpu, cuda or cuda:N (default: the CPU for an fp32 or int8 index, whose "
        "vectors agree across devices within the printed check; else the index's device: fp16/bf16 vectors of a "
        "GPU and of the CPU are not mixed).",
    ),
]


@index_app.command("search")
def index_search(  # noqa: PLR0913 - a command: one parameter per option
    folder: Annotated[Path, typer.Argument(help="An index folder written by `contextlens index build`.")],
    query: Annotated[str, typer.Argument(help="The text to search for.")],
    k: Annotated[int, typer.Option("-k", help="How many documents to return.")] = 10,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Query encoder model (default: the index's; must match it).")
    ] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="Query encoder kind (default: the index's).")] = None,
    layer: LayerOpt = None,
    static: QueryStaticOpt = None,
    precision: QueryPrecisionOpt = None,
    runtime: QueryRuntimeOpt = None,
    device: QueryDeviceOpt = None,
    dsn: DsnOpt = None,
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Rank the indexed documents for a query; refuses a query encoder that differs from the index's."""
    from contextlens.analyses.search.index_files import require_index_folder

    require_index_folder(folder)  # before the index libraries (numpy) are imported
    from contextlens.analyses.search.encoders import query_device
    from contextlens.analyses.search.folders import lean_runtime
    from contextlens.analyses.search.index import index_encoder, search_index
    from contextlens.analyses.search.pg_dsn import checked_dsn
    from contextlens.analyses.search.pg_index import engine_of, search_pg_index
    from contextlens.core.choices import check_precision
    from contextlens.core.devices import check_device_choice

    if precision is not None:
        check_precision(precision)
    asked = None if device is None else check_device_choice(device)
    # a mismatch is refused before any model loads (an auto device once it is resolved, below)
    stored = index_encoder(folder, model, kind, layer, precision, runtime, static, None if asked == "auto" else asked)
    engine = engine_of(folder)
    if dsn is not None and engine != "pgvector":
        raise InputError(f"--dsn is for an index in pgvector; {folder} is a FAISS index")
    checked_dsn(dsn)  # parsed and tried before the model loads
    if stored.kind == "static":  # the index's static model, loaded by the name it recorded
        loaded = None
    else:
        lean = lean_runtime(stored.precision, stored.runtime)
        where = query_device(stored, asked)
        loaded = contextual_option(stored.model, stored.precision, threads, runtime or lean, device=where)
    if engine == "pgvector":
        result = search_pg_index(folder, query, k, model=loaded, kind=kind, layer=layer, dsn=dsn, static=static)
    else:
        result = search_index(folder, query, k, model=loaded, kind=kind, layer=layer, static=static)
    if json_out:
        print_json(result.to_dict())
    else:
        _print_hits(result, query, k, engine)


def _print_hits(result, query: str, k: int, engine: str) -> None:
    """The ranked documents as a table; for pgvector, the recall against an exact scan of the same table."""
    where = " in pgvector" if engine == "pgvector" else ""
    table = Table(title=f"{escape(query)} — {escape(result.describe_encoder())}, {result.index_type} index{where}")
    table.add_column("rank", justify="right")
    table.add_column("score", justify="right")
    table.add_column("id")
    table.add_column("text")
    for hit in result.hits:
        text = hit.text if len(hit.text) <= 160 else hit.text[:157] + "..."
        table.add_row(str(hit.rank), fmt(hit.score), escape(hit.id), escape(text))
    console.print(table)
    if engine == "pgvector":
        console.print(
            f"recall@{k} against an exact scan of the same table: {result.recall:.2f} "
            f"(exact = 1.00; {result.index_type} is {'that scan' if result.index_type == 'flat' else 'approximate'})"
        )


@server_app.command("status")
def server_status_cmd(json_out: JsonOpt = False) -> None:
    """Whether the embedded PostgreSQL runs, is in use, and how long it has been idle."""
    from contextlens.analyses.search.pg_server import server_status

    status = server_status()
    if json_out:
        print_json(status)
        return
    if not status["running"]:
        console.print("the embedded PostgreSQL is not running (the next pgvector command starts it)")
        return
    state = "in use" if status["in_use"] else f"idle for {status['idle_seconds'] or 0:.0f} s"
    console.print(f"the embedded PostgreSQL is running, {state}; it stops after "
                  f"{status['idle_timeout_seconds']:.0f} s idle ({escape(status['data'])})")  # fmt: skip


@server_app.command("stop")
def server_stop_cmd() -> None:
    """Stop the embedded PostgreSQL now (refused while another command uses it)."""
    from contextlens.analyses.search.pg_server import stop_server

    stopped = stop_server()
    console.print("stopped the embedded PostgreSQL" if stopped else "the embedded PostgreSQL was not running")
