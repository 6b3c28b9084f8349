"""`contextlens neighbors`: nearest words and analogies in the static model."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_STATIC_MODEL,
    JsonOpt,
    StaticOpt,
    console,
    fmt,
    print_json,
)
from contextlens.cli.registry import app


@app.command("neighbors")
def neighbors_cmd(
    word: Annotated[str | None, typer.Argument(help="Word whose nearest words to list.")] = None,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    analogy: Annotated[str | None, typer.Option(help="Analogy a:b::c, e.g. king:man::queen (b - a + c).")] = None,
    positive: Annotated[list[str] | None, typer.Option("--positive", "-p", help="Add this word.")] = None,
    negative: Annotated[list[str] | None, typer.Option("--negative", "-N", help="Subtract this word.")] = None,
    top: Annotated[int, typer.Option("--top", "-k", help="How many neighbours.")] = 10,
    json_out: JsonOpt = False,
) -> None:
    """Nearest words in the static model; analogies with --analogy or --positive/--negative."""
    from contextlens.analyses.lesson.neighbors import neighbors

    result = neighbors(static, word, positive or (), negative or (), analogy, top)
    if json_out:
        print_json(result.to_dict())
        return
    table = Table(title=escape(f"nearest words to {result.title} — {result.static_model}"))
    table.add_column("#", justify="right")
    table.add_column("word")
    table.add_column("cosine", justify="right")
    for i, (w, s) in enumerate(result.neighbors, 1):
        table.add_row(str(i), w, fmt(s))
    console.print(table)
    for line in result.composed.values():
        console.print(f"[dim]{escape(line)}[/dim]")
