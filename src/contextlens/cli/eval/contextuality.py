"""`contextlens eval contextuality`: Ethayarajh (2019) per layer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.cli.common import (
    DEFAULT_MODEL,
    JsonOpt,
    ModelOpt,
    PlotOpt,
    PrecisionOpt,
    ThreadsOpt,
    console,
    contextual_option,
    fmt,
    print_json,
)
from contextlens.cli.eval import QuickOpt, encoding_progress, eval_app, plot_after, size_name, timing_footer
from contextlens.errors import InputError


@eval_app.command("contextuality")
def contextuality_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    also: Annotated[
        list[str] | None, typer.Option("--also", help="Another model to measure and draw on the same figure.")
    ] = None,
    quick: QuickOpt = False,
    corpus: Annotated[
        Path | None,
        typer.Option("--corpus", help="An extraction folder (`corpus extract`): words with >= --min-contexts."),
    ] = None,
    min_contexts: Annotated[int, typer.Option("--min-contexts", help="With --corpus: contexts a word needs.")] = 50,
    precision: PrecisionOpt = "fp32",
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Ethayarajh (2019) per layer: anisotropy, self-similarity, intra-sentence similarity, MEV."""
    from contextlens.analyses.benchmarks.suite import run_contextuality
    from contextlens.reports.benchmark_figures import contextuality_figure

    if corpus is not None:
        from contextlens.analyses.corpus.contextuality import corpus_contextuality

        if plot is not None:
            raise InputError("--plot is not drawn with --corpus yet (the figure assumes WordNet examples); drop it")
        result = corpus_contextuality(corpus, min_contexts)
        if json_out:
            print_json(result.to_dict())
        else:
            _corpus_table(result)
        return
    results = []
    for name in [model, *(also or [])]:
        with encoding_progress(name) as progress:
            results.append(run_contextuality(contextual_option(name, precision, threads), size_name(quick), progress))
    with plot_after(results, plot, contextuality_figure):
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
        timing_footer(result)
    for metric, finding in results[0].meta["paper_findings"].items():
        console.print(f"[dim]paper ({metric}): {finding}[/dim]")


def _corpus_table(result: BenchmarkResult) -> None:
    from contextlens.analyses.benchmarks.contextuality import table_rows

    c = result.meta["counts"]
    table = Table(title=f"how contextual on a corpus? (Ethayarajh 2019) — {result.model}")
    for col in ("layer", "anisotropy", "self-sim", "adjusted", "MEV", "adjusted"):
        table.add_column(col, justify="right")
    for r in table_rows(result):
        table.add_row(
            str(r["layer"]),
            *(
                fmt(r[m], 3)
                for m in ("anisotropy", "self_similarity", "self_similarity_adjusted", "mev", "mev_adjusted")
            ),
        )
    console.print(table)
    per = c["contexts_per_word"]
    console.print(
        f"{c['words']} words with >= {c['min_contexts']} contexts (min {per['min']}, median {per['median']}, "
        f"max {per['max']}; {c['word_occurrences']} occurrences) from {result.meta['corpus']}. "
        f"Paper (MEV): {result.meta['paper_findings']['mev']}",
        soft_wrap=True,
    )
