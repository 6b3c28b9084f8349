"""`contextlens eval similarity`: SimLex-999 and WordSim-353."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_MODEL,
    DEFAULT_STATIC_MODEL,
    DeviceOpt,
    JsonOpt,
    ModelOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    StaticOpt,
    ThreadsOpt,
    console,
    fmt,
)
from contextlens.cli.eval import (
    QuickOpt,
    eval_app,
    eval_command,
    layer_cell,
    lazy,
    model_title,
    size_name,
    timing_footer,
)

if TYPE_CHECKING:  # numpy comes with it: `--help` must not pay for it
    from contextlens.analyses.benchmarks.similarity import SimilarityResult


@eval_app.command("similarity")
def similarity_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    quick: QuickOpt = False,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """SimLex-999 and WordSim-353 Spearman: static model, and per layer template and pooled contexts."""
    run_similarity = lazy("contextlens.analyses.benchmarks.suite", "run_similarity")
    eval_command(
        model, precision, runtime, threads, json_out, plot, device=device,
        run=lambda loaded, progress: run_similarity()(loaded, static, size_name(quick), progress),
        figure=lazy("contextlens.reports.benchmark_figures", "similarity_figure"),
        table=_similarity_table,
    )  # fmt: skip


def _similarity_table(result: SimilarityResult) -> None:
    from contextlens.analyses.benchmarks.similarity import table_rows

    datasets = result.datasets
    table = Table(title=f"word similarity: Spearman with human ratings — {model_title(result)}")
    table.add_column("system", no_wrap=True)
    table.add_column("layer", justify="right")
    for ds in datasets:
        table.add_column(f"{ds} rho", justify="right")
        table.add_column("coverage", justify="right")
    for r in table_rows(result):
        cells = [r["system"], layer_cell(r["layer"])]
        for ds in datasets:
            coverage = r[f"{ds}:coverage"]
            cells += [fmt(r[f"{ds}:spearman"], 3), "-" if coverage is None else f"{coverage:.1%}"]
        table.add_row(*cells)
    console.print(table)
    console.print(
        f"template: {result.template!r}; pooled: mean over up to {result.contexts_per_word} "
        f"contexts from {result.context_corpus}. Coverage = share of pairs scored (1 - OOV share)."
    )
    timing_footer(result)
