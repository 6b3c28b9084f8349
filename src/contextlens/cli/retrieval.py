"""Semantic search and its cost: `index build`, `index search`, `capacity`, `eval retrieval`."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from contextlens.cli import app
from contextlens.cli.common import JsonOpt, PlotOpt, console, fmt, note, print_json
from contextlens.cli.evaluation import eval_app
from contextlens.errors import InputError

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
    json_out: JsonOpt = False,
) -> None:
    """Encode documents and save them in a FAISS index with a manifest (atomically)."""
    from contextlens.analyses.encoders import make_encoder
    from contextlens.analyses.search import DEFAULT_PARAMS, IndexSpec, VectorIndex, load_documents

    if index not in DEFAULT_PARAMS:
        raise InputError(f"unknown --index {index!r}; use one of {', '.join(DEFAULT_PARAMS)}")
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
    spec = IndexSpec(index, params)  # checks the options fit the index type before the model loads
    documents = load_documents(docs)
    encoder = make_encoder(model, kind or "sentence", layer)
    built = VectorIndex.build(documents, encoder, spec, batch_size=batch_size, show_progress_bar=console.is_terminal)
    folder = built.save(out, model_source=encoder.model.source)
    manifest = (folder / "manifest.json").read_text()
    if json_out:
        import json

        print_json(json.loads(manifest))
        return
    p = built.spec.params
    params_text = ", ".join(f"{k}={v}" for k, v in p.items()) or "no parameters"
    console.print(
        f"indexed [bold]{len(built)}[/bold] documents from {escape(str(docs))} as {escape(built.identity.describe())} "
        f"vectors in a [bold]{built.spec.type}[/bold] index ({params_text}; stored as {built.spec.dtype})"
    )
    console.print(f"written to {escape(str(folder))} (manifest.json, index.faiss, docs.jsonl)")


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
    json_out: JsonOpt = False,
) -> None:
    """Rank the indexed documents for a query; refuses a query encoder that differs from the index's."""
    from contextlens.analyses.encoders import EncoderIdentity, make_encoder
    from contextlens.analyses.search import IndexMismatchError, VectorIndex, read_manifest

    stored = read_manifest(folder)["encoder"]
    wanted = {"model": model, "kind": kind, "layer": layer}
    for what, value in wanted.items():  # fail before loading a model that cannot match
        if value is not None and value != stored[what]:
            held = EncoderIdentity(stored["model"], stored["kind"], stored["layer"], stored["dim"]).describe()
            raise IndexMismatchError(
                f"{folder} holds {held} vectors but the query asks for {what} {value!r}; "
                f"drop --{what} or rebuild the index with that encoder"
            )
    loaded = VectorIndex.load(folder)
    encoder = make_encoder(stored["model"], stored["kind"], stored["layer"])
    (result,) = loaded.search(encoder, [query], k)
    if json_out:
        print_json(result.to_dict())
        return
    table = Table(title=f"{escape(query)} — {escape(result.encoder.describe())}, {result.index_type} index")
    table.add_column("rank", justify="right")
    table.add_column("score", justify="right")
    table.add_column("id")
    table.add_column("text")
    for hit in result.hits:
        text = hit.text if len(hit.text) <= 160 else hit.text[:157] + "..."
        table.add_row(str(hit.rank), fmt(hit.score), escape(hit.id), escape(text))
    console.print(table)


@app.command("capacity")
def capacity_cmd(
    count: Annotated[int, typer.Option("--count", "-n", help="Number of vectors.")],
    dim: Annotated[int, typer.Option("--dim", "-d", help="Dimensions per vector.")],
    dtype: Annotated[
        str | None, typer.Option("--dtype", help="float32, float16, int8 or binary (default: the index's own).")
    ] = None,
    index: IndexTypeOpt = "flat",
    m: Annotated[int, typer.Option("--m", help="HNSW: neighbors per node.")] = 32,
    nlist: NlistOpt = None,
    pq_m: PqMOpt = None,
    nbits: Annotated[int, typer.Option("--nbits", help="IVF-PQ: bits per sub-code.")] = 8,
    measure: Annotated[bool, typer.Option("--measure", help="Also build the real FAISS index and measure it.")] = False,
    max_measure: Annotated[
        int, typer.Option(help="Build on at most this many vectors; above it, two samples are extrapolated.")
    ] = 100_000,
    json_out: JsonOpt = False,
) -> None:
    """Memory and disk for N vectors in a FAISS index: the formula, and with --measure the real size."""
    from contextlens.analyses.capacity import CapacityRequest, estimate
    from contextlens.analyses.capacity import measure as measure_size

    request = CapacityRequest(count, dim, index, dtype, m, nlist, pq_m, nbits)
    if measure:
        if max_measure < 2:
            raise InputError(f"--max-measure must be at least 2, got {max_measure}")
        with contextlib.nullcontext() if json_out else console.status("building the FAISS index to measure it..."):
            result = measure_size(request, max_measure=max_measure)
    else:
        result = estimate(request)
    if json_out:
        print_json(result.to_dict())
        return
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


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"


@eval_app.command("retrieval")
def eval_retrieval(
    model: Annotated[
        str, typer.Option("--model", "-m", help="Contextual model: mpnet (default), minilm, ...")
    ] = "mpnet",
    task: Annotated[str, typer.Option("--task", help="lee (documents vs human ratings) or wordnet.")] = "lee",
    sample: Annotated[int, typer.Option(help="WordNet: synsets in the sample (queries = definitions).")] = 1000,
    seed: Annotated[int, typer.Option(help="WordNet: sampling seed.")] = 0,
    quick: Annotated[bool, typer.Option("--quick", help="A small subset, for tests and a first look.")] = False,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Retrieval quality of each encoder kind and layer, and quality against bytes per vector."""
    from contextlens.analyses.retrieval import evaluate_lee, evaluate_wordnet

    if task == "lee":
        result = evaluate_lee(model, quick=quick, show_progress_bar=console.is_terminal and not json_out)
    elif task == "wordnet":
        result = evaluate_wordnet(
            model, sample=sample, seed=seed, quick=quick, show_progress_bar=console.is_terminal and not json_out
        )
    else:
        raise InputError(f"unknown --task {task!r}; use lee or wordnet")
    if plot is not None:
        from contextlens.reports.figures import save
        from contextlens.reports.retrieval_figures import retrieval_figure

        note(f"figure written to {save(retrieval_figure(result), plot)}")
    if json_out:
        print_json(result.to_dict())
        return
    render_retrieval(result)


def render_retrieval(result) -> None:
    """One table: a row per (kind, layer, reduction, dim, dtype), a column per metric."""
    metrics = list(dict.fromkeys(r["metric"] for r in result.rows))
    grouped: dict[tuple, dict[str, float]] = {}
    ordered = sorted(result.rows, key=lambda r: not (r["reduction"] is None and r["dtype"] == "float32"))
    for r in ordered:
        key = (r["kind"], r["layer"], r["reduction"], r["dim"], r["dtype"], r["bytes_per_vector"])
        grouped.setdefault(key, {})[r["metric"]] = r["value"]
    meta = result.meta
    size = f"{meta.get('documents', meta.get('queries'))} " + ("documents" if "documents" in meta else "queries")
    title = f"{result.benchmark} — {result.model} ({size}{', quick' if meta.get('quick') else ''})"
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for col in ("kind", "layer", "cut", "dim", "dtype", "bytes"):
        table.add_column(col, justify="left" if col in ("kind", "cut", "dtype") else "right", no_wrap=True)
    for metric in metrics:
        table.add_column(metric, justify="right", no_wrap=True)
    best = {m: max(v[m] for v in grouped.values()) for m in metrics}
    previous_section = None
    for (kind, layer, reduction, dim, dtype, nbytes), values in grouped.items():
        section = reduction is None and dtype == "float32"
        if previous_section is not None and section != previous_section:
            table.add_section()
        previous_section = section
        cells = []
        for m in metrics:
            text = fmt(values.get(m))
            cells.append(f"[bold]{text}[/bold]" if values.get(m) == best[m] else text)
        table.add_row(
            kind,
            "-" if layer is None else str(layer),
            reduction or "-",
            str(dim),
            dtype,
            f"{nbytes:g}",
            *cells,
        )
    if console.is_terminal:
        console.print(table)
    else:  # piped output defaults to 80 columns, too narrow for this table
        Console(emoji=False, highlight=False, width=110).print(table)
    chance = {k: v for k, v in meta.items() if k.startswith("random_")}
    for k, v in chance.items():
        console.print(f"[dim]chance level ({k.removeprefix('random_')}): {v:.4f}[/dim]")
    console.print(f"[dim]PCA components and int8 ranges fitted on {meta.get('fit_on')}[/dim]")
