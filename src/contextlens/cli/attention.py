"""`contextlens attention`: which tokens the target attends to."""

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
    print_json,
    window_note,
)
from contextlens.cli.params import as_flags
from contextlens.cli.registry import app
from contextlens.core.occurrences import locate_all
from contextlens.errors import InputError


@app.command("attention")
def attention_cmd(  # noqa: PLR0913 - a command: one parameter per option
    sentences: Annotated[list[str], typer.Argument(help="One or two sentences, target in \\[brackets].")],
    layer: Annotated[int, typer.Option("--layer", "-l", help="Attention layer 1..L (block L) for close-ups.")] = 6,
    head: Annotated[int, typer.Option("--head", help="Attention head 0..H-1 for close-ups.")] = 3,
    exclude_special: ExcludeSpecialOpt = False,
    top: Annotated[int, typer.Option("--top", "-k", help="Tokens listed per layer.")] = 3,
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
) -> None:
    """Which tokens the target attends to, per layer and head, with the head mean and attention rollout."""
    occs = locate_all(sentences, word, occurrence)
    if len(occs) > 2:
        raise InputError(f"attention shows one or two sentences side by side, got {len(occs)}")
    contextual = contextual_option(model, precision, threads, runtime, attention=(layer, head), device=device)
    from contextlens.analyses.lesson.attention import attend

    with as_flags(top_k="--top"):
        result = attend(occs, contextual, layer=layer, head=head, exclude_special=exclude_special, top_k=top)
    with figures_after(plot, html, result, "contextlens attention"):
        if json_out:
            print_json(result.to_dict())
            return
        for i, m in enumerate(result.maps, 1):
            console.rule(f"[bold]{i}. {escape(m.occurrence.marked())}")
            if m.window is not None:
                console.print(window_note(m.occurrence.text, m.window))
            table = Table(title=f"attention of “{escape(' '.join(m.display_target_tokens))}” — {result.model}")
            table.add_column("token")
            table.add_column(f"L{result.layer} H{result.head}", justify="right")
            table.add_column(f"L{result.layer} head mean", justify="right")
            table.add_column(f"rollout to L{m.num_layers}", justify="right")
            for t, tok in enumerate(m.display_tokens):
                if exclude_special and m.special[t]:
                    continue
                style = "bold" if t in m.target_positions else ("dim" if m.special[t] else None)
                cells = (m.row(result.layer, result.head)[t], m.row(result.layer)[t], m.rollout[-1][t])
                table.add_row(escape(tok), *(fmt(c, 3) for c in cells), style=style)
            console.print(table)
            tops = Table(title="most attended tokens per layer (head mean)")
            tops.add_column("layer", justify="right")
            tops.add_column("tokens")
            for lay in range(1, m.num_layers + 1):
                top = m.top(lay, result.top_k, display=True)
                tops.add_row(str(lay), escape(", ".join(f"{tok} {w:.2f}" for tok, w in top)))
            console.print(tops)
        if exclude_special:
            console.print("special tokens excluded; every row renormalised over the remaining tokens")
        console.print("layers are attention blocks 1..L; heads 0..H-1; rollout: Abnar & Zuidema (2020)")
