"""Pieces every command shares: model options, occurrence parsing, JSON and error output.

The CLI is a face: it parses input, calls one analysis and renders the result. No logic here.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console

from contextlens.core.occurrences import Occurrence, locate
from contextlens.core.resources import DEFAULT_CONTEXTUAL, DEFAULT_STATIC
from contextlens.errors import InputError

console = Console(emoji=False, highlight=False)
err_console = Console(stderr=True, emoji=False, highlight=False)

ModelOpt = Annotated[
    str,
    typer.Option("--model", "-m", help="Contextual model: mpnet (default), minilm, smollm2, a folder or HF id."),
]
StaticOpt = Annotated[
    str,
    typer.Option("--static", "-s", help="Static model: glove-50d (default) or a GloVe/word2vec/fastText/.kv file."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of a table.")]
PlotOpt = Annotated[Path | None, typer.Option("--plot", help="Write a PNG figure to this file.")]
HtmlOpt = Annotated[Path | None, typer.Option("--html", help="Write an interactive, self-contained HTML figure.")]
WordOpt = Annotated[
    str | None,
    typer.Option("--word", "-w", help="Target word, when the sentences carry no \\[markers]."),
]
OccurrenceOpt = Annotated[
    int, typer.Option("--occurrence", "-n", help="Which occurrence of --word (0 = first, -1 = last).")
]

DEFAULT_MODEL = DEFAULT_CONTEXTUAL
DEFAULT_STATIC_MODEL = DEFAULT_STATIC


def occurrences_from_args(sentences: list[str], word: str | None, index: int) -> list[Occurrence]:
    """Marker syntax per sentence, or --word (+ --occurrence) applied to every sentence."""
    if not sentences:
        raise InputError("no sentences given; pass sentences like 'The river [bank] flooded.'")
    return [locate(s, word, index) for s in sentences]


def to_jsonable(obj: Any) -> Any:
    """Numpy scalars/arrays to Python; NaN and infinities to null (strict JSON)."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(data), indent=2, allow_nan=False) + "\n")


def note(message: str) -> None:
    """A side remark (file written, window cut) on stderr, so --json stdout stays clean."""
    err_console.print(f"[dim]{message}[/dim]")


def fmt(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


LayerOpt = Annotated[int, typer.Option("--layer", "-l", help="Hidden-state layer (0..L, negative from the top).")]
TemplateOpt = Annotated[
    str, typer.Option("--template", help="Neutral sentence for a lone word; '[{word}]' marks where it goes.")
]
ExcludeSpecialOpt = Annotated[
    bool,
    typer.Option("--exclude-special", help="Drop [CLS]/[SEP]-like tokens and renormalise the attention rows."),
]


def write_figures(plot: Path | None, html: Path | None, png_figure, html_figures, title: str) -> None:
    """Write the PNG and/or the interactive HTML the user asked for."""
    if plot is not None:
        from contextlens.reports.figures import save

        note(f"figure written to {save(png_figure(), plot)}")
    if html is not None:
        from contextlens.reports.interactive import write_page

        note(f"interactive figure written to {write_page(html_figures(), html, title)}")


def fmt_p(p: float | None) -> str:
    return "-" if p is None else f"{p:.3f}"
