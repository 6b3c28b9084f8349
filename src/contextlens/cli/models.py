"""`contextlens models`: what is installed and usable offline."""

from __future__ import annotations

from rich.table import Table

from contextlens.cli import app
from contextlens.cli.common import (
    JsonOpt,
    console,
    print_json,
)
from contextlens.core.resources import model_status


@app.command("models")
def models_cmd(json_out: JsonOpt = False) -> None:
    """What is installed and usable offline, and how to install the rest."""
    rows = model_status()
    if json_out:
        print_json({"models": rows})
        return
    table = Table(title="contextlens models")
    for col in ("name", "kind", "installed", "description"):
        table.add_column(col)
    for r in rows:
        mark = (
            "[green]yes[/green]"
            if r["installed"]
            else ("[dim]no (optional)[/dim]" if r["optional"] else "[red]no[/red]")
        )
        table.add_row(str(r["name"]), str(r["kind"]), mark, str(r["description"]))
    console.print(table)
    for r in rows:
        if not r["installed"]:
            console.print(f"install {r['name']}: [bold]{r['install']}[/bold]")
    console.print("Any Hugging Face model folder (--model PATH) or word-vector file (--static PATH) works too.")
