"""`contextlens eval ...`: benchmarks on real data, one module per subcommand; shared options here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from contextlens.cli import app
from contextlens.cli.common import console, encoding_progress, err_console, note  # noqa: F401 (re-exported)

if TYPE_CHECKING:  # numpy comes with it: `--help` must not pay for it
    from contextlens.analyses.benchmarks.result import BenchmarkResult

eval_app = typer.Typer(
    help="Benchmarks on real data: wic, wsd, wsi, similarity, contextuality, layers, retrieval, static.",
    no_args_is_help=True,
)
app.add_typer(eval_app, name="eval")

QuickOpt = Annotated[
    bool, typer.Option("--quick", help="A small subset (seconds, for tests and a first look); not comparable.")
]


def size_name(quick: bool) -> str:
    return "quick" if quick else "full"


@contextmanager
def plot_after(result_or_results: object, plot: Path | None, draw: Callable) -> Iterator[None]:
    """Print the result inside the block; the figure (path checked before the work) is drawn after."""
    yield
    if plot is not None:
        from contextlens.reports.figures import save

        note(f"figure written to {save(draw(result_or_results), plot)}")


def model_title(result: BenchmarkResult) -> str:
    """The model as a table title names it: ``minilm``, or ``minilm (int8)`` when it ran at int8,
    ``minilm (onnx fp32)`` / ``minilm (onnx int8)`` on ONNX Runtime."""
    backend = result.backend
    return str(result.model) if backend.is_reference else f"{result.model} ({backend.label})"


def layer_cell(layer: int | None) -> str:
    return "-" if layer is None else str(layer)


def timing_footer(result: BenchmarkResult) -> None:
    meta = result.meta
    console.print(
        f"[dim]{meta['size']} data; {meta['seconds']:.1f} s ({meta['encode_seconds']:.1f} s encoding, "
        "cached on disk after the first run)[/dim]"
    )


# Each module registers its subcommand on `eval_app` when imported.
from contextlens.cli.eval import contextuality, layers, retrieval, similarity, static, wic, wsd, wsi  # noqa: E402,F401
