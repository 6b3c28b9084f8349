"""`contextlens explore`: the polysemy explorer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.cli.common import (
    AutoLayerOpt,
    DeviceOpt,
    HtmlOpt,
    JsonOpt,
    ModelsOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    choose_auto_layer,
    console,
    contextual_option,
    fmt,
    fmt_p,
    layer_numbers_to_check,
    layer_text,
    models_option,
)
from contextlens.cli.registry import app
from contextlens.cli.side_by_side import answer_and_show

if TYPE_CHECKING:
    from contextlens.analyses.lesson.polysemy import Exploration


@app.command("explore")
def explore_cmd(  # noqa: PLR0913 - a command: one parameter per option
    words: Annotated[
        list[str] | None, typer.Argument(help="Words to explore (default: every word in the set).")
    ] = None,
    sentences: Annotated[
        Path | None, typer.Option("--sentences", help="TSV file: word<TAB>sense<TAB>sentence with \\[target].")
    ] = None,
    layer: AutoLayerOpt = "-1",
    model: ModelsOpt = None,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "auto",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    permutations: Annotated[int, typer.Option(help="Label shuffles for the permutation test.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the label shuffles.")] = 0,
    matrices: Annotated[bool, typer.Option("--matrices", help="Also print each word's cosine matrix.")] = False,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
) -> None:
    """The polysemy explorer: pairwise cosines of a word over its sentences, spread, sense separation."""
    from contextlens.analyses.lesson.polysemy import explore, load_sense_sentences

    data = load_sense_sentences(sentences) if sentences is not None else None
    source = str(sentences) if sentences is not None else None
    wanted = layer_text(layer)
    names = models_option(model)
    layers = layer_numbers_to_check(wanted)
    models = [contextual_option(name, precision, threads, runtime, layers=layers, device=device) for name in names]

    def ask(contextual):  # noqa: ANN001, ANN202 - one model's exploration
        choose_auto_layer(contextual, wanted)
        return explore(words or [], contextual, data, wanted, permutations, seed, source=source, show_progress_bar=True)

    answer_and_show(models, ask, lambda result: render_exploration(result, matrices), command="explore",
                    json_out=json_out, plot=plot, html=html)  # fmt: skip


def render_exploration(result: Exploration, matrices: bool = False) -> None:
    """The ranking, the baseline line, the gap per layer, the p-values' test, and each matrix if asked."""
    table = Table(title=f"polysemy explorer — {result.model}, {result.layer_label}, ranked by spread")
    with_base = result.baseline is not None
    columns = ("#", "word", "sents", "senses", "spread") + (("pct",) if with_base else ())
    for col in columns + ("same", "cross", "gap", "p"):
        table.add_column(col, justify="left" if col == "word" else "right", no_wrap=True)
    for i, w in enumerate(result.words, 1):
        base = w.chosen_baseline
        table.add_row(
            str(i),
            escape(w.word),
            str(len(w.occurrences)),
            str(len(w.distinct_senses)) if w.distinct_senses else "-",
            fmt(w.spread, 3),
            *((f"{base['percentile']:.0f}",) if base is not None else ()),
            fmt(w.same_sense_cosine, 3),
            fmt(w.cross_sense_cosine, 3),
            fmt(w.gap, 3),
            fmt_p(w.p_value),
        )
    console.print(table)
    print_baseline_line(result)
    labelled = [w for w in result.words if w.labelled]
    if labelled:
        console.print(_gap_table(labelled))
    for w in result.words:
        if w.no_gap_reason:
            console.print(f"[dim]{escape(w.word)}: no gap: {escape(w.no_gap_reason)}[/dim]")
    console.print(f"spread = 1 − mean pairwise cosine; p: {result.p_floor_note()}")
    if matrices:
        for w in result.words:
            _print_matrix(w)


def _gap_table(labelled: list) -> Table:
    """The separation gap of each labelled word per layer, its permutation p beside it."""
    per_layer = Table(title="separation gap (same − cross sense cosine) per layer, permutation p in brackets")
    per_layer.add_column("layer", justify="right")
    for w in labelled:
        per_layer.add_column(escape(w.word), justify="right")
    for k, lay in enumerate(labelled[0].layers):
        per_layer.add_row(str(lay), *[f"{w.gaps[k]:+.3f} ({w.p_values[k]:.3f})" for w in labelled])
    return per_layer


def _print_matrix(w) -> None:
    """One word's cosine matrix at its layer, then its sentences numbered as the matrix's rows."""
    m = Table(title=escape(f"“{w.word}”: cosine at layer {w.layer}"))
    m.add_column("#", justify="right")
    m.add_column("sense")
    for j in range(len(w.occurrences)):
        m.add_column(str(j + 1), justify="right")
    for i, s in enumerate(w.senses):
        m.add_row(str(i + 1), escape(s or "-"), *[f"{v:.2f}" for v in w.matrix[i]])
    console.print(m)
    for i, o in enumerate(w.occurrences, 1):
        console.print(f"  [dim]{i}. {escape(o.marked())}[/dim]")


def print_baseline_line(result: Exploration) -> None:
    """The random-word baseline at the chosen layer, and what pct and − random mean (or why there is none)."""
    if result.baseline is None:
        if result.baseline_missing:
            console.print(f"[dim]no random-word baseline: {escape(result.baseline_missing)}[/dim]")
        return
    b = result.baseline.layer(result.layer)
    console.print(
        f"[dim]random-word baseline at layer {result.layer}: mean cosine {b.mean:.3f} (5-95%: {b.p5:.3f} to "
        f"{b.p95:.3f}) over random pairs of different words in unrelated sentences; pct: the share of those pairs "
        f"at or below the word's mean pairwise cosine (1 − spread) (the JSON also has that cosine minus the mean). "
        f"{escape(result.baseline.describe())}[/dim]",
        soft_wrap=True,
    )
