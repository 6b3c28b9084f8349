"""`contextlens eval ...`: benchmarks on real data. Each benchmark registers on `eval_app`."""

from __future__ import annotations

import typer

from contextlens.cli import app

eval_app = typer.Typer(
    help="Benchmarks on real data: wic, wsd, similarity, contextuality, retrieval.", no_args_is_help=True
)
app.add_typer(eval_app, name="eval")
