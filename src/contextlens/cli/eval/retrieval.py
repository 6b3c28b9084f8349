"""`contextlens eval retrieval`: retrieval quality per encoder kind, layer and coding."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_MODEL,
    MODEL_NAMES,
    DeviceOpt,
    JsonOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    console,
    fmt,
    load_model,
    model_choice,
    note,
    print_json,
)
from contextlens.cli.eval import eval_app
from contextlens.errors import InputError

if TYPE_CHECKING:  # faiss and numpy come with it: `--help` must not pay for it
    from pathlib import Path

    from contextlens.analyses.benchmarks.encode_speed import EncodeSpeed
    from contextlens.analyses.benchmarks.retrieval import RetrievalResult
    from contextlens.core.contextual_models import ContextualModel
    from contextlens.core.static_models import StaticModel


@eval_app.command("retrieval")
def eval_retrieval(
    model: Annotated[str, typer.Option("--model", "-m", help=f"Contextual model: {MODEL_NAMES}, ...")] = DEFAULT_MODEL,
    task: Annotated[str, typer.Option("--task", help="lee (documents vs human ratings) or wordnet.")] = "lee",
    sample: Annotated[
        int | None, typer.Option(help="WordNet: synsets in the sample (queries = definitions); default 1000.")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="WordNet: sampling seed; default 0.")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A small subset, for tests and a first look.")] = False,
    static: Annotated[
        list[str] | None,
        typer.Option(
            "--static",
            "-s",
            help="A static model beside the contextual one (repeat): glove-50d, or one made by `contextlens "
            "static`; its row, and its encode speed timed in the same run.",
        ),
    ] = None,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Retrieval quality of each encoder kind and layer, and quality against bytes per vector."""
    chosen = model_choice(model, precision, runtime, device=device)  # once: a wrong option costs no heavy import
    if task not in ("lee", "wordnet"):
        raise InputError(f"unknown --task {task!r}; use lee or wordnet")
    if task == "lee" and (sample is not None or seed is not None):
        raise InputError("--sample and --seed choose WordNet synsets; they apply to --task wordnet, not lee")
    from contextlens.analyses.benchmarks.retrieval import check_statics
    from contextlens.cli.params import as_flags
    from contextlens.reports.output_paths import FIGURE_SUFFIXES, check_output_path

    if plot is not None:
        plot = check_output_path(plot, FIGURE_SUFFIXES)  # before the work, not after it
    with as_flags(statics="--static"):
        statics = check_statics(static or [])  # a wrong name fails before any weights load
    loaded = load_model(chosen, threads)
    progress = console.is_terminal and not json_out
    with as_flags(statics="--static"):
        result = _measure(loaded, task, (sample, seed), quick, statics, progress)
    _show(result, plot, json_out)


def _measure(
    loaded: ContextualModel,
    task: str,
    sample_seed: tuple[int | None, int | None],
    quick: bool,
    statics: list[StaticModel],
    progress: bool,
) -> RetrievalResult:
    """The task's benchmark on the loaded model (WordNet: ``sample`` synsets, default 1000, seed 0)."""
    from contextlens.analyses.benchmarks.retrieval import evaluate_lee, evaluate_wordnet

    if task == "lee":
        return evaluate_lee(loaded, quick=quick, show_progress_bar=progress, statics=statics)
    sample, seed = sample_seed
    return evaluate_wordnet(
        loaded,
        sample=1000 if sample is None else sample,
        seed=seed or 0,
        quick=quick,
        show_progress_bar=progress,
        statics=statics,
    )


def _show(result: RetrievalResult, plot: Path | None, json_out: bool) -> None:
    """The figure (when asked), then the JSON or the tables (retrieval, then the speed)."""
    from contextlens.analyses.benchmarks.retrieval_table import retrieval_table

    if plot is not None:
        from contextlens.reports.figures import save
        from contextlens.reports.retrieval_figures import retrieval_figure

        note(f"figure written to {save(retrieval_figure(result), plot)}")
    if json_out:
        print_json(result.to_dict())
        return
    render_retrieval(retrieval_table(result))
    render_speed(result.speed)


def render_speed(speed: EncodeSpeed | None) -> None:
    """The static models' encode speed beside the contextual model's, timed in this run."""
    if speed is None:
        return
    if not speed.rows:
        note(speed.note)
        return
    table = Table(
        title=f"encode speed: {speed.texts} texts ({speed.words:,} words), one system after another in this run",
        box=box.SIMPLE_HEAD,
    )
    for col in ("system", "texts/s", "words/s", f"x {speed.baseline}", "MB"):
        table.add_column(col, justify="left" if col == "system" else "right")
    for row in speed.rows:
        table.add_row(
            escape(row.system),
            f"{row.texts_per_s:,.1f}",
            f"{row.words_per_s:,.0f}",
            f"{row.times_faster:,.1f}",
            f"{row.bytes / 1e6:,.1f}",
        )
    console.print(table)


def render_retrieval(table_data) -> None:
    """One table: a row per (kind, layer, reduction, dim, dtype), a column per metric."""
    table = Table(title=table_data.title, box=box.SIMPLE_HEAD)
    for col in ("kind", "layer", "cut", "dim", "dtype", "bytes"):
        table.add_column(col, justify="left" if col in ("kind", "cut", "dtype") else "right", no_wrap=True)
    for metric in table_data.metrics:
        table.add_column(metric, justify="right", no_wrap=True)
    previous_section = None
    for row in table_data.rows:
        if previous_section is not None and row.full != previous_section:
            table.add_section()
        previous_section = row.full
        cells = [fmt(row.values[m]) for m in table_data.metrics]
        cells = [f"[bold]{c}[/bold]" if m in row.best else c for m, c in zip(table_data.metrics, cells, strict=True)]
        table.add_row(
            f"static {escape(row.static)}" if row.static else row.kind,
            "-" if row.layer is None else str(row.layer),
            row.reduction or "-",
            str(row.dim),
            row.dtype,
            f"{row.bytes_per_vector:g}",
            *cells,
        )
    if console.is_terminal:
        console.print(table)
    else:  # piped output defaults to 80 columns, too narrow for this table
        Console(emoji=False, highlight=False, width=110).print(table)
    for name, value in table_data.chance.items():
        console.print(f"[dim]chance level ({name}): {value:.4f}[/dim]")
    console.print(f"[dim]PCA components and int8 ranges fitted on {table_data.fit_on}[/dim]")
