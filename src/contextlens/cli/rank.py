"""`contextlens rank`: word pairs ranked by static and by contextual cosine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_MODEL,
    DEFAULT_STATIC_MODEL,
    DeviceOpt,
    HtmlOpt,
    JsonOpt,
    LayerOpt,
    ModelOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    TemplateOpt,
    ThreadsOpt,
    console,
    figures_after,
    fmt,
    load_model,
    model_choice,
    print_json,
    print_model_kind,
    static_option,
)
from contextlens.cli.registry import app

PairsArg = Annotated[
    Path | None, typer.Argument(help="TSV file of word pairs (word_a<TAB>word_b); default: 20 built-in pairs.")
]
StaticOpt = Annotated[
    str | None,
    typer.Option(
        "--static",
        "-s",
        help="Static model (default: a word2vec model made here with `contextlens static train`, as the seeds' "
        f"experiment asks, else {DEFAULT_STATIC_MODEL}).",
    ),
]


@app.command("rank")
def rank_cmd(  # noqa: PLR0913 - a command: one parameter per option
    pairs: PairsArg = None,
    model: ModelOpt = DEFAULT_MODEL,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "auto",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    static: StaticOpt = None,
    template: TemplateOpt = "The word is [{word}].",
    layer: LayerOpt = -1,
    top: Annotated[int, typer.Option("--top", "-k", help="How many of the largest rank moves to list.")] = 5,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
) -> None:
    """Word pairs ranked by static and by contextual cosine: inversions and Kendall tau."""
    from contextlens.analyses.lesson.ranking import load_pairs, rank_pairs, seeds_static, static_pair_cosines
    from contextlens.core.occurrences import in_template

    in_template("word", template)  # a bad template fails before any model loads
    pair_list = load_pairs(pairs)
    chosen = model_choice(model, precision, runtime, layers=[layer], device=device)
    source = str(pairs) if pairs else "built-in pairs"
    if static is None:  # the seeds' experiment: word2vec when one was made here
        choice = seeds_static(pair_list, DEFAULT_STATIC_MODEL)
        static, pair_list, why = choice.name, choice.pairs, choice.reason
        if choice.left_out:
            source += f" ({len(pair_list)} of {len(pair_list) + len(choice.left_out)}: {len(choice.left_out)} left out)"
    else:
        why = f"{static} (--static)"
    static_model = static_option(static)
    static_pair_cosines(pair_list, static_model)  # a word the static model lacks: refused before the weights
    result = rank_pairs(
        pair_list,
        load_model(chosen, threads),
        static_model,
        template=template,
        layer=layer,
        top=top,
        source=source,
    )
    with figures_after(plot, html, result, "contextlens rank"):
        if json_out:
            print_json(result.to_dict())
            return
        _print_ranking(result, why)


def _print_ranking(result, why: str) -> None:
    """The pairs in static-rank order beside their contextual rank, then the inversions and largest moves."""
    table = Table(
        title=escape(f"{len(result.pairs)} pairs — {result.static_model} vs {result.model} layer {result.layer}")
    )
    for col in ("pair", "static", "rank", "contextual", "rank ", "move"):
        table.add_column(col, justify="left" if col == "pair" else "right", no_wrap=True)
    for p in sorted(result.pairs, key=lambda r: r.static_rank):
        table.add_row(
            escape(f"{p.pair.a}–{p.pair.b}"),
            fmt(p.static_cosine),
            f"{p.static_rank:g}",
            fmt(p.contextual_cosine),
            f"{p.contextual_rank:g}",
            f"{p.move:+g}",
        )
    console.print(table)
    console.print("static / contextual: cosine; rank 1 = most similar; move = static rank − contextual rank")
    console.print(f"template: {escape(repr(result.template))}")
    console.print(f"static model: {escape(why)}")
    print_model_kind(result.model)
    console.print(
        f"inversions (discordant pairs of pairs): [bold]{result.inversions}[/bold] of {result.pairs_compared}; "
        f"Kendall τ-b = [bold]{result.kendall_tau:.4f}[/bold]"
    )
    moves = ", ".join(f"{p.pair.a}–{p.pair.b} ({p.move:+g})" for p in result.top_moves)
    console.print(f"largest rank moves (+ = more similar in context): {escape(moves)}")
