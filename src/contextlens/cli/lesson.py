"""The lesson's experiments as commands: explore, rank, attention, probe, trace."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    StaticOpt,
    WordOpt,
    console,
    fmt,
    note,
    occurrences_from_args,
    print_json,
)
from contextlens.core.contextual_models import load_contextual
from contextlens.core.occurrences import is_single_word
from contextlens.errors import InputError

LayerOpt = Annotated[int, typer.Option("--layer", "-l", help="Hidden-state layer (0..L, negative from the top).")]
TemplateOpt = Annotated[
    str, typer.Option("--template", help="Neutral sentence for a lone word; '[{word}]' marks where it goes.")
]
ExcludeSpecialOpt = Annotated[
    bool,
    typer.Option("--exclude-special", help="Drop [CLS]/[SEP]-like tokens and renormalise the attention rows."),
]


def _figures(plot: Path | None, html: Path | None, png_figure, html_figures, title: str) -> None:
    """Write the PNG and/or the interactive HTML the user asked for."""
    if plot is not None:
        from contextlens.reports.figures import save

        note(f"figure written to {save(png_figure(), plot)}")
    if html is not None:
        from contextlens.reports.interactive import write_page

        note(f"interactive figure written to {write_page(html_figures(), html, title)}")


def _p(p: float | None) -> str:
    return "-" if p is None else f"{p:.3f}"


# --- explore ---------------------------------------------------------------------------------


@app.command("explore")
def explore_cmd(
    words: Annotated[
        list[str] | None, typer.Argument(help="Words to explore (default: every word in the set).")
    ] = None,
    sentences: Annotated[
        Path | None, typer.Option("--sentences", help="TSV file: word<TAB>sense<TAB>sentence with \\[target].")
    ] = None,
    layer: LayerOpt = -1,
    model: ModelOpt = DEFAULT_MODEL,
    permutations: Annotated[int, typer.Option(help="Label shuffles for the permutation test.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the label shuffles.")] = 0,
    matrices: Annotated[bool, typer.Option("--matrices", help="Also print each word's cosine matrix.")] = False,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
) -> None:
    """The polysemy explorer: pairwise cosines of a word over its sentences, spread, sense separation."""
    from contextlens.analyses.polysemy import explore, load_sense_sentences

    data = load_sense_sentences(sentences) if sentences is not None else None
    source = str(sentences) if sentences is not None else None
    result = explore(
        words or [], load_contextual(model), data, layer, permutations, seed, source=source, show_progress_bar=True
    )
    from contextlens.reports import interactive, lesson_figures

    _figures(
        plot,
        html,
        lambda: lesson_figures.explore_figure(result),
        lambda: interactive.explore_figures(result),
        "contextlens explore",
    )
    if json_out:
        print_json(result.to_dict())
        return
    table = Table(title=f"polysemy explorer — {result.model}, layer {result.layer}, ranked by spread")
    for col in ("rank", "word", "sentences", "senses", "spread", "same", "cross", "gap", "p"):
        table.add_column(col, justify="left" if col == "word" else "right", no_wrap=True)
    for i, w in enumerate(result.words, 1):
        k = w.layers.index(w.layer)
        senses = sorted({s for s in w.senses if s is not None})
        table.add_row(
            str(i),
            escape(w.word),
            str(len(w.occurrences)),
            str(len(senses)) if senses else "-",
            fmt(w.spread, 3),
            fmt(None if w.same_sense is None else w.same_sense[k], 3),
            fmt(None if w.cross_sense is None else w.cross_sense[k], 3),
            fmt(w.gap, 3),
            _p(w.p_value),
        )
    console.print(table)
    labelled = [w for w in result.words if w.labelled]
    if labelled:
        per_layer = Table(title="separation gap (same − cross sense cosine) per layer, permutation p in brackets")
        per_layer.add_column("layer", justify="right")
        for w in labelled:
            per_layer.add_column(escape(w.word), justify="right")
        for k, lay in enumerate(labelled[0].layers):
            per_layer.add_row(str(lay), *[f"{w.gaps[k]:+.3f} ({w.p_values[k]:.3f})" for w in labelled])
        console.print(per_layer)
    console.print(
        f"spread = 1 − mean pairwise cosine; p: one-sided permutation test, {result.permutations} shuffles of the "
        f"sense labels, seed {result.seed}"
    )
    if matrices:
        for w in result.words:
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


# --- rank ------------------------------------------------------------------------------------


@app.command("rank")
def rank_cmd(
    pairs: Annotated[
        Path | None, typer.Argument(help="TSV file of word pairs (word_a<TAB>word_b); default: 20 built-in pairs.")
    ] = None,
    model: ModelOpt = DEFAULT_MODEL,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    template: TemplateOpt = "The word is [{word}].",
    layer: LayerOpt = -1,
    top: Annotated[int, typer.Option("--top", "-k", help="How many of the largest rank moves to list.")] = 5,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
) -> None:
    """Word pairs ranked by static and by contextual cosine: inversions and Kendall tau."""
    from contextlens.analyses.ranking import in_template, load_pairs, rank_pairs
    from contextlens.core.static_models import load_static

    in_template("word", template)  # a bad template fails before any model loads
    pair_list = load_pairs(pairs)
    result = rank_pairs(
        pair_list,
        load_contextual(model),
        load_static(static),
        template=template,
        layer=layer,
        top=top,
        source=str(pairs) if pairs else "built-in pairs",
    )
    from contextlens.reports import interactive, lesson_figures

    _figures(
        plot,
        html,
        lambda: lesson_figures.slope_figure(result),
        lambda: interactive.slope_figures(result),
        "contextlens rank",
    )
    if json_out:
        print_json(result.to_dict())
        return
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
    total = len(result.pairs) * (len(result.pairs) - 1) // 2
    console.print(f"template: {escape(repr(result.template))}")
    console.print(
        f"inversions (discordant pairs of pairs): [bold]{result.inversions}[/bold] of {total}; "
        f"Kendall τ-b = [bold]{result.kendall_tau:.4f}[/bold]"
    )
    moves = ", ".join(f"{p.pair.a}–{p.pair.b} ({p.move:+g})" for p in result.top_moves)
    console.print(f"largest rank moves (+ = more similar in context): {escape(moves)}")


# --- attention -------------------------------------------------------------------------------


@app.command("attention")
def attention_cmd(
    sentences: Annotated[list[str], typer.Argument(help="One or two sentences, target in \\[brackets].")],
    layer: Annotated[int, typer.Option("--layer", "-l", help="Attention layer 1..L (block L) for close-ups.")] = 6,
    head: Annotated[int, typer.Option("--head", help="Attention head 0..H-1 for close-ups.")] = 3,
    exclude_special: ExcludeSpecialOpt = False,
    top: Annotated[int, typer.Option("--top", "-k", help="Tokens listed per layer.")] = 3,
    model: ModelOpt = DEFAULT_MODEL,
    word: WordOpt = None,
    occurrence: OccurrenceOpt = 0,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
) -> None:
    """Which tokens the target attends to, per layer and head, with the head mean and attention rollout."""
    from contextlens.analyses.attention import attend

    occs = occurrences_from_args(sentences, word, occurrence)
    if len(occs) > 2:
        raise InputError(f"attention shows one or two sentences side by side, got {len(occs)}")
    result = attend(occs, load_contextual(model), layer=layer, head=head, exclude_special=exclude_special)
    from contextlens.reports import interactive, lesson_figures

    _figures(
        plot,
        html,
        lambda: lesson_figures.attention_figure(result),
        lambda: interactive.attention_figures(result),
        "contextlens attention",
    )
    if json_out:
        print_json(result.to_dict())
        return
    for i, m in enumerate(result.maps, 1):
        console.rule(f"[bold]{i}. {escape(m.occurrence.marked())}")
        table = Table(title=f"attention of “{escape(' '.join(m.target_tokens))}” — {result.model}")
        table.add_column("token")
        table.add_column(f"L{result.layer} H{result.head}", justify="right")
        table.add_column(f"L{result.layer} head mean", justify="right")
        table.add_column(f"rollout to L{m.num_layers}", justify="right")
        for t, tok in enumerate(m.tokens):
            if exclude_special and m.special[t]:
                continue
            style = "bold" if t in m.target_positions else ("dim" if m.special[t] else None)
            table.add_row(
                escape(tok),
                fmt(m.row(result.layer, result.head)[t], 3),
                fmt(m.row(result.layer)[t], 3),
                fmt(m.rollout[-1][t], 3),
                style=style,
            )
        console.print(table)
        tops = Table(title="most attended tokens per layer (head mean)")
        tops.add_column("layer", justify="right")
        tops.add_column("tokens")
        for lay in range(1, m.num_layers + 1):
            tops.add_row(str(lay), escape(", ".join(f"{tok} {w:.2f}" for tok, w in m.top(lay, top))))
        console.print(tops)
    if exclude_special:
        console.print("special tokens excluded; every row renormalised over the remaining tokens")
    console.print("layers are attention blocks 1..L; heads 0..H-1; rollout: Abnar & Zuidema (2020)")


# --- probe -----------------------------------------------------------------------------------


def split_anchor_words(arguments: list[str], anchors: list[str]) -> tuple[list[str], list[str]]:
    """``probe S --anchors shore deposit``: the shell hands 'deposit' over as a sentence. A bare word
    without [markers] cannot be a sentence here, so it joins the anchors (comma lists split too)."""
    sentences, extra = [], []
    for arg in arguments:
        (extra if anchors and is_single_word(arg) else sentences).append(arg)
    words = [w for a in anchors + extra for w in a.replace(",", " ").split()]
    return sentences, words


@app.command("probe")
def probe_cmd(
    sentences: Annotated[list[str], typer.Argument(help="Sentences, target in \\[brackets].")],
    anchors: Annotated[
        list[str] | None, typer.Option("--anchors", "-a", help="Anchor words, e.g. --anchors shore deposit.")
    ] = None,
    anchor_sentences: Annotated[
        Path | None, typer.Option("--anchor-sentences", help="TSV file: anchor<TAB>sentence with \\[anchor].")
    ] = None,
    template: TemplateOpt = "The word is [{word}].",
    layer: LayerOpt = -1,
    model: ModelOpt = DEFAULT_MODEL,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    word: WordOpt = None,
    occurrence: OccurrenceOpt = 0,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
) -> None:
    """Score the target's hidden state against anchor words, layer by layer (the seed's bar chart),
    beside the static model's score (the same in every sentence)."""
    from contextlens.analyses.probe import load_anchor_sentences, probe

    texts, anchor_words = split_anchor_words(sentences, list(anchors or []))
    given = load_anchor_sentences(anchor_sentences) if anchor_sentences is not None else None
    occs = occurrences_from_args(texts, word, occurrence)
    from contextlens.core.static_models import load_static

    static_model = load_static(static)
    result = probe(
        occs, anchor_words, load_contextual(model), given, template=template, layer=layer, static=static_model
    )
    from contextlens.reports import interactive, lesson_figures

    _figures(
        plot,
        html,
        lambda: lesson_figures.probe_figure(result),
        lambda: interactive.probe_figures(result),
        "contextlens probe",
    )
    if json_out:
        print_json(result.to_dict())
        return
    for i, s in enumerate(result.sentences):
        console.print(f"[bold]{i + 1}. {escape(s.occurrence.marked())}[/bold]")
        table = Table(title=f"cosine with each anchor — {result.model}")
        table.add_column("layer", justify="right")
        for a in result.anchors:
            table.add_column(escape(a), justify="right")
        for k, lay in enumerate(result.layers):
            best = int(s.scores[k].argmax())
            cells = [f"[bold]{v:.4f}[/bold]" if j == best else f"{v:.4f}" for j, v in enumerate(s.scores[k])]
            table.add_row(str(lay), *cells, style="on grey15" if lay == result.layer else None)
        if result.static_scores is not None:
            table.add_section()
            table.add_row("static", *(f"{v:.4f}" for v in result.static_scores[i]), style="blue")
        console.print(table)
        console.print(f"at layer {result.layer} the closest anchor is [bold]{escape(result.best_anchor(i))}[/bold]")
    sources = ", ".join(f"{a}: {s}" for a, s in zip(result.anchors, result.anchor_sources, strict=True))
    console.print(f"anchors ({escape(sources)}); template {escape(repr(result.template))}")
    if result.static_scores is not None:
        console.print(f"static = cosine of {escape(result.static_model or '')} vectors: the same in every sentence")


# --- trace -----------------------------------------------------------------------------------


@app.command("trace")
def trace_cmd(
    sentence: Annotated[str, typer.Argument(help="A sentence, target in \\[brackets].")],
    top: Annotated[int, typer.Option("--top", "-k", help="Most attended tokens listed per layer.")] = 3,
    exclude_special: ExcludeSpecialOpt = False,
    model: ModelOpt = DEFAULT_MODEL,
    word: WordOpt = None,
    occurrence: OccurrenceOpt = 0,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
) -> None:
    """The pipeline for one target: tokens, ids, input row, positions, then every layer's hidden state."""
    from contextlens.analyses.trace import trace

    (occ,) = occurrences_from_args([sentence], word, occurrence)
    result = trace(occ, load_contextual(model), top_k=top, exclude_special=exclude_special)
    from contextlens.reports import interactive, lesson_figures

    _figures(
        plot,
        html,
        lambda: lesson_figures.trace_figure(result),
        lambda: interactive.trace_figures(result),
        "contextlens trace",
    )
    if json_out:
        print_json(result.to_dict())
        return
    console.print(f"[bold]{escape(result.occurrence.marked())}[/bold] — {result.model}")
    toks = Table(title="1-3. tokens, ids and input rows (the static embedding table)")
    for col in ("pos", "token", "id", "input row norm", "position row norm"):
        toks.add_column(col, justify="left" if col == "token" else "right")
    for i, (t, d) in enumerate(zip(result.tokens, result.token_ids, strict=True)):
        pos = "-" if result.position_row_norms is None else f"{result.position_row_norms[i]:.3f}"
        style = "bold" if i in result.target_positions else ("dim" if result.special[i] else None)
        toks.add_row(str(i), escape(t), str(d), f"{result.input_row_norms[i]:.3f}", pos, style=style)
    console.print(toks)
    if result.has_learned_positions:
        console.print(
            f"4. positions: learned absolute position rows are added to the input rows; the target's position row "
            f"has cosine {fmt(result.position_cosine_to_input_row)} with its input row, and the embedding output "
            f"(layer 0) has cosine {fmt(result.layer0_cosine_to_row_plus_position)} with input row + position row "
            "(the rest is LayerNorm and, where the model has one, the token-type row)"
        )
    else:
        console.print("4. positions: this model has no learned absolute position rows (relative or rotary positions)")
    layers = Table(title=f"5-6. the target's hidden state per layer (“{escape(' '.join(result.target_tokens))}”)")
    for col in ("layer", "cosine to input row", "norm", "attends most to (head mean of this block)"):
        layers.add_column(col, justify="left" if col.startswith("attends") else "right")
    for t in result.layers:
        attended = ", ".join(f"{tok} {w:.2f}" for tok, w in t.top_attended) or "- (embedding output)"
        layers.add_row(str(t.layer), fmt(t.cosine_to_input_row), f"{t.norm:.2f}", escape(attended))
    console.print(layers)
    console.print(f"target input row norm: {result.target_input_row_norm:.3f}")
