"""`contextlens neighbors`: nearest words and analogies in the static model."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.cli import app
from contextlens.cli.common import (
    DEFAULT_STATIC_MODEL,
    JsonOpt,
    StaticOpt,
    console,
    fmt,
    print_json,
)
from contextlens.core.static_models import load_static
from contextlens.errors import InputError


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
    model = load_static(static)
    if analogy is not None:
        a, b, c = _parse_analogy(analogy)
        results = model.analogy(a, b, c, topn=top)
        query = {"analogy": f"{a}:{b}::{c}", "positive": [b, c], "negative": [a]}
    else:
        pos = ([word] if word else []) + list(positive or [])
        neg = list(negative or [])
        if not pos and not neg:
            raise InputError("give a WORD, --analogy a:b::c, or --positive/--negative words")
        results = model.most_similar(pos, neg, topn=top)
        query = {"positive": pos, "negative": neg}
    if json_out:
        print_json({"static_model": model.name, **query, "neighbors": [{"word": w, "cosine": s} for w, s in results]})
        return
    title = query.get("analogy") or " + ".join(query["positive"]) + "".join(f" - {n}" for n in query["negative"])
    table = Table(title=escape(f"nearest words to {title} — {model.name}"))
    table.add_column("#", justify="right")
    table.add_column("word")
    table.add_column("cosine", justify="right")
    for i, (w, s) in enumerate(results, 1):
        table.add_row(str(i), w, fmt(s))
    console.print(table)


def _parse_analogy(text: str) -> tuple[str, str, str]:
    parts = text.replace("::", ":").split(":")
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise InputError(f"--analogy {text!r} is not of the form a:b::c (e.g. king:man::queen)")
    a, b, c = (p.strip() for p in parts)
    return a, b, c
