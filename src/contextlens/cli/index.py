"""`contextlens index build|search`: semantic search on a FAISS index."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.cli import app
from contextlens.cli.common import (
    JsonOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    console,
    contextual_option,
    fmt,
    print_json,
)

index_app = typer.Typer(
    help="Semantic search on a FAISS index: build one from documents, search it.", no_args_is_help=True
)
app.add_typer(index_app, name="index")

KindOpt = Annotated[
    str | None,
    typer.Option("--kind", help="Encoder kind: sentence (default), hidden-mean, or input-row (the baseline)."),
]
LayerOpt = Annotated[int | None, typer.Option("--layer", help="Layer for --kind hidden-mean (default: last).")]
IndexTypeOpt = Annotated[str, typer.Option("--index", help="Index type: flat (exact), hnsw, ivfpq, sq8, binary.")]
MOpt = Annotated[int | None, typer.Option("--m", help="HNSW: neighbors per node (default 32).")]
NlistOpt = Annotated[int | None, typer.Option("--nlist", help="IVF-PQ: inverted lists (default ~4*sqrt(n)).")]
PqMOpt = Annotated[
    int | None, typer.Option("--pq-m", help="IVF-PQ: sub-quantizers, must divide the dim (default d/8).")
]
NbitsOpt = Annotated[int | None, typer.Option("--nbits", help="IVF-PQ: bits per sub-code (default 8).")]


@index_app.command("build")
def index_build(
    docs: Annotated[Path, typer.Argument(help="A text file (one document per line), a folder of .txt, or JSONL.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the index into.")],
    model: Annotated[
        str, typer.Option("--model", "-m", help="Contextual model: mpnet (default), minilm, ...")
    ] = "mpnet",
    kind: KindOpt = None,
    layer: LayerOpt = None,
    index: IndexTypeOpt = "flat",
    m: MOpt = None,
    ef_construction: Annotated[int | None, typer.Option(help="HNSW: build-time beam width (default 80).")] = None,
    ef_search: Annotated[int | None, typer.Option(help="HNSW: query-time beam width (default 64).")] = None,
    nlist: NlistOpt = None,
    pq_m: PqMOpt = None,
    nbits: NbitsOpt = None,
    nprobe: Annotated[int | None, typer.Option(help="IVF-PQ: lists visited per query (default 16).")] = None,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass.")] = 32,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    threads: ThreadsOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Build into an --out folder that also holds other files (kept).")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Encode documents and save them in a FAISS index with a manifest (atomically)."""
    from contextlens.analyses.search.encoders import check_batch_size, check_kind, describe_encoder, make_encoder
    from contextlens.analyses.search.index import IndexConfig, VectorIndex, load_documents, read_manifest
    from contextlens.analyses.search.index_files import check_index_folder, current_folder
    from contextlens.reports.output_paths import check_output_folder

    check_batch_size(batch_size)  # before the model loads
    given = {
        "m": m,
        "ef_construction": ef_construction,
        "ef_search": ef_search,
        "nlist": nlist,
        "pq_m": pq_m,
        "nbits": nbits,
        "nprobe": nprobe,
    }
    params = {k: v for k, v in given.items() if v is not None}
    config = IndexConfig(index, params)  # checks the options fit the index type before the model loads
    check_index_folder(check_output_folder(out), force)  # and that --out can take an index
    documents = load_documents(docs)
    kind = check_kind(kind or "sentence")  # before the model loads
    layers = [layer] if kind == "hidden-mean" and layer is not None else []
    encoder = make_encoder(contextual_option(model, precision, threads, runtime, layers=layers), kind, layer)
    built = VectorIndex.build(documents, encoder, config, batch_size=batch_size, show_progress_bar=console.is_terminal)
    folder = built.save(out, model_source=encoder.model.source, force=force)
    if json_out:
        print_json(read_manifest(folder))
        return
    p = built.config.params
    params_text = ", ".join(f"{k}={v}" for k, v in p.items()) or "no parameters"
    console.print(
        f"indexed [bold]{len(built)}[/bold] documents from {escape(str(docs))} as "
        f"{escape(describe_encoder(built.provenance))} vectors in a [bold]{built.config.type}[/bold] index "
        f"({params_text}; stored as {built.config.code})"
    )
    version = current_folder(folder).name
    console.print(f"written to {escape(str(folder))} ({version}/: manifest.json, index.faiss, docs.jsonl)")


@index_app.command("search")
def index_search(
    folder: Annotated[Path, typer.Argument(help="An index folder written by `contextlens index build`.")],
    query: Annotated[str, typer.Argument(help="The text to search for.")],
    k: Annotated[int, typer.Option("-k", help="How many documents to return.")] = 10,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Query encoder model (default: the index's; must match it).")
    ] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="Query encoder kind (default: the index's).")] = None,
    layer: LayerOpt = None,
    precision: Annotated[
        str | None,
        typer.Option(
            "--precision",
            help="Query precision (default: the index's, recorded in its manifest; another one is refused:"
            " fp32 and int8 vectors are not mixed).",
        ),
    ] = None,
    runtime: Annotated[
        str | None,
        typer.Option(
            "--runtime",
            help="Query runtime: torch or onnx (default: the index's, recorded in its manifest; another one"
            " is accepted at fp32, where ONNX Runtime is checked within 1e-4 of torch, and refused at int8).",
        ),
    ] = None,
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Rank the indexed documents for a query; refuses a query encoder that differs from the index's."""
    from contextlens.analyses.search.index import index_encoder, search_index
    from contextlens.core.choices import check_precision

    if precision is not None:
        check_precision(precision)
    # a mismatch is refused before any model loads
    stored = index_encoder(folder, model, kind, layer, precision, runtime)
    loaded = contextual_option(stored.model, stored.precision, threads, runtime or stored.runtime)
    result = search_index(folder, query, k, model=loaded, kind=kind, layer=layer)
    if json_out:
        print_json(result.to_dict())
        return
    table = Table(title=f"{escape(query)} — {escape(result.describe_encoder())}, {result.index_type} index")
    table.add_column("rank", justify="right")
    table.add_column("score", justify="right")
    table.add_column("id")
    table.add_column("text")
    for hit in result.hits:
        text = hit.text if len(hit.text) <= 160 else hit.text[:157] + "..."
        table.add_row(str(hit.rank), fmt(hit.score), escape(hit.id), escape(text))
    console.print(table)
