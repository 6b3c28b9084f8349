"""The ``contextlens`` command line. Command groups live in sibling modules."""

from __future__ import annotations

import os
import sys

import typer

from contextlens.errors import ContextlensError

app = typer.Typer(
    name="contextlens",
    help="See and measure how context reshapes meaning inside language models, offline.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Each module registers its commands on `app` when imported.
from contextlens.cli import (  # noqa: E402,F401
    attention,
    capacity,
    compare,
    demo,
    eval,
    explore,
    index,
    models,
    neighbors,
    probe,
    rank,
    trace,
)


def main() -> None:
    """Entry point: user mistakes become one line on stderr and exit code 2."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        app()
    except ContextlensError as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
