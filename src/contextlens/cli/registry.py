"""The ``contextlens`` Typer app that every command module registers its commands on.

A module of its own, below the command modules and the package's entry point: a command imports
the app from here, so no command imports ``contextlens.cli`` (which imports the commands), and
the import graph of ``cli/`` points one way (the ``cli`` contract in pyproject.toml).
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="contextlens",
    help="See and measure how context reshapes meaning inside language models, offline.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
