"""`contextlens trace`: the lesson's pipeline for one target, layer by layer."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_MODEL,
    DeviceOpt,
    ExcludeSpecialOpt,
    HtmlOpt,
    JsonOpt,
    ModelOpt,
    OccurrenceOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    WordOpt,
    console,
    contextual_option,
    figures_after,
    fmt,
    note,
    print_json,
    print_model_kind,
    window_note,
)
from contextlens.cli.params import as_flags
from contextlens.cli.registry import app
from contextlens.core.occurrences import locate_all

CorpusOpt = Annotated[
    str | None,
    typer.Option(
        "--corpus",
        help="Also average each layer's cosine to the input and position rows over a corpus: builtin,"
        " wordnet, lee (news documents; one longer than a forward pass is read up to what fits).",
    ),
]


@app.command("trace")
def trace_cmd(  # noqa: PLR0913 - a command: one parameter per option
    sentence: Annotated[str, typer.Argument(help="A sentence, target in \\[brackets].")],
    top: Annotated[int, typer.Option("--top", "-k", help="Most attended tokens listed per layer.")] = 3,
    exclude_special: ExcludeSpecialOpt = False,
    model: ModelOpt = DEFAULT_MODEL,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "auto",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    word: WordOpt = None,
    occurrence: OccurrenceOpt = 0,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
    corpus: CorpusOpt = None,
    limit: Annotated[int, typer.Option("--limit", help="With --corpus: at most this many texts.")] = 200,
) -> None:
    """The pipeline for one target: tokens, ids, input row, positions, then every layer's hidden state."""
    (occ,) = locate_all([sentence], word, occurrence)
    texts = None
    if corpus is not None:  # read before the weights load: an unknown corpus is refused at once
        from contextlens.data.text_sets import corpus_texts

        texts = corpus_texts(corpus, limit)
    contextual = contextual_option(model, precision, threads, runtime, attention_weights=True, device=device)
    from contextlens.analyses.lesson.trace import trace

    with as_flags(top_k="--top"):
        result = trace(occ, contextual, top_k=top, exclude_special=exclude_special)
    share = None
    if texts is not None:
        from contextlens.analyses.lesson.input_share import input_row_share

        share = input_row_share(contextual, texts, corpus)

    with figures_after(plot, html, result, "contextlens trace"):
        if json_out:
            print_json(result.to_dict() if share is None else {**result.to_dict(), "input_row_share": share.to_dict()})
            return
        _print_trace(result, share)


def _print_trace(result, share) -> None:
    """Steps 1-6 of the pipeline as tables and lines, and step 7 (--corpus) when it was measured."""
    from contextlens.analyses.lesson.trace import INPUT_ROW_COSINE_MEANS

    console.print(f"[bold]{escape(result.occurrence.marked())}[/bold] — {result.model}")
    print_model_kind(result.model)
    if result.window is not None:
        console.print(window_note(result.occurrence.text, result.window))
    console.print(_tokens_table(result))
    if result.has_learned_positions:
        console.print(
            f"4. positions: learned absolute position rows are added to the input rows; the target's position row "
            f"has cosine {fmt(result.position_cosine_to_input_row)} with its input row, and the embedding output "
            f"(layer 0) has cosine {fmt(result.layer0_cosine_to_row_plus_position)} with input row + position row "
            "(the rest is LayerNorm and, where the model has one, the token-type row)"
        )
    else:
        console.print("4. positions: this model has no learned absolute position rows (relative or rotary positions)")
    console.print(_layers_table(result))
    console.print(f"[dim]cosine to input row: {INPUT_ROW_COSINE_MEANS}[/dim]")
    console.print(f"target input row norm: {result.target_input_row_norm:.3f}")
    for line in result.notes:
        console.print(f"[dim]{escape(line)}[/dim]")
    if result.shown is not None and result.shown != result.tokens:
        console.print("[dim]tokens shown decoded from byte-level BPE: ␣ is the space a token starts with[/dim]")
    if share is not None:
        _share_table(share)


def _tokens_table(result) -> Table:
    """Steps 1-3: each token, its id, and the norms of its input and position rows."""
    toks = Table(title="1-3. tokens, ids and input rows (the static embedding table)")
    for col in ("pos", "token", "id", "input row norm", "position row norm"):
        toks.add_column(col, justify="left" if col == "token" else "right")
    for i, (t, d) in enumerate(zip(result.display_tokens, result.token_ids, strict=True)):
        pos = "-" if result.position_row_norms is None else f"{result.position_row_norms[i]:.3f}"
        style = "bold" if i in result.target_positions else ("dim" if result.special[i] else None)
        toks.add_row(str(i), escape(t), str(d), f"{result.input_row_norms[i]:.3f}", pos, style=style)
    return toks


def _layers_table(result) -> Table:
    """Steps 5-6: the target's hidden state per layer, against its input row, and what it attends to most."""
    target = escape(" ".join(result.display_target_tokens))
    layers = Table(title=f"5-6. the target's hidden state per layer (“{target}”)")
    for col in ("layer", "cosine to input row", "norm", "attends most to (head mean of this block)"):
        layers.add_column(col, justify="left" if col.startswith("attends") else "right")
    for t in result.layers:
        shown = t.top_display or [tok for tok, _ in t.top_attended]
        attended = ", ".join(f"{tok} {w:.2f}" for tok, (_, w) in zip(shown, t.top_attended, strict=True))
        attended = attended or "- (embedding output)"
        layers.add_row(str(t.layer), fmt(t.cosine_to_input_row), f"{t.norm:.2f}", escape(attended))
    return layers


def _share_table(share) -> None:
    table = Table(title=f"7. every token of {share.texts} {share.corpus} texts ({share.tokens:,} tokens), per layer")
    for col in ("layer", "cosine to own input row", "to another token's row", "to own position row"):
        table.add_column(col, justify="right")
    for i, layer in enumerate(share.layers):
        pos = "-" if share.to_position_row is None else fmt(share.to_position_row[i], 3)
        table.add_row(str(layer), fmt(share.to_input_row[i], 3), fmt(share.to_other_row[i], 3), pos)
    console.print(table)
    if share.truncated:
        longer = f"{share.truncated} of {share.texts} texts were longer than one forward pass"
        note(f"{longer}: their first tokens, as many as fit, were read")
