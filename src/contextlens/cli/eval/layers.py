"""`contextlens eval layers`: per-layer linear probes for part of speech and sense (Tenney et al. 2019)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
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
    chosen_models,
    eval_app,
    eval_output,
    eval_results,
    model_title,
    size_name,
    timing_footer,
)

if TYPE_CHECKING:  # numpy comes with it: `--help` must not pay for it
    from contextlens.analyses.benchmarks.layer_probes import LayerProbeResult


@eval_app.command("layers")
def layers_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    also: Annotated[list[str] | None, typer.Option("--also", help="Another model, drawn on the same figure.")] = None,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    quick: QuickOpt = False,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Which layer knows part of speech, which knows sense: linear probes per layer, lemmas kept apart."""
    chosen = chosen_models([model, *(also or [])], precision, runtime, device)
    from contextlens.analyses.benchmarks.layer_probes import run_layer_probes
    from contextlens.core.static_models import optional_static
    from contextlens.reports.claims_figures import layer_probe_figure

    static_model = optional_static(static, optional=False)
    results = eval_results(
        chosen, threads,
        lambda loaded, progress: run_layer_probes(loaded, static_model, size_name(quick), progress),
    )  # fmt: skip
    eval_output(
        results, plot, lambda: layer_probe_figure, json_out,
        lambda: results[0].to_dict() if len(results) == 1 else [r.to_dict() for r in results],
        lambda: _layers_tables(results, static_model.name),
    )  # fmt: skip


def _layers_tables(results: list[LayerProbeResult], static_name: str) -> None:
    for result in results:
        table = Table(title=f"linear probe accuracy per layer — {model_title(result)} (lemmas kept apart, 5 folds)")
        splits = ("pos", "pos-control", "sense", "sense-control")
        table.add_column("layer", justify="right")
        for split in splits:
            table.add_column(split, justify="right")
        for layer in range(result.num_layers + 1):
            values = (result.value(system=result.model, layer=layer, split=s) for s in splits)
            table.add_row(str(layer), *(fmt(v, 3) for v in values))
        for system in (f"{result.model} input row", static_name):
            table.add_row(system, *(fmt(result.value(system=system, split=s), 3) for s in splits))
        expected = result.expected_layer
        table.add_row("expected layer", *(fmt(expected[s], 2) for s in splits), style="bold")
        console.print(table)
        pos, sense = result.counts["pos"], result.counts["sense"]
        console.print(
            f"pos: {pos.examples} examples of {pos.lemmas} lemmas (noun/verb, majority {pos.majority:.2f}); "
            f"sense: {sense.examples} examples of {sense.lemmas} polysemous nouns, {len(sense.labels)} supersenses "
            f"(majority {sense.majority:.2f}); controls: a random label per word type"
        )
        timing_footer(result)
    console.print(f"[dim]paper: {results[0].paper}[/dim]")
