"""`contextlens corpus list|extract|plan|search|export`: real corpora, every occurrence of target words as
Parquet, the price of a job, and the occurrences most like an example.

The commands only: their options are declared in :mod:`contextlens.cli.corpus_options`, their
printing in :mod:`contextlens.cli.corpus_print`, the work in :mod:`contextlens.analyses.corpus`.
"""

from __future__ import annotations

import typer

from contextlens.analyses.corpus.estimate import DEFAULT_SAMPLE_BYTES
from contextlens.analyses.corpus.manifest import DEFAULT_CHUNK_CHARS
from contextlens.cli.common import (
    DEFAULT_MODEL,
    JsonOpt,
    ModelOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    contextual_option,
    err_console,
    layer_text,
    plain_lines_too,
    status_line,
)
from contextlens.cli.corpus_options import (
    EXTRACT_FLAGS,
    ActorsOpt,
    AddressOpt,
    ChunkOpt,
    CorpusArg,
    CorpusDeviceOpt,
    DtypeOpt,
    EngineOpt,
    EstimateOpt,
    ExampleDeviceOpt,
    ExampleRuntimeOpt,
    ExportOutOpt,
    ExportSensesOpt,
    FolderArg,
    FolderLayerOpt,
    FolderModelOpt,
    ForceOpt,
    FormatOpt,
    FormsOpt,
    LayersOpt,
    LikeOpt,
    LineBreaksOpt,
    OnErrorOpt,
    OutOpt,
    PlanActorsOpt,
    PlanFormsOpt,
    PlanOnErrorOpt,
    PoolingOpt,
    PriceDeviceOpt,
    RateOpt,
    SampleOpt,
    SenseOpt,
    SensesOpt,
    TopOpt,
    WordsFileOpt,
    WordsOpt,
    parse_layers,
    target_words,
)
from contextlens.cli.corpus_print import (
    print_corpora,
    print_export,
    print_extraction,
    print_price,
    print_search,
    scan_line,
)
from contextlens.cli.params import as_flags
from contextlens.cli.registry import app
from contextlens.errors import InputError
from contextlens.reports.output_paths import check_output_folder

corpus_app = typer.Typer(
    help="Corpora: list the installed ones, extract every occurrence of words.", no_args_is_help=True
)
app.add_typer(corpus_app, name="corpus")


@corpus_app.command("list")
def list_cmd(json_out: JsonOpt = False) -> None:
    """The installed corpora with their sizes (counted once, then cached)."""
    from contextlens.analyses.corpus.catalogue import installed_corpora

    with err_console.status("counting corpora (once, then cached)...") as status:
        infos = installed_corpora(lambda name: status.update(f"counting {name}'s sentences (once, then cached)..."))
    print_corpora(infos, json_out)


@corpus_app.command("extract")
def extract_cmd(  # noqa: PLR0913 - a command: one parameter per option
    corpus: CorpusArg,
    out: OutOpt = None,
    words: WordsOpt = None,
    words_file: WordsFileOpt = None,
    forms: FormsOpt = False,
    model: ModelOpt = DEFAULT_MODEL,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    device: CorpusDeviceOpt = "auto",
    threads: ThreadsOpt = None,
    layers: LayersOpt = "all",
    pooling: PoolingOpt = "mean",
    dtype: DtypeOpt = "float16",
    engine: EngineOpt = "local",
    address: AddressOpt = None,
    actors: ActorsOpt = 1,
    chunk: ChunkOpt = DEFAULT_CHUNK_CHARS,
    on_error: OnErrorOpt = "skip",
    line_breaks: LineBreaksOpt = None,
    force: ForceOpt = False,
    estimate: EstimateOpt = False,
    rate: RateOpt = None,
    sample_bytes: SampleOpt = DEFAULT_SAMPLE_BYTES,
    json_out: JsonOpt = False,
) -> None:
    """Every whole-word occurrence of the words in CORPUS -> Parquet rows with one vector per layer."""
    from contextlens.analyses.corpus.extract import extract_corpus

    targets = target_words(words, words_file)
    if estimate:
        job = {"layers": layers, "pooling": pooling, "dtype": dtype, "forms": forms, "line_breaks": line_breaks}
        run = {"model": model, "precision": precision, "runtime": runtime, "device": device, "threads": threads}
        _price(corpus, targets, run, job, on_error, actors, rate, sample_bytes, json_out)
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

    def load(name: str, precision: str, runtime: str, device: str):  # the job's one model, its drift on stderr
        live("loading model...")  # the terminal's line only: a log's clock starts at the scan
        return contextual_option(name, precision, threads if engine == "local" else None, runtime, device=device)

    with progress, as_flags(**EXTRACT_FLAGS):
        result = extract_corpus(
            corpus, targets, out, model=model, layers=parse_layers(layers), pooling=pooling, dtype=dtype,
            chunk_chars=chunk, engine=engine, address=address, actors=actors, on_error=on_error, forms=forms,
            precision=precision, runtime=runtime, threads=threads, progress=lambda s: show(scan_line(s)),
            force=force, loader=load, line_breaks=line_breaks, device=device,
        )  # fmt: skip
    print_extraction(result, json_out)


@corpus_app.command("plan")
def plan_cmd(  # noqa: PLR0913 - a command: one parameter per option
    corpus: CorpusArg,
    words: WordsOpt = None,
    words_file: WordsFileOpt = None,
    forms: PlanFormsOpt = False,
    model: ModelOpt = DEFAULT_MODEL,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    device: PriceDeviceOpt = "auto",
    threads: ThreadsOpt = None,
    layers: LayersOpt = "all",
    pooling: PoolingOpt = "mean",
    dtype: DtypeOpt = "float16",
    actors: PlanActorsOpt = 2,
    on_error: PlanOnErrorOpt = "skip",
    line_breaks: LineBreaksOpt = None,
    rate: RateOpt = None,
    sample_bytes: SampleOpt = DEFAULT_SAMPLE_BYTES,
    json_out: JsonOpt = False,
) -> None:
    """What `corpus extract` of these words would find, write and take, from a sample (nothing written)."""
    job = {"layers": layers, "pooling": pooling, "dtype": dtype, "forms": forms, "line_breaks": line_breaks}
    targets = target_words(words, words_file)
    run = {"model": model, "precision": precision, "runtime": runtime, "device": device, "threads": threads}
    _price(corpus, targets, run, job, on_error, actors, rate, sample_bytes, json_out)


def _price(corpus, targets, run, job, on_error, actors, rate, sample_bytes, json_out):
    """Load the job's model (``run``: model, precision, runtime, device, threads), price the job
    (analyses/corpus/estimate.py), print every number with its basis."""
    from contextlens.analyses.corpus.estimate import price_job

    if sample_bytes < 1:
        raise InputError(f"--sample-bytes must be at least 1, got {sample_bytes}")
    if actors < 1:
        raise InputError(f"--actors must be at least 1, got {actors}")
    progress, live = status_line("pricing the job: loading the model...")
    with progress, as_flags(rate="--rate", sample_bytes="--sample-bytes", **EXTRACT_FLAGS):
        model = run["model"]
        loaded = contextual_option(model, run["precision"], run["threads"], run["runtime"], device=run["device"])
        live(f"pricing the job: reading a sample of {corpus} and measuring {model}'s forward...")
        e = price_job(
            corpus, targets, loaded, parse_layers(job["layers"]), job["pooling"], job["dtype"], job["forms"],
            job["line_breaks"], on_error, sample_bytes, sorted({1, 2, actors}), rate,
        )  # fmt: skip
    print_price(e, json_out)


@corpus_app.command("search")
def search_cmd(
    folder: FolderArg,
    like: LikeOpt,
    layer: FolderLayerOpt = None,
    top: TopOpt = 20,
    model: FolderModelOpt = None,
    sense: SenseOpt = None,
    senses: SensesOpt = False,
    threads: ThreadsOpt = None,
    runtime: ExampleRuntimeOpt = None,
    device: ExampleDeviceOpt = None,
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

    def load(name: str, precision: str, runtime: str, device: str):  # the folder's model, its drift on stderr
        return contextual_option(name, precision, threads, runtime, device=device)

    flags = {"top": "--top", "layer": "--layer", "like": "--like", "sense": "--sense", "runtime": "--runtime"}
    with as_flags(**flags, device="--device"):
        result = search_occurrences(
            folder, like, None if layer is None else layer_text(layer), top, loader=load, sense=sense, senses=senses,
            runtime=runtime, device=device,
        )  # fmt: skip
    print_search(result, like, json_out)


@corpus_app.command("export")
def export_cmd(
    folder: FolderArg,
    format: FormatOpt = "projector",
    layer: FolderLayerOpt = None,
    out: ExportOutOpt = None,
    senses: ExportSensesOpt = True,
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
    print_export(result, json_out)
