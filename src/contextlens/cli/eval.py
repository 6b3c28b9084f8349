"""`contextlens eval ...`: benchmarks on real data (wic, wsd, similarity, contextuality, retrieval)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.cli import app
from contextlens.cli.common import (
    DEFAULT_MODEL,
    DEFAULT_STATIC_MODEL,
    JsonOpt,
    ModelOpt,
    PlotOpt,
    StaticOpt,
    console,
    err_console,
    fmt,
    note,
    print_json,
)
from contextlens.errors import InputError

eval_app = typer.Typer(
    help="Benchmarks on real data: wic, wsd, similarity, contextuality, retrieval.", no_args_is_help=True
)
app.add_typer(eval_app, name="eval")

QuickOpt = Annotated[
    bool, typer.Option("--quick", help="A small subset (seconds, for tests and a first look); not comparable.")
]


def _size(quick: bool) -> str:
    return "quick" if quick else "full"


@contextmanager
def _progress(model: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr for the one-time encoding of the shared benchmark sentences.

    It appears only when encoding actually runs (not on a cache hit) and only on a terminal,
    so that piped output and error messages stay clean.
    """
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


@contextmanager
def _plot_after(result_or_results: object, plot: Path | None, draw: Callable) -> Iterator[None]:
    """Print the result inside the block; the figure (path checked before the work) is drawn after."""
    yield
    if plot is not None:
        from contextlens.reports.figures import save

        note(f"figure written to {save(draw(result_or_results), plot)}")


def _layer(layer: int | None) -> str:
    return "-" if layer is None else str(layer)


def _footer(result: BenchmarkResult) -> None:
    meta = result.meta
    console.print(
        f"[dim]{meta['size']} data; {meta['seconds']:.1f} s ({meta['encode_seconds']:.1f} s encoding, "
        "cached on disk after the first run)[/dim]"
    )


# --- wic ---------------------------------------------------------------------------------


@eval_app.command("wic")
def wic_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    quick: QuickOpt = False,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Word in context on WordNet pairs: per-layer accuracy with a dev-tuned cosine threshold."""
    from contextlens.analyses.benchmarks.suite import run_wic
    from contextlens.reports.benchmark_figures import wic_figure

    with _progress(model) as progress:
        result = run_wic(model, static, _size(quick), progress)
    with _plot_after(result, plot, wic_figure):
        if json_out:
            print_json(result.to_dict())
        else:
            _wic_table(result)


def _wic_table(result: BenchmarkResult) -> None:
    from contextlens.analyses.benchmarks.wic import table_rows

    counts = result.meta["counts"]
    best = result.meta["best_layer"]
    table = Table(title=f"word in context (WordNet 3.0 pairs) — {result.model}")
    for col in ("system", "layer", "dev accuracy", "threshold", "test accuracy"):
        table.add_column(col, justify="right" if col != "system" else "left", no_wrap=col == "system")
    for r in table_rows(result):
        if r["published"]:
            table.add_row(f"[dim]{r['system']}[/dim]", "-", "-", "-", f"[dim]{r['test_accuracy']:.3f}[/dim]")
            continue
        table.add_row(
            r["system"],
            _layer(r["layer"]),
            fmt(r["dev_accuracy"], 3),
            fmt(r["threshold"], 3),
            fmt(r["test_accuracy"], 3),
            style="bold red" if r["best"] else None,
        )
    console.print(table)
    console.print(
        f"test: {counts['test']['pairs']} pairs ({counts['test']['same']} same / {counts['test']['different']} "
        f"different) over {counts['test']['lemmas']} lemmas; dev: {counts['dev']['pairs']} pairs over "
        f"{counts['dev']['lemmas']} lemmas; no lemma in both."
    )
    console.print(
        f"best layer by dev accuracy: [bold red]{best['layer_by_dev']}[/bold red] (test "
        f"{best['test_accuracy_at_dev_layer']:.3f}); best test layer {best['best_test_layer']} "
        f"({best['best_test_accuracy']:.3f})"
    )
    console.print(f"[dim]note: {result.meta['published_note']}[/dim]")
    _footer(result)


# --- wsd ---------------------------------------------------------------------------------


@eval_app.command("wsd")
def wsd_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    glosses: Annotated[
        bool, typer.Option("--glosses", help="Also score sense vectors that include each sense's WordNet gloss.")
    ] = False,
    quick: QuickOpt = False,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Sense disambiguation by the nearest sense centroid per layer, beside MFS (SemCor) and random."""
    from contextlens.analyses.benchmarks.suite import run_wsd
    from contextlens.reports.benchmark_figures import wsd_figure

    with _progress(model) as progress:
        result = run_wsd(model, _size(quick), progress, glosses=glosses)
    with _plot_after(result, plot, wsd_figure):
        if json_out:
            print_json(result.to_dict())
        else:
            _wsd_table(result)


def _wsd_table(result: BenchmarkResult) -> None:
    from contextlens.analyses.benchmarks.wsd import random_expected_accuracy, table_rows

    table = Table(title=f"word sense disambiguation (WordNet 3.0 examples) — {result.model}")
    for col in ("system", "layer", "dev accuracy", "test accuracy", "test macro-F1"):
        table.add_column(col, justify="right" if col != "system" else "left", no_wrap=col == "system")
    for r in table_rows(result):
        cells = (fmt(r["dev_accuracy"], 3), fmt(r["test_accuracy"], 3), fmt(r["test_macro_f1"], 3))
        table.add_row(r["system"], _layer(r["layer"]), *cells, style="bold red" if r["best"] else None)
    console.print(table)
    c = result.meta["counts"]
    console.print(
        f"{c['lemma_pos']} lemmas (with part of speech), {c['senses']} senses from {c['train_examples']} "
        f"examples; held out and scored: {c['scored_test_examples']} test examples ({c['test_lemmas']} lemmas), "
        f"{c['scored_dev_examples']} dev examples ({c['dev_lemmas']} lemmas); no lemma in both. "
        f"Random-sense expected accuracy {fmt(random_expected_accuracy(result), 3)}."
    )
    for label, key in (("", "best_layer"), (" (with glosses)", "best_layer_glosses")):
        b = result.meta.get(key)
        if b:
            console.print(
                f"best layer by dev accuracy{label}: [bold red]{b['layer_by_dev']}[/bold red] (test "
                f"{b['test_accuracy_at_dev_layer']:.3f}); best test layer {b['best_test_layer']} "
                f"({b['best_test_accuracy']:.3f})"
            )
    _footer(result)


# --- similarity --------------------------------------------------------------------------


@eval_app.command("similarity")
def similarity_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    quick: QuickOpt = False,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """SimLex-999 and WordSim-353 Spearman: static model, and per layer template and pooled contexts."""
    from contextlens.analyses.benchmarks.suite import run_similarity
    from contextlens.reports.benchmark_figures import similarity_figure

    with _progress(model) as progress:
        result = run_similarity(model, static, _size(quick), progress)
    with _plot_after(result, plot, similarity_figure):
        if json_out:
            print_json(result.to_dict())
        else:
            _similarity_table(result)


def _similarity_table(result: BenchmarkResult) -> None:
    from contextlens.analyses.benchmarks.similarity import table_rows

    datasets = list(result.meta["counts"])
    table = Table(title=f"word similarity: Spearman with human ratings — {result.model}")
    table.add_column("system", no_wrap=True)
    table.add_column("layer", justify="right")
    for ds in datasets:
        table.add_column(f"{ds} rho", justify="right")
        table.add_column("coverage", justify="right")
    for r in table_rows(result):
        cells = [r["system"], _layer(r["layer"])]
        for ds in datasets:
            coverage = r[f"{ds}:coverage"]
            cells += [fmt(r[f"{ds}:spearman"], 3), "-" if coverage is None else f"{coverage:.1%}"]
        table.add_row(*cells)
    console.print(table)
    console.print(
        f"template: {result.meta['template']!r}; pooled: mean over up to {result.meta['contexts_per_word']} "
        f"contexts from {result.meta['context_corpus']}. Coverage = share of pairs scored (1 - OOV share)."
    )
    _footer(result)


# --- contextuality -----------------------------------------------------------------------


@eval_app.command("contextuality")
def contextuality_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    also: Annotated[
        list[str] | None, typer.Option("--also", help="Another model to measure and draw on the same figure.")
    ] = None,
    quick: QuickOpt = False,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Ethayarajh (2019) per layer: anisotropy, self-similarity, intra-sentence similarity, MEV."""
    from contextlens.analyses.benchmarks.suite import run_contextuality
    from contextlens.reports.benchmark_figures import contextuality_figure

    results = []
    for name in [model, *(also or [])]:
        with _progress(name) as progress:
            results.append(run_contextuality(name, _size(quick), progress))
    with _plot_after(results, plot, contextuality_figure):
        if json_out:
            from contextlens.analyses.benchmarks.contextuality import combine

            print_json(combine(results).to_dict())
        else:
            _contextuality_tables(results)


def _contextuality_tables(results: list[BenchmarkResult]) -> None:
    from contextlens.analyses.benchmarks.contextuality import TABLE_METRICS, table_rows

    for result in results:
        table = Table(title=f"how contextual? (Ethayarajh 2019) — {result.model}")
        headers = ("layer", "anisotropy", "self-sim", "adjusted", "intra-sent", "adjusted", "MEV", "adjusted")
        for col in headers:
            table.add_column(col, justify="right")
        for r in table_rows(result):
            table.add_row(str(r["layer"]), *(fmt(r[m], 3) for m in TABLE_METRICS))
        console.print(table)
        c = result.meta["counts"]
        console.print(
            f"{c['words']} words x up to {c['max_contexts_per_word']} contexts ({c['word_occurrences']} occurrences); "
            f"{c['sentences']} sentences ({c['sentence_words']} words) for intra-sentence similarity. "
            "Adjusted = raw minus the anisotropy baseline (MEV: minus the MEV of random words)."
        )
        _footer(result)
    for metric, finding in results[0].meta["paper_findings"].items():
        console.print(f"[dim]paper ({metric}): {finding}[/dim]")


# --- retrieval -------------------------------------------------------------------------


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
    from contextlens.analyses.benchmarks.retrieval import evaluate_lee, evaluate_wordnet
    from contextlens.analyses.benchmarks.retrieval_table import retrieval_table
    from contextlens.reports.output_paths import FIGURE_SUFFIXES, check_output_path

    if task not in ("lee", "wordnet"):
        raise InputError(f"unknown --task {task!r}; use lee or wordnet")
    if plot is not None:
        plot = check_output_path(plot, FIGURE_SUFFIXES)  # before the work, not after it
    progress = console.is_terminal and not json_out
    if task == "lee":
        result = evaluate_lee(model, quick=quick, show_progress_bar=progress)
    else:
        result = evaluate_wordnet(model, sample=sample, seed=seed, quick=quick, show_progress_bar=progress)
    if plot is not None:
        from contextlens.reports.figures import save
        from contextlens.reports.retrieval_figures import retrieval_figure

        note(f"figure written to {save(retrieval_figure(result), plot)}")
    if json_out:
        print_json(result.to_dict())
        return
    render_retrieval(retrieval_table(result))


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
            row.kind,
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
