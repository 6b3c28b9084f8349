"""`contextlens eval wsi`: word sense induction (per-lemma clustering) on WordNet examples."""

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
    from contextlens.analyses.benchmarks.wsi import WsiResult


@eval_app.command("wsi")
def wsi_cmd(
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
    """Sense induction per layer: cluster each lemma's examples, score against WordNet senses
    (ARI, V-measure, B-cubed F1), beside one-cluster, one-per-instance and static baselines."""
    run_wsi = lazy("contextlens.analyses.benchmarks.wsi", "run_wsi")
    eval_command(
        model, precision, runtime, threads, json_out, plot, device=device,
        run=lambda loaded, progress: run_wsi()(loaded, static, size_name(quick), progress),
        figure=lazy("contextlens.reports.benchmark_figures", "wsi_figure"),
        table=_wsi_table,
    )  # fmt: skip


def _wsi_table(result: WsiResult) -> None:
    from contextlens.analyses.benchmarks.wsi import table_rows

    table = Table(title=f"word sense induction (WordNet 3.0 examples) — {model_title(result)}")
    for col in ("system", "layer", "dev ARI", "test ARI", "test V-measure", "test B-cubed F1", "mean k"):
        table.add_column(col, justify="right" if col != "system" else "left", no_wrap=col == "system")
    for r in table_rows(result):
        cells = (fmt(r["dev_ari"], 3), fmt(r["test_ari"], 3), fmt(r["test_v_measure"], 3), fmt(r["test_bcubed_f1"], 3))
        k = fmt(r["mean_clusters"], 2) if r["mean_clusters"] is not None else "-"
        table.add_row(r["system"], layer_cell(r["layer"]), *cells, k, style="bold red" if r["best"] else None)
    console.print(table)
    c = result.counts
    console.print(
        f"{c.test_lemmas} test lemmas ({c.test_instances} examples), {c.dev_lemmas} dev lemmas "
        f"({c.dev_instances} examples), {c.senses_per_lemma} senses per lemma on average; no lemma in both. "
        f"Scores: {result.averaging}. Clusters: {result.clustering}."
    )
    b = result.best_layer
    if b:
        console.print(
            f"best layer by dev ARI: [bold red]{b.layer_by_dev}[/bold red] (test ARI "
            f"{b.test_ari_at_dev_layer:.3f}); best test layer {b.best_test_layer} ({b.best_test_ari:.3f})"
        )
    timing_footer(result)
