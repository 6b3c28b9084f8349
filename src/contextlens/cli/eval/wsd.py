"""`contextlens eval wsd`: nearest-sense disambiguation on WordNet examples."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_MODEL,
    DeviceOpt,
    JsonOpt,
    ModelOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
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
    from contextlens.analyses.benchmarks.wsd import WsdResult


@eval_app.command("wsd")
def wsd_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    glosses: Annotated[
        bool, typer.Option("--glosses", help="Also score sense vectors that include each sense's WordNet gloss.")
    ] = False,
    quick: QuickOpt = False,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Sense disambiguation by the nearest sense centroid per layer, beside MFS (SemCor) and random."""
    run_wsd = lazy("contextlens.analyses.benchmarks.suite", "run_wsd")
    eval_command(
        model, precision, runtime, threads, json_out, plot, device=device,
        run=lambda loaded, progress: run_wsd()(loaded, size_name(quick), progress, glosses=glosses),
        figure=lazy("contextlens.reports.benchmark_figures", "wsd_figure"),
        table=_wsd_table,
    )  # fmt: skip


def _wsd_table(result: WsdResult) -> None:
    from contextlens.analyses.benchmarks.wsd import random_expected_accuracy, table_rows

    table = Table(title=f"word sense disambiguation (WordNet 3.0 examples) — {model_title(result)}")
    for col in ("system", "layer", "dev accuracy", "test accuracy", "test macro-F1"):
        table.add_column(col, justify="right" if col != "system" else "left", no_wrap=col == "system")
    for r in table_rows(result):
        cells = (fmt(r["dev_accuracy"], 3), fmt(r["test_accuracy"], 3), fmt(r["test_macro_f1"], 3))
        table.add_row(r["system"], layer_cell(r["layer"]), *cells, style="bold red" if r["best"] else None)
    console.print(table)
    c = result.counts
    console.print(
        f"{c.lemma_pos} lemmas (with part of speech), {c.senses} senses from {c.train_examples} "
        f"examples; held out and scored: {c.scored_test_examples} test examples ({c.test_lemmas} lemmas), "
        f"{c.scored_dev_examples} dev examples ({c.dev_lemmas} lemmas); no lemma in both. "
        f"Random-sense expected accuracy {fmt(random_expected_accuracy(result), 3)}."
    )
    for label, b in (("", result.best_layer), (" (with glosses)", result.best_layer_glosses)):
        if b:
            console.print(
                f"best layer by dev accuracy{label}: [bold red]{b.layer_by_dev}[/bold red] (test "
                f"{b.test_accuracy_at_dev_layer:.3f}); best test layer {b.best_test_layer} "
                f"({b.best_test_accuracy:.3f})"
            )
    timing_footer(result)
