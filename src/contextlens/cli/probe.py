"""`contextlens probe`: the target scored against anchor words."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_MODEL,
    DEFAULT_STATIC_MODEL,
    AutoLayerOpt,
    DeviceOpt,
    HtmlOpt,
    JsonOpt,
    ModelOpt,
    OccurrenceOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    StaticOpt,
    TemplateOpt,
    ThreadsOpt,
    WordOpt,
    choose_auto_layer,
    console,
    figures_after,
    layer_numbers_to_check,
    layer_text,
    load_model,
    model_choice,
    print_json,
    static_option,
)
from contextlens.cli.registry import app
from contextlens.core.occurrences import is_single_word, locate_all


def split_anchor_words(arguments: list[str], anchors: list[str]) -> tuple[list[str], list[str]]:
    """``probe S --anchors shore deposit``: the shell hands 'deposit' over as a sentence. A bare word
    without [markers] cannot be a sentence here, so it joins the anchors (comma lists split too)."""
    sentences, extra = [], []
    for arg in arguments:
        (extra if anchors and is_single_word(arg) else sentences).append(arg)
    words = [w for a in anchors + extra for w in a.replace(",", " ").split()]
    return sentences, words


AnchorsOpt = Annotated[
    list[str] | None, typer.Option("--anchors", "-a", help="Anchor words, e.g. --anchors shore deposit.")
]
AnchorSentencesOpt = Annotated[
    Path | None, typer.Option("--anchor-sentences", help="TSV file: anchor<TAB>sentence with \\[anchor].")
]


@app.command("probe")
def probe_cmd(  # noqa: PLR0913 - a command: one parameter per option
    sentences: Annotated[list[str], typer.Argument(help="Sentences, target in \\[brackets].")],
    anchors: AnchorsOpt = None,
    anchor_sentences: AnchorSentencesOpt = None,
    template: TemplateOpt = "The word is [{word}].",
    layer: AutoLayerOpt = "-1",
    model: ModelOpt = DEFAULT_MODEL,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "auto",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    word: WordOpt = None,
    occurrence: OccurrenceOpt = 0,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
) -> None:
    """Score the target's hidden state against anchor words, layer by layer (the seed's bar chart),
    beside the static model's score (the same in every sentence)."""
    from contextlens.analyses.lesson.probe import load_anchor_sentences, probe

    texts, anchor_words = split_anchor_words(sentences, list(anchors or []))
    given = load_anchor_sentences(anchor_sentences) if anchor_sentences is not None else None
    occs = locate_all(texts, word, occurrence)
    wanted = layer_text(layer)
    chosen = model_choice(model, precision, runtime, layers=layer_numbers_to_check(wanted), device=device)
    anchors_to_check = [a.strip() for a in anchor_words if is_single_word(a.strip())]
    static_model = static_option(static, [o.word for o in occs] + anchors_to_check, optional=True)
    contextual = load_model(chosen, threads)
    choose_auto_layer(contextual, wanted)
    result = probe(occs, anchor_words, contextual, given, template=template, layer=wanted, static=static_model)
    with figures_after(plot, html, result, "contextlens probe"):
        if json_out:
            print_json(result.to_dict())
            return
        _print_probe(result)


def _print_probe(result) -> None:
    """Each sentence's table and closest anchor, then where the anchors came from and the baseline."""
    for i, s in enumerate(result.sentences):
        _print_sentence(result, i, s)
    sources = ", ".join(f"{a}: {s}" for a, s in zip(result.anchors, result.anchor_sources, strict=True))
    console.print(f"anchors ({escape(sources)}); template {escape(repr(result.template))}")
    for line in result.notes:
        console.print(f"[dim]{escape(line)}[/dim]")
    if result.baseline is not None:
        console.print(
            f"[dim]random: mean cosine of random pairs of different words in unrelated sentences at that layer "
            f"(5-95%: the middle 90% of them); {escape(result.baseline.describe())}[/dim]",
            soft_wrap=True,
        )
    elif result.baseline_missing:
        console.print(f"[dim]no random-word baseline: {escape(result.baseline_missing)}[/dim]")
    if result.static_scores is not None:
        console.print(f"static = cosine of {escape(result.static_model or '')} vectors: the same in every sentence")


def _print_sentence(result, i: int, s) -> None:
    """One sentence: its cosine with each anchor per layer, and the closest anchor at the chosen layer."""
    console.print(f"[bold]{i + 1}. {escape(s.occurrence.marked())}[/bold]")
    console.print(_scores_table(result, i, s))
    best = result.best_anchor(i)
    beside = result.beside(i)
    where = ""
    if beside is not None:
        b, score = beside[best], result.at()[i][result.anchors.index(best)]
        where = (
            f" (cosine {score:.3f}: above {b['percentile']:.1f}% of random pairs of different words at "
            f"that layer, {b['adjusted']:+.3f} over their mean)"
        )
    at = escape(result.layer_label)
    console.print(f"at {at} the closest anchor is [bold]{escape(best)}[/bold]{escape(where)}", soft_wrap=True)


def _scores_table(result, i: int, s) -> Table:
    """Per layer, the cosine with each anchor (the best in bold), the random band, and the static row."""
    table = Table(title=f"cosine with each anchor — {result.model}")
    table.add_column("layer", justify="right")
    for a in result.anchors:
        table.add_column(escape(a), justify="right")
    bands = result.layer_baselines()
    if bands[0] is not None:
        table.add_column("random", justify="right")
        table.add_column("5-95%", justify="right")
    for k, (lay, best) in enumerate(zip(result.layers, s.best_per_layer, strict=True)):
        cells = [f"[bold]{v:.4f}[/bold]" if j == best else f"{v:.4f}" for j, v in enumerate(s.scores[k])]
        if bands[k] is not None:
            cells += [f"{bands[k]['mean']:.3f}", f"{bands[k]['p5']:.2f}–{bands[k]['p95']:.2f}"]
        table.add_row(str(lay), *cells, style="on grey15" if lay == result.layer else None)
    if result.static_scores is not None:
        table.add_section()
        blanks = [""] * (2 if bands[0] is not None else 0)
        table.add_row("static", *(f"{v:.4f}" for v in result.static_scores[i]), *blanks, style="blue")
    return table
