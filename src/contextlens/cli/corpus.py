"""`contextlens corpus list|extract|search`: real corpora, every occurrence of target words as Parquet,
and the occurrences most like an example."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.analyses.corpus.estimate import DEFAULT_SAMPLE_BYTES
from contextlens.analyses.corpus.manifest import DEFAULT_CHUNK_CHARS
from contextlens.cli.common import (
    DEFAULT_MODEL,
    JsonOpt,
    ModelOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    console,
    contextual_option,
    err_console,
    layer_text,
    note,
    plain_lines_too,
    print_json,
    status_line,
)
from contextlens.cli.params import as_flags
from contextlens.cli.registry import app
from contextlens.errors import DataFileError, InputError
from contextlens.reports.output_paths import check_output_folder

corpus_app = typer.Typer(
    help="Corpora: list the installed ones, extract every occurrence of words.", no_args_is_help=True
)
app.add_typer(corpus_app, name="corpus")


LineBreaksOpt = Annotated[
    str | None,
    typer.Option(
        "--line-breaks",
        help="Files' line breaks: paragraphs (blank lines separate paragraphs, wrapped lines are joined; the default) "
        "or lines (one sentence or paragraph per line). Continuing a folder: its own.",
    ),
]
RateOpt = Annotated[
    float | None,
    typer.Option(
        "--rate",
        help="Price the job also at this forward rate in tokens/s (a GPU's, another machine's, as you measured "
        "or expect it; none is assumed).",
    ),
]
SampleOpt = Annotated[
    int, typer.Option("--sample-bytes", help="Bytes of the corpus read to price the job (whole files or paragraphs).")
]


def _output_folder(value: str | None):
    return None if value is None else check_output_folder(value)


FolderLayerOpt = Annotated[
    str | None,
    typer.Option(
        "--layer",
        "-l",
        help="An extracted layer (default: the top), or auto: the layer eval wic picks on dev "
        "lemmas for the folder's model.",
    ),
]


@corpus_app.command("list")
def list_cmd(json_out: JsonOpt = False) -> None:
    """The installed corpora with their sizes (counted once, then cached)."""
    from contextlens.analyses.corpus.catalogue import installed_corpora

    with err_console.status("counting corpora (once, then cached)..."):
        infos = installed_corpora()
    if json_out:
        print_json([i.to_dict() for i in infos])
        return
    table = Table(title="installed corpora")
    for col, just in (
        ("name", "left"),
        ("documents", "right"),
        ("sentences", "right"),
        ("words", "right"),
        ("what", "left"),
    ):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for i in infos:
        if i.installed:
            table.add_row(i.name, f"{i.documents:,}", f"{i.sentences:,}", f"{i.words:,}", i.description)
        else:
            table.add_row(i.name, "-", "-", "-", f"[red]not installed[/red]: {i.problem}")
    console.print(table)
    console.print(
        "[dim]also readable: a text file (a document per paragraph: blank lines separate them, wrapped lines are "
        "joined; --line-breaks lines: per line), a folder of .txt, JSONL with 'text', Parquet with 'text'; "
        ".gz/.bz2 transparently[/dim]"
    )


EXTRACT_FLAGS = {
    "source": "CORPUS",
    "out": "--out",
    "targets": "--words",
    "forms": "--forms",
    "model": "--model",
    "layers": "--layers",
    "pooling": "--pooling",
    "dtype": "--dtype",
    "chunk_chars": "--chunk",
    "engine": "--engine",
    "address": "--address",
    "actors": "--actors",
    "threads": "--threads",
    "on_error": "--on-error",
    "line_breaks": "--line-breaks",
    "force": "--force",
    "precision": "--precision",
    "runtime": "--runtime",
}


def parse_layers(value: str) -> list[int] | None:
    if value.strip().lower() == "all":
        return None
    try:
        return [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"--layers {value!r}: give numbers like 0,6,12 or 'all'") from None


def target_words(words: str | None, words_file: Path | None) -> list[str]:
    out = [w for w in (words or "").split(",") if w.strip()]
    if words_file is not None:
        try:
            out += [line.strip() for line in words_file.read_text(encoding="utf-8").splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError) as exc:
            raise DataFileError(f"cannot read --words-file {words_file}: {exc}") from None
    if not out:
        raise InputError("no target words; pass --words bank,spring or --words-file FILE")
    return out


@corpus_app.command("extract")
def extract_cmd(
    corpus: Annotated[str, typer.Argument(help="A file, folder, .jsonl, .parquet, or enwiki / lee / wordnet.")],
    out: Annotated[
        str | None,
        typer.Option("--out", "-o", help="Folder for the Parquet shards and manifest.json.", callback=_output_folder),
    ] = None,
    words: Annotated[str | None, typer.Option("--words", help="Comma-separated target words.")] = None,
    words_file: Annotated[Path | None, typer.Option("--words-file", help="One target word per line.")] = None,
    forms: Annotated[
        bool,
        typer.Option("--forms", help="Also match inflected forms (WordNet 3.0): bank -> banks, banked, banking."),
    ] = False,
    model: ModelOpt = DEFAULT_MODEL,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    threads: ThreadsOpt = None,
    layers: Annotated[str, typer.Option("--layers", help="Layers to keep: 0,6,12 or all.")] = "all",
    pooling: Annotated[str, typer.Option("--pooling", help="Over a word's tokens: mean, first, last.")] = "mean",
    dtype: Annotated[str, typer.Option("--dtype", help="float16 (default) or float32.")] = "float16",
    engine: Annotated[str, typer.Option("--engine", help="local (this process) or ray (Ray Data actors).")] = "local",
    address: Annotated[
        str | None, typer.Option("--address", help="Ray cluster to join (e.g. auto, ray://host:10001).")
    ] = None,
    actors: Annotated[
        int, typer.Option("--actors", help="Ray: model actors (one model each; threads: --threads or the CPU share).")
    ] = 1,
    chunk: Annotated[
        int,
        typer.Option("--chunk", help="Characters of text per shard, whole documents (part of the job's identity)."),
    ] = DEFAULT_CHUNK_CHARS,
    on_error: Annotated[
        str, typer.Option("--on-error", help="Non-UTF-8 lines: skip (counted) or stop (file:line).")
    ] = "skip",
    line_breaks: LineBreaksOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Write into an --out folder that holds other files (they are kept).")
    ] = False,
    estimate: Annotated[
        bool, typer.Option("--estimate", help="Price the job (as `corpus plan`): nothing is encoded or written.")
    ] = False,
    rate: RateOpt = None,
    sample_bytes: SampleOpt = DEFAULT_SAMPLE_BYTES,
    json_out: JsonOpt = False,
) -> None:
    """Every whole-word occurrence of the words in CORPUS -> Parquet rows with one vector per layer."""

    from contextlens.analyses.corpus.extract import extract_corpus

    targets = target_words(words, words_file)
    if estimate:
        job = {"layers": layers, "pooling": pooling, "dtype": dtype, "forms": forms, "line_breaks": line_breaks}
        _price(corpus, targets, model, precision, runtime, threads, job, on_error, actors, rate, sample_bytes, json_out)
        return
    if rate is not None or sample_bytes != DEFAULT_SAMPLE_BYTES:
        raise InputError("--rate and --sample-bytes price a job: add --estimate (or run `corpus plan`)")
    if out is None:
        raise InputError("give --out FOLDER for the shards (or --estimate to price the job first)")
    progress, live = status_line(
        "checking the job..."
        if engine == "local"  # on Ray the actors load the model (each once) before the first rows
        else f"checking the job, starting Ray and {actors} actor(s), each loading {model}..."
    )

    show = plain_lines_too(live)

    def update(s) -> None:
        rate = s.paragraphs / max(s.seconds, 1e-9)
        show(
            f"{s.paragraphs:,} paragraphs scanned ({s.paragraphs_skipped:,} without a target, not split), "
            f"{s.occurrences:,} occurrences, {s.rows_written:,} rows written, "
            f"{s.chunks_skipped} shards already done, {rate:,.0f} paragraphs/s"
        )

    def load(name: str, precision: str, runtime: str):  # the job's one model, its drift on stderr
        live("loading model...")  # the terminal's line only: a log's clock starts at the scan
        return contextual_option(name, precision, threads if engine == "local" else None, runtime)

    with progress, as_flags(**EXTRACT_FLAGS):
        result = extract_corpus(
            corpus,
            targets,
            out,
            model=model,
            layers=parse_layers(layers),
            pooling=pooling,
            dtype=dtype,
            chunk_chars=chunk,
            engine=engine,
            address=address,
            actors=actors,
            on_error=on_error,
            forms=forms,
            precision=precision,
            runtime=runtime,
            threads=threads,
            progress=update,
            force=force,
            loader=load,
            line_breaks=line_breaks,
        )
    m, s = result.manifest, result.stats
    if json_out:
        print_json(
            {
                "folder": str(result.folder),
                "already_complete": result.already_complete,
                "manifest": m.to_dict(),
                "seconds": round(s.seconds, 2),
            }
        )
        return
    if result.already_complete:
        console.print(
            f"{result.folder}: already complete ({m.counts['rows']:,} rows in {m.counts['shards']} shards); "
            "nothing to do"
        )
        return
    per = ", ".join(f"{w} {n:,}" for w, n in m.counts["per_target"].items())  # type: ignore[union-attr]
    console.print(
        f"{m.counts['rows']:,} rows ({per}) from {s.sentences:,} sentences of {s.paragraphs_split:,} paragraphs "
        f"(of {s.paragraphs:,} read; the rest held no target) into {result.folder} "
        f"({m.counts['shards']} shards, {s.chunks_skipped} were already there) in {s.seconds:.1f} s"
    )
    if m.forms:
        top = ", ".join(f"{f} {n:,}" for f, n in list(m.counts["per_form"].items())[:12])  # type: ignore[union-attr]
        console.print(f"forms matched: {top}")
    console.print(
        f"[dim]model {m.model} ({m.backend.label}), layers {m.layers}, {m.pooling} pooling, {m.dtype}"
        f"{', inflected forms' if m.forms else ''}[/dim]"
    )
    if s.read.skipped:
        note(f"skipped {s.read.skipped} non-UTF-8 line(s), first at {', '.join(s.read.skipped_where)}")
    long = s.read.long_message()
    if long:
        note(long.replace("line breaks `lines`", "--line-breaks lines"))


@corpus_app.command("plan")
def plan_cmd(
    corpus: Annotated[str, typer.Argument(help="A file, folder, .jsonl, .parquet, or enwiki / lee / wordnet.")],
    words: Annotated[str | None, typer.Option("--words", help="Comma-separated target words.")] = None,
    words_file: Annotated[Path | None, typer.Option("--words-file", help="One target word per line.")] = None,
    forms: Annotated[bool, typer.Option("--forms", help="Also match inflected forms (WordNet 3.0).")] = False,
    model: ModelOpt = DEFAULT_MODEL,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    threads: ThreadsOpt = None,
    layers: Annotated[str, typer.Option("--layers", help="Layers to keep: 0,6,12 or all.")] = "all",
    pooling: Annotated[str, typer.Option("--pooling", help="Over a word's tokens: mean, first, last.")] = "mean",
    dtype: Annotated[str, typer.Option("--dtype", help="float16 (default) or float32.")] = "float16",
    actors: Annotated[int, typer.Option("--actors", help="Also price N Ray actors (2 are always shown).")] = 2,
    on_error: Annotated[str, typer.Option("--on-error", help="Non-UTF-8 lines: skip or stop.")] = "skip",
    line_breaks: LineBreaksOpt = None,
    rate: RateOpt = None,
    sample_bytes: SampleOpt = DEFAULT_SAMPLE_BYTES,
    json_out: JsonOpt = False,
) -> None:
    """What `corpus extract` of these words would find, write and take, from a sample (nothing written)."""
    job = {"layers": layers, "pooling": pooling, "dtype": dtype, "forms": forms, "line_breaks": line_breaks}
    targets = target_words(words, words_file)
    _price(corpus, targets, model, precision, runtime, threads, job, on_error, actors, rate, sample_bytes, json_out)


def _price(corpus, targets, model, precision, runtime, threads, job, on_error, actors, rate, sample_bytes, json_out):
    """Load the job's model, price the job (analyses/corpus/estimate.py), print every number with its basis."""
    from contextlens.analyses.corpus.estimate import price_job

    if sample_bytes < 1:
        raise InputError(f"--sample-bytes must be at least 1, got {sample_bytes}")
    if actors < 1:
        raise InputError(f"--actors must be at least 1, got {actors}")
    progress, live = status_line("pricing the job: loading the model...")
    with progress, as_flags(rate="--rate", sample_bytes="--sample-bytes", **EXTRACT_FLAGS):
        loaded = contextual_option(model, precision, threads, runtime)
        live(f"pricing the job: reading a sample of {corpus} and measuring {model}'s forward...")
        e = price_job(
            corpus, targets, loaded, parse_layers(job["layers"]), job["pooling"], job["dtype"], job["forms"],
            job["line_breaks"], on_error, sample_bytes, sorted({1, 2, actors}), rate,
        )  # fmt: skip
    if json_out:
        print_json(e.to_dict())
        return
    sample, counted, f = e.sample, e.counts_in_sample, e.forward
    scaled = "" if sample["whole"] else f" (the sample's {counted['occurrences']:,} x {sample['factor']:.3g})"
    per = ", ".join(f"{w} {n:,}" for w, n in e.per_target.items())
    console.print(f"sample: {escape(sample['basis'])}")
    console.print(
        f"  read {counted['paragraphs']:,} paragraphs, {counted['paragraphs_split']:,} held a target "
        f"({counted['sentences_split']:,} sentences split), in {counted['scan_seconds']:.1f} s"
    )
    console.print(f"occurrences expected: {e.occurrences:,}{scaled}: {per}")
    console.print(
        f"shards: {e.rows:,} rows x {e.row_bytes:,} bytes = {e.shard_bytes / 1e6:,.1f} MB "
        f"[dim]({escape(e.basis['row_bytes'])})[/dim]"
    )
    if f["sentences_per_s"] is None:
        console.print(f"time: nothing to encode in the sample; the read alone {e.seconds_scan:.1f} s")
        return
    sentences = e.seconds_forward * f["sentences_per_s"]
    console.print(
        f"time here: {e.seconds_here:,.0f} s = read and scan {e.seconds_scan:,.1f} s + forward "
        f"{e.seconds_forward:,.0f} s ({e.occurrences:,} occurrences in about {sentences:,.0f} "
        f"sentences, each encoded once, at {f['sentences_per_s']:,.1f} sentences/s, {f['tokens_per_s']:,.0f} tokens/s, "
        f"measured on {f['sentences']} of the sample's sentences: {f['model']} {f['precision']} {f['runtime']}, "
        f"{f['threads']} threads); model load not counted"
    )
    for n, seconds in e.actors.items():
        if n > 1:
            console.print(f"on {n} Ray actors: {seconds:,.0f} s [dim]({escape(e.basis['actors'])})[/dim]")
    if e.rate is not None:
        console.print(
            f"at {e.rate['tokens_per_s']:,.0f} tokens/s (stated): {e.rate['seconds']:,.0f} s for "
            f"{e.rate['tokens']:,.0f} tokens [dim]({escape(e.basis['rate'])})[/dim]"
        )


@corpus_app.command("search")
def search_cmd(
    folder: Annotated[Path, typer.Argument(help="A folder written by `contextlens corpus extract`.")],
    like: Annotated[
        str, typer.Option("--like", help='An example occurrence, the word in brackets: "The river [bank] flooded."')
    ],
    layer: FolderLayerOpt = None,
    top: Annotated[int, typer.Option("--top", "-k", help="How many occurrences to show.")] = 20,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Must be the folder's own model (default: it is).")
    ] = None,
    sense: Annotated[
        int | None,
        typer.Option("--sense", help="Only the example word's occurrences induced into this sense (0..k-1)."),
    ] = None,
    senses: Annotated[
        bool, typer.Option("--senses", help="Label each hit with its induced sense (as `senses induce`).")
    ] = False,
    threads: ThreadsOpt = None,
    runtime: Annotated[
        str | None,
        typer.Option(
            "--runtime",
            help="The example's runtime: auto (default at fp32: ONNX Runtime, starting without torch, checked "
            "within 1e-4 of torch, its check printed), torch or onnx; an int8 folder's own by default.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """The occurrences in FOLDER most like an example occurrence (cosine at the folder's layer,
    with its percentile among random-word cosines)."""
    from contextlens.analyses.corpus.folder_check import checked_folder

    manifest = checked_folder(folder)
    if model is not None and model != manifest.model:
        raise InputError(
            f"--model {model} is not the model of {folder} ({manifest.model}); vectors of two models are not "
            "comparable: drop --model or search a folder extracted with it"
        )
    from contextlens.analyses.corpus.occurrence_search import search_occurrences

    def load(name: str, precision: str, runtime: str):  # the folder's model, its drift on stderr
        return contextual_option(name, precision, threads, runtime)

    with as_flags(top="--top", layer="--layer", like="--like", sense="--sense", runtime="--runtime"):
        result = search_occurrences(
            folder, like, None if layer is None else layer_text(layer), top, loader=load, sense=sense, senses=senses,
            runtime=runtime,
        )  # fmt: skip
    if json_out:
        print_json(result.to_dict())
        return
    built = f"index built in {result.index_seconds:.1f} s" if result.index_built else "index read from the folder"
    from rich.markup import escape

    console.print(
        f"[bold]{escape(like)}[/bold]: the {len(result.hits)} nearest of {result.searched:,} occurrences, "
        f"{escape(result.model)} ({result.backend_label}) layer {result.layer}, cosine; {built}, "
        f"search {result.search_seconds * 1000:.0f} ms",
        soft_wrap=True,
    )
    if result.baseline is not None:
        b = result.baseline
        console.print(
            f"[dim]baseline: random different-word pairs at layer {result.layer}: mean {b['mean']:.3f}, "
            f"5-95% {b['p5']:.3f}-{b['p95']:.3f}; 'pct' = the share of them at or below the cosine[/dim]",
            soft_wrap=True,
        )
    if result.sense is not None:
        console.print(f"only the occurrences induced into sense {result.sense} of the example's word")
    for word, found in result.senses.items():
        named = "; ".join(
            f"{c['cluster']}: {c['synset'] or ', '.join(c['distinctive_words'][:3]) or '-'} ({c['size']})"
            for c in found["clusters"]
        )
        console.print(f"[dim]senses of {escape(word)} (induced, k={found['k']}): {escape(named)}[/dim]", soft_wrap=True)
    labelled = bool(result.senses)
    table = Table(show_edge=False, pad_edge=False)
    columns = [("#", "right"), ("cosine", "right"), ("pct", "right")] + ([("sense", "right")] if labelled else [])
    for col, justify in columns + [("occurrence", "left"), ("document", "left")]:
        table.add_column(col, justify=justify)
    for h in result.hits:
        pct = "-" if h.baseline_percentile is None else f"{h.baseline_percentile:.1f}"
        sense_cell = ["-" if h.sense is None else str(h.sense)] if labelled else []
        table.add_row(str(h.rank), f"{h.cosine:.3f}", pct, *sense_cell, escape(h.marked), escape(h.doc_id))
    console.print(table)


@corpus_app.command("export")
def export_cmd(
    folder: Annotated[Path, typer.Argument(help="A folder written by `contextlens corpus extract`.")],
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help="projector: the Embedding Projector's vectors.tsv + metadata.tsv "
            "(occurrence, target, form, document, sense).",
        ),
    ] = "projector",
    layer: FolderLayerOpt = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Folder for the files (default: FOLDER/projector-layer_L).")
    ] = None,
    senses: Annotated[
        bool,
        typer.Option(
            "--senses/--no-senses",
            help="The sense column: each occurrence's induced sense at the layer, as `corpus search --sense` "
            "numbers them ('K: synset (definition)'; '-' for a word with under 3 occurrences). It loads the "
            "folder's model; --no-senses leaves the column out.",
        ),
    ] = True,
    json_out: JsonOpt = False,
) -> None:
    """The folder's vectors at one layer as files other tools load (Parquet stays the native format)."""
    from contextlens.analyses.corpus.projector import FORMATS, export_projector

    if format not in FORMATS:
        raise InputError(f"--format {format!r}: use {' or '.join(FORMATS)}")
    if out is not None:
        check_output_folder(out)  # a file, or a place that cannot be written, is refused here
    with as_flags(layer="--layer", out="--out"):
        result = export_projector(folder, out, None if layer is None else layer_text(layer), senses=senses)
    if json_out:
        print_json(result.to_dict())
        return
    console.print(
        f"{result.rows:,} occurrences of {result.model} layer {result.layer} ({result.dim} dimensions): "
        f"{result.vectors} and {result.metadata}; load both at https://projector.tensorflow.org (Load)",
        soft_wrap=True,
        markup=False,
    )
    if result.senses:
        named = ", ".join(f"{w} {'-' if s is None else s['k']}" for w, s in result.senses.items())
        line = f"induced senses (k) in the sense column: {named}; '-': too few occurrences"
        console.print(line, markup=False, soft_wrap=True)
