"""`contextlens compare`: per-layer cosine of a target across sentences."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_STATIC_MODEL,
    DeviceOpt,
    HtmlOpt,
    JsonOpt,
    ModelsOpt,
    OccurrenceOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    StaticOpt,
    ThreadsOpt,
    WordOpt,
    console,
    fmt,
    load_model,
    model_choice,
    models_option,
    print_model_kind,
    static_option,
)
from contextlens.cli.registry import app
from contextlens.cli.side_by_side import answer_and_show
from contextlens.core import arguments
from contextlens.core.choices import check_pooling
from contextlens.core.occurrences import locate_all

if TYPE_CHECKING:
    from contextlens.analyses.lesson.divergence import Comparison


@app.command("compare")
def compare_cmd(  # noqa: PLR0913 - a command: one parameter per option
    sentences: Annotated[list[str], typer.Argument(help="Two or more sentences, target in \\[brackets].")],
    model: ModelsOpt = None,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "auto",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    word: WordOpt = None,
    occurrence: OccurrenceOpt = 0,
    pooling: Annotated[str, typer.Option(help="Pool a multi-token word: mean, first or last.")] = "mean",
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
) -> None:
    """Per-layer cosine of the target across sentences, beside its static vector and input row."""
    check_pooling(pooling)
    occs = locate_all(sentences, word, occurrence)
    arguments.sentences_to_compare(occs)
    # everything checkable without weights is checked first: a word GloVe lacks costs no model load
    chosen = [model_choice(name, precision, runtime, device=device) for name in models_option(model)]
    static_model = static_option(static, [o.word for o in occs], optional=True)
    models = [load_model(one, threads) for one in chosen]
    from contextlens.analyses.lesson.divergence import compare

    def ask(contextual):  # noqa: ANN001, ANN202 - one model's comparison
        return compare(occs, contextual, static_model, pooling=pooling)  # type: ignore[arg-type]

    answer_and_show(models, ask, render_comparison, command="compare", json_out=json_out, plot=plot, html=html)


def render_comparison(result: Comparison) -> None:
    """Sentences, then one row per layer with its random-word baseline and a bar, then the two
    static baselines, then what the numbers mean for these sentences."""
    for i, (o, toks) in enumerate(zip(result.occurrences, result.display_target_tokens, strict=True), 1):
        cut = "  [yellow](cut to a window around the target)[/yellow]" if result.truncated[i - 1] else ""
        console.print(f"[bold]{i}.[/bold] {escape(o.marked())}  [dim]tokens: {escape(' '.join(toks))}[/dim]{cut}")
    print_model_kind(result.model)
    many = result.n > 2
    table = Table(title=f"{result.model}: cosine of the target's hidden states", title_justify="left")
    table.add_column("layer", justify="right")
    table.add_column("mean pairwise cosine" if many else "cosine", justify="right")
    if many:
        table.add_column("lowest pair", justify="right")
    with_base = result.baseline is not None
    if with_base:
        table.add_column("random", justify="right")
        table.add_column("pct", justify="right")
        table.add_column("− random", justify="right")
    table.add_column("", no_wrap=True)
    worst = result.most_divergent_layer
    rows = zip(
        result.layers,
        result.layer_cosines,
        result.lowest_pair_cosines,
        result.lowest_pairs,
        result.layer_baselines(),
        strict=True,
    )
    for layer, cos, low, pair, base in rows:
        cells = [str(layer), fmt(cos)] + ([f"{fmt(low)} {pair[0]}–{pair[1]}"] if many else [])
        if base is not None:
            cells += [f"{base['mean']:.2f}", f"{base['percentile']:.0f}", f"{base['adjusted']:+.2f}"]
        mark = None if base is None else base["mean"]
        table.add_row(*cells, _bar(cos, 12 if many else 20, mark), style="bold red" if layer == worst else None)
    table.add_section()
    blanks = [""] * ((1 if many else 0) + (3 if with_base else 0))
    if result.static_cosine is not None:
        cells = ["static", fmt(result.static_cosine)]
        table.add_row(*cells, *blanks, _bar(result.static_cosine, 12 if many else 20), style="blue")
    cells = ["input row", fmt(result.input_row_cosine)]
    table.add_row(*cells, *blanks, _bar(result.input_row_cosine, 12 if many else 20), style="green")
    console.print(table)
    console.print(f"most divergent layer: [bold red]{worst}[/bold red] (cosine {fmt(result.most_divergent_cosine)})")
    for note in result.notes():
        console.print(f"[dim]{escape(note)}[/dim]")
    if result.baseline is not None:
        console.print(f"[dim]{escape(result.baseline.describe())}; ┃ in a bar marks the random mean[/dim]")


def _bar(cosine: float, width: int = 20, mark: float | None = None) -> str:
    """A text bar for a cosine in [0, 1] (negative cosines draw no bar); ``mark`` (the random-word
    baseline mean) is drawn as ┃ at its place."""
    filled = max(0, min(width, round(cosine * width)))
    cells = ["█"] * filled + ["·"] * (width - filled)
    if mark is not None:
        cells[max(0, min(width - 1, round(mark * width)))] = "┃"
    return "".join(cells)
