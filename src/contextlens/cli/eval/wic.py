"""`contextlens eval wic`: word in context on WordNet pairs."""

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
    from contextlens.analyses.benchmarks.wic import WicResult


@eval_app.command("wic")
def wic_cmd(
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
    """Word in context on WordNet pairs: per-layer accuracy with a dev-tuned cosine threshold."""
    run_wic = lazy("contextlens.analyses.benchmarks.suite", "run_wic")
    eval_command(
        model, precision, runtime, threads, json_out, plot, device=device,
        run=lambda loaded, progress: run_wic()(loaded, static, size_name(quick), progress),
        figure=lazy("contextlens.reports.benchmark_figures", "wic_figure"),
        table=_wic_table,
    )  # fmt: skip


def _wic_table(result: WicResult) -> None:
    from contextlens.analyses.benchmarks.wic import table_rows

    dev, test, best = result.dev, result.test, result.best_layer
    table = Table(title=f"word in context (WordNet 3.0 pairs) — {model_title(result)}")
    for col in ("system", "layer", "dev accuracy", "threshold", "test accuracy"):
        table.add_column(col, justify="right" if col != "system" else "left", no_wrap=col == "system")
    for r in table_rows(result):
        if r["published"]:
            table.add_row(f"[dim]{r['system']}[/dim]", "-", "-", "-", f"[dim]{r['test_accuracy']:.3f}[/dim]")
            continue
        table.add_row(
            r["system"],
            layer_cell(r["layer"]),
            fmt(r["dev_accuracy"], 3),
            fmt(r["threshold"], 3),
            fmt(r["test_accuracy"], 3),
            style="bold red" if r["best"] else None,
        )
    console.print(table)
    console.print(
        f"test: {test.pairs} pairs ({test.same} same / {test.different} different) over {test.lemmas} lemmas; "
        f"dev: {dev.pairs} pairs over {dev.lemmas} lemmas; no lemma in both."
    )
    console.print(
        f"best layer by dev accuracy: [bold red]{best.layer_by_dev}[/bold red] (test "
        f"{best.test_accuracy_at_dev_layer:.3f}); best test layer {best.best_test_layer} "
        f"({best.best_test_accuracy:.3f})"
    )
    console.print(f"[dim]note: {result.published_note}[/dim]")
    timing_footer(result)
