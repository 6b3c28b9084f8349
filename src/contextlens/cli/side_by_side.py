"""How two models' answers are printed side by side (compare, explore, same-sense with `-m` twice):
each model's own table in turn, then the CKA that says which layers correspond."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.rule import Rule
from rich.table import Table

from contextlens.cli.common import console, figures_after, print_json

if TYPE_CHECKING:
    from contextlens.analyses.lesson.two_models import TwoModels
    from contextlens.core.contextual_models import ContextualModel


def answer_and_show(
    models: list[ContextualModel],
    ask: Callable[[ContextualModel], Any],
    render_one: Callable[[Any], None],
    *,
    command: str,
    json_out: bool,
    plot: Path | None,
    html: Path | None = None,
) -> None:
    """One model's answer, or two side by side (``-m`` twice), printed as a table or JSON with its
    figures after: the one ending compare, explore and same-sense share."""
    if len(models) == 2:
        from contextlens.analyses.lesson.two_models import side_by_side

        result: Any = side_by_side(models, ask)
        title, render = f"contextlens {command}: two models", lambda pair: render_side_by_side(pair, render_one)
    else:
        result, title, render = ask(models[0]), f"contextlens {command}", render_one
    with figures_after(plot, html, result, title):
        if json_out:
            print_json(result.to_dict())
        else:
            render(result)


def render_side_by_side(result: TwoModels, render_one: Callable[[Any], None]) -> None:
    """Each answer under a rule naming its model, then the layer matches by linear CKA."""
    for answer, name in zip(result.answers, result.models, strict=True):
        console.print(Rule(f"[bold]{escape(name)}[/bold]", align="left"))
        render_one(answer)
    console.print(Rule("[bold]the two models' layers, by linear CKA[/bold]", align="left"))
    a, b = result.models
    table = Table(title=f"which layer of {b} has the geometry of each layer of {a}", title_justify="left")
    table.add_column(f"{a} layer", justify="right")
    table.add_column(f"best {b} layer", justify="right")
    table.add_column("CKA", justify="right")
    for layer, match, cka in result.matches():
        table.add_row(str(layer), str(match), f"{cka:.2f}")
    console.print(table)
    cka = result.cka
    console.print(
        f"[dim]CKA on {cka.tokens:,} paired tokens of {cka.aligned_texts} {cka.corpus} texts (1 = the same geometry "
        f"up to rotation and scale, ~0 = unrelated); {escape(result.to_dict()['note'])}[/dim]",
        soft_wrap=True,
    )
