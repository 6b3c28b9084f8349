"""`contextlens compare`: per-layer cosine of a target across sentences."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.cli import app
from contextlens.cli.common import (
    DEFAULT_MODEL,
    DEFAULT_STATIC_MODEL,
    HtmlOpt,
    JsonOpt,
    ModelOpt,
    OccurrenceOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    StaticOpt,
    ThreadsOpt,
    WordOpt,
    check_model,
    console,
    contextual_option,
    figures_after,
    fmt,
    print_json,
    static_option,
)
from contextlens.core.choices import POOLINGS
from contextlens.core.occurrences import locate_all
from contextlens.errors import InputError

if TYPE_CHECKING:
    from contextlens.analyses.lesson.divergence import Comparison


@app.command("compare")
def compare_cmd(
    sentences: Annotated[list[str], typer.Argument(help="Two or more sentences, target in \\[brackets].")],
    model: ModelOpt = DEFAULT_MODEL,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
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
    if pooling not in POOLINGS:
        raise InputError(f"unknown --pooling {pooling!r}; use one of {', '.join(POOLINGS)}")
    occs = locate_all(sentences, word, occurrence)
    if len(occs) < 2:
        raise InputError(
            "compare needs at least two sentences; give the same word in two or more contexts, "
            "e.g. 'The [bank] called.' 'The river [bank] flooded.'"
        )
    # everything checkable without weights is checked first: a word GloVe lacks costs no model load
    check_model(model, precision, runtime)
    static_model = static_option(static, [o.word for o in occs], optional=True)
    contextual = contextual_option(model, precision, threads, runtime)
    from contextlens.analyses.lesson.divergence import compare

    result = compare(occs, contextual, static_model, pooling=pooling)  # type: ignore[arg-type]
    from contextlens.reports import figures, interactive

    with figures_after(
        plot,
        html,
        lambda: figures.divergence_figure(result),
        lambda: interactive.divergence_figures(result),
        "contextlens compare",
    ):
        if json_out:
            print_json(result.to_dict())
        else:
            render_comparison(result)


def render_comparison(result: Comparison) -> None:
    """Sentences, then one row per layer with a bar, then the two static baselines."""
    for i, (o, toks) in enumerate(zip(result.occurrences, result.target_tokens, strict=True), 1):
        cut = "  [yellow](cut to a window around the target)[/yellow]" if result.truncated[i - 1] else ""
        console.print(f"[bold]{i}.[/bold] {escape(o.marked())}  [dim]tokens: {escape(' '.join(toks))}[/dim]{cut}")
    many = result.n > 2
    table = Table(title=f"{result.model}: cosine of the target's hidden states", title_justify="left")
    table.add_column("layer", justify="right")
    table.add_column("mean pairwise cosine" if many else "cosine", justify="right")
    if many:
        table.add_column("lowest pair", justify="right")
    table.add_column("", no_wrap=True)
    worst = result.most_divergent_layer
    for layer, cos, low in zip(result.layers, result.layer_cosines, result.lowest_pair_cosines, strict=True):
        cells = [str(layer), fmt(cos)] + ([fmt(low)] if many else []) + [_bar(cos)]
        table.add_row(*cells, style="bold red" if layer == worst else None)
    table.add_section()
    if result.static_cosine is not None:
        cells = ["static", fmt(result.static_cosine)]
        table.add_row(*cells, *([""] if many else []), _bar(result.static_cosine), style="blue")
    cells = ["input row", fmt(result.input_row_cosine)]
    table.add_row(*cells, *([""] if many else []), _bar(result.input_row_cosine), style="green")
    console.print(table)
    same = f"static vector ({result.static_model}) and input row are" if result.static_model else "input row is"
    console.print(
        f"most divergent layer: [bold red]{worst}[/bold red] (cosine {fmt(result.most_divergent_cosine)}); "
        f"{same} the same in every sentence"
    )


def _bar(cosine: float, width: int = 20) -> str:
    """A text bar for a cosine in [0, 1] (negative cosines draw no bar)."""
    filled = max(0, round(cosine * width))
    return "█" * filled + "·" * (width - filled)
