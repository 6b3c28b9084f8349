"""Pieces every command shares: model options, occurrence parsing, JSON and error output.

The CLI is a face: it parses input, calls one analysis and renders the result. No logic here.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from contextlens.core.model_facts import ModelFacts, check_request
from contextlens.core.resources import DEFAULT_CONTEXTUAL, DEFAULT_STATIC, REGISTRY
from contextlens.core.threads import default_threads
from contextlens.errors import InputError, OutputPathError
from contextlens.reports.output_paths import check_output_path

if TYPE_CHECKING:  # both import torch or gensim: a command loads them only once its input is checked
    from contextlens.core.contextual_models import ContextualModel
    from contextlens.core.runtime_choice import ModelBackend
    from contextlens.core.static_models import StaticModel

console = Console(emoji=False, highlight=False)
err_console = Console(stderr=True, emoji=False, highlight=False)

MODEL_NAMES = ", ".join(
    [f"{DEFAULT_CONTEXTUAL} (default)"]
    + [name for name, spec in REGISTRY.items() if spec.kind == "contextual" and name != DEFAULT_CONTEXTUAL]
)  # the registered contextual models as --help lists them, the default (one constant) first
ModelOpt = Annotated[
    str,
    typer.Option("--model", "-m", help=f"Contextual model: {MODEL_NAMES}, a folder or HF id."),
]
ModelsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--model",
        "-m",
        help=f"Contextual model: {MODEL_NAMES}, a folder or HF id. Give it twice"
        " (-m minilm -m mpnet) to see two models side by side, each against its own baseline, with their CKA.",
    ),
]
PrecisionOpt = Annotated[
    str,
    typer.Option(
        "--precision",
        help="fp32 (default, exact); int8: linear layers dynamically quantized, faster on a CPU, not exact;"
        " fp16 or bf16: the torch network cast, for a GPU (slower than fp32 on a CPU). The drift from fp32"
        " (cosine per layer) is printed with the result.",
    ),
]
DeviceOpt = Annotated[
    str,
    typer.Option(
        "--device",
        help="auto (default: the first CUDA GPU the runtime can use, else the CPU; int8 stays on the CPU), cpu,"
        " cuda or cuda:N. A GPU that is not there is refused; a GPU result prints its check against the CPU's.",
    ),
]
RuntimeOpt = Annotated[
    str,
    typer.Option(
        "--runtime",
        help="auto (ONNX Runtime for an encoder, starting without torch; torch for a decoder), torch (the"
        " reference: plain transformers' numbers) or onnx: exported once per model and cached, checked"
        " within 1e-4 of torch (docs/speed.md).",
    ),
]
ThreadsOpt = Annotated[
    int | None, typer.Option("--threads", min=1, help="CPU threads for the model (default: the core count).")
]
StaticOpt = Annotated[
    str,
    typer.Option(
        "--static",
        "-s",
        help="Static model: glove-50d (default), a model made with `contextlens static train|distill`,"
        " or a GloVe/word2vec/fastText/.kv file"
        " ('none' skips the static baseline where it is optional: compare, probe).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of a table.")]
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")
HTML_SUFFIXES = (".html", ".htm")


def _checked_figure(path: Path | None) -> Path | None:
    """Parse-time check of --plot, before any work: a bad path never costs a computed result."""
    return None if path is None else check_output_path(path, FIGURE_SUFFIXES)


def _checked_html(path: Path | None) -> Path | None:
    return None if path is None else check_output_path(path, HTML_SUFFIXES)


PlotOpt = Annotated[
    Path | None,
    typer.Option("--plot", help="Write a PNG figure to this file (.svg/.pdf also work).", callback=_checked_figure),
]
HtmlOpt = Annotated[
    Path | None,
    typer.Option("--html", help="Write an interactive, self-contained HTML figure.", callback=_checked_html),
]
WordOpt = Annotated[
    str | None,
    typer.Option("--word", "-w", help="Target word, when the sentences carry no \\[markers]."),
]
OccurrenceOpt = Annotated[
    int, typer.Option("--occurrence", "-n", help="Which occurrence of --word (0 = first, -1 = last).")
]

DEFAULT_MODEL = DEFAULT_CONTEXTUAL
DEFAULT_STATIC_MODEL = DEFAULT_STATIC


def models_option(models: list[str] | None) -> list[str]:
    """The --model values: the default model when none is given, else one or two different names."""
    if not models:
        return [DEFAULT_MODEL]
    if len(models) > 1:
        from contextlens.analyses.lesson.two_models import check_two_models

        return check_two_models(models)
    return list(models)


def check_model(
    name: str,
    precision: str = "fp32",
    runtime: str = "torch",
    *,
    layers: Iterable[int] = (),
    attention: tuple[int, int | None] | None = None,
    device: str = "auto",
) -> ModelFacts | None:
    """Everything about the --model request that holds without its weights, checked before they
    load (no torch import; :func:`contextlens.core.model_facts.check_request`): a usage error so
    answers in a fraction of a second; the --device's spelling too (whether the GPU is there is
    asked when the request is resolved). The facts, or None for a hub id not on disk."""
    from contextlens.core.devices import check_device_choice

    check_device_choice(device)
    return check_request(name, precision, runtime, layers, attention)


def model_choice(
    name: str,
    precision: str = "fp32",
    runtime: str = "torch",
    *,
    layers: Iterable[int] = (),
    attention: tuple[int, int | None] | None = None,
    attention_weights: bool = False,
    device: str = "cpu",
) -> ModelBackend:
    """The --model, --precision, --runtime and --device resolved once, at the boundary: checked as
    :func:`check_model` checks them, ``auto`` resolved (:mod:`contextlens.core.runtime_choice`;
    ONNX for attention weights only from a checked attention graph; a GPU that is not there
    refused). Load it with :func:`load_model`."""
    from contextlens.core.runtime_choice import ModelBackend

    return ModelBackend.checked(
        name, precision, runtime, layers=layers, attention=attention, weights=attention_weights, device=device
    )  # fmt: skip


def static_option(name: str, words: Iterable[str] = (), *, optional: bool = False) -> StaticModel | None:
    """The --static model (``none`` where ``optional``), with every word the command will look
    up checked against its vocabulary: call it before :func:`contextual_option`, so a word the
    static model lacks is refused before any contextual weights load."""
    from contextlens.core.static_models import optional_static

    static = optional_static(name, optional=optional)
    if static is not None:
        for word in words:
            static.vector(word)  # raises OutOfVocabularyError, the message the analysis would give
    return static


def contextual_option(
    name: str,
    precision: str = "fp32",
    threads: int | None = None,
    runtime: str = "torch",
    *,
    layers: Iterable[int] = (),
    attention: tuple[int, int | None] | None = None,
    attention_weights: bool = False,
    device: str = "cpu",
) -> ContextualModel:
    """The --model at --precision on --runtime on --device, resolved (:func:`model_choice`) and
    loaded (:func:`load_model`)."""
    chosen = model_choice(
        name, precision, runtime, layers=layers, attention=attention, attention_weights=attention_weights,
        device=device,
    )  # fmt: skip
    return load_model(chosen, threads)


def use_threads(threads: int | None = None) -> None:
    """The threads every command's work uses: ``--threads``, default the core count (torch's count
    too, whenever torch loads; :mod:`contextlens.core.threads`)."""
    from contextlens.core.threads import set_threads

    set_threads(threads or default_threads())


def load_model(chosen: ModelBackend, threads: int | None = None) -> ContextualModel:
    """A resolved request loaded, with the threads set once, before the model loads (--threads,
    default the core count; :mod:`contextlens.core.threads`). Any result that is not torch fp32 has
    its measured drift from it on stderr (an ONNX graph's is the check made when it was exported),
    so no such result is read without it."""
    from contextlens.core.contextual_models import load_resolved

    use_threads(threads)
    name, backend = chosen.model, chosen.backend
    if chosen.export_missing:  # after the result, like the drift line: an error stays one line
        AFTER_RESULT.append(
            f"{name} has no checked ONNX export on this machine, so this ran on torch (the reference; --runtime "
            f"auto builds nothing). `contextlens prepare -m {name}` (make setup runs it) exports and checks it once, "
            "and later commands start in about a second without torch"
        )
    if chosen.export_pending():
        note(
            f"first ONNX Runtime use of {name} ({backend.precision}) on this machine: exporting its graph and checking "
            "it against torch, once (about 10 s for minilm, a minute for mpnet); later runs start without torch"
        )
    model = load_resolved(chosen)
    if not backend.is_reference:
        from contextlens.core.drift import drift_on

        AFTER_RESULT.append(drift_on(name, backend).line())  # after the result: an error stays one line
    return model


AFTER_RESULT: list[str] = []  # side remarks printed once the command has succeeded (cli.main)


def notes_after_result(succeeded: bool) -> None:
    """Print (on success) and forget the remarks kept for after the result."""
    if succeeded:
        for line in AFTER_RESULT:
            note(line)
    AFTER_RESULT.clear()


def print_json(data: Any) -> None:
    """Dump a result's ``to_dict()`` (plain JSON types already, see core/jsonable.py) to stdout."""
    sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")


def note(message: str) -> None:
    """A side remark (file written, window cut) on stderr, so --json stdout stays clean."""
    err_console.print(f"[dim]{message}[/dim]")


def window_note(text: str, window: tuple[int, int]) -> str:
    """One line saying which characters of a long text the model saw (it was cut to fit)."""
    start, end = window
    return (
        f"[yellow]cut to fit the model: only characters {start}-{end} of {len(text)} "
        "(a window around the target) were read[/yellow]"
    )


def fmt(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


LayerOpt = Annotated[int, typer.Option("--layer", "-l", help="Hidden-state layer (0..L, negative from the top).")]
AutoLayerOpt = Annotated[
    str,
    typer.Option(
        "--layer",
        "-l",
        help="Hidden-state layer (0..L, negative from the top), or auto: the layer eval wic picks on dev lemmas "
        "for this model (best sense separation).",
    ),
]


def layer_text(layer: str) -> int | str:
    """--layer as typed: ``"auto"`` or a layer number, read before any model loads."""
    if layer.strip().lower() == "auto":
        return "auto"
    from contextlens.core.numerals import integer_text

    number = integer_text(layer)
    if number is None:
        raise InputError(f"--layer must be auto or a layer number, got {layer!r}")
    return number


def layer_numbers_to_check(layer: int | str) -> list[int]:
    """The --layer to check against config.json before the weights load (none for auto)."""
    return [] if layer == "auto" else [layer]  # type: ignore[list-item]


def choose_auto_layer(model: ContextualModel, layer: int | str, task: str = "sense") -> None:
    """For --layer auto, the benchmark's choice made here first, so that its one-time encoding runs
    under a note and a progress bar (stderr); the analysis then reads the choice from memory."""
    if layer != "auto":
        return
    from contextlens.analyses.measures.layer_choice import choose_layer

    with encoding_progress(model.name) as progress:
        choose_layer(model, task, progress=progress, announce=note)


TemplateOpt = Annotated[
    str, typer.Option("--template", help="Neutral sentence for a lone word; '[{word}]' marks where it goes.")
]
ExcludeSpecialOpt = Annotated[
    bool,
    typer.Option("--exclude-special", help="Drop [CLS]/[SEP]-like tokens and renormalise the attention rows."),
]


def write_figures(plot: Path | None, html: Path | None, result: Any, title: str) -> None:
    """Write the PNG and/or the interactive HTML the user asked for (call it after printing the result):
    the result's figures in the one registry, reports.figure_registry."""
    if plot is not None:
        from contextlens.reports.figure_registry import static_figure
        from contextlens.reports.figures import save

        note(f"figure written to {save(static_figure(result), plot)}")
    if html is not None:
        from contextlens.reports.figure_registry import interactive_figures
        from contextlens.reports.interactive import write_page

        with written(html):
            note(f"interactive figure written to {write_page(interactive_figures(result), html, title)}")


@contextmanager
def written(path: Path) -> Iterator[None]:
    """A write that fails despite the up-front check (disk full, folder removed) becomes one line."""
    try:
        yield
    except OSError as exc:
        raise OutputPathError(f"cannot write {path}: {exc.strerror or exc}; choose another path") from exc


@contextmanager
def figures_after(plot: Path | None, html: Path | None, result: Any, title: str) -> Iterator[None]:
    """Print the result inside the block; the figures are written after it, so a failed write
    never loses the printed result."""
    yield
    write_figures(plot, html, result, title)


def fmt_p(p: float | None) -> str:
    return "-" if p is None else f"{p:.3f}"


def status_line(first: str) -> tuple[Any, Callable[[str], None]]:
    """A live one-line status on stderr (spinner, text, elapsed time) for long corpus work, and
    the function that rewrites its text. Shown only on a terminal, so piped output stays clean;
    use the first value as a context manager around the work."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    )
    task = progress.add_task(first)
    return progress, lambda text: progress.update(task, description=text)


PLAIN_EVERY_SECONDS = 10.0  # a progress line this often on a stderr that is not a terminal (a log file)


def plain_lines_too(live):
    """``live`` (the terminal's status line, :func:`status_line`), plus on a stderr that is no terminal a plain line
    every :data:`PLAIN_EVERY_SECONDS` (the first as long after the first update, so a short job, or
    a refusal, prints none, however slowly its model loaded): a 30-minute job logged to a file was
    otherwise silent. Use ``live`` itself for a status that is no progress (loading the model)."""
    if err_console.is_terminal:
        return live
    import sys
    import time

    last: list[float] = []  # the clock starts at the first update, not when the job was set up

    def show(text: str) -> None:
        now = time.monotonic()
        if not last:
            last.append(now)
        elif now - last[0] >= PLAIN_EVERY_SECONDS:
            last[0] = now
            print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    return show


@contextmanager
def rich_bar(what: str, total: int) -> Iterator[Callable[[int, int], None]]:
    """The CLI's drawer for core's progress bars (core.progress): a transient rich bar on stderr,
    shown only on a terminal."""
    from rich.progress import Progress

    with Progress(console=err_console, transient=True, disable=not err_console.is_terminal) as bar:
        task = bar.add_task(what, total=total)
        yield lambda done, _total: bar.update(task, completed=done)


def print_model_kind(name: str) -> None:
    """One dim line saying what the model is (a sentence-similarity fine-tune, a decoder), where known."""
    from contextlens.core.model_kinds import model_kind

    kind = model_kind(name)
    if kind is not None:
        console.print(f"[dim]{escape(kind.summary)}[/dim]")


@contextmanager
def encoding_progress(model: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr for the one-time encoding of the shared benchmark sentences.

    It appears only when encoding actually runs (not on a cache hit) and only on a terminal,
    so that piped output and error messages stay clean.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    progress = Progress(*columns, console=err_console, transient=True, disable=not err_console.is_terminal)
    task = None

    def update(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            progress.start()
            task = progress.add_task(f"{model}: encoding benchmark sentences (once, then cached)", total=total)
        progress.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if task is not None:
            progress.stop()
