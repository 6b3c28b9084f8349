"""`contextlens eval ...`: benchmarks on real data, one module per subcommand; shared options here."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from contextlens.cli.common import (  # noqa: F401 (console, err_console re-exported)
    console,
    encoding_progress,
    err_console,
    load_model,
    model_choice,
    note,
    print_json,
)
from contextlens.cli.registry import app

if TYPE_CHECKING:  # numpy comes with it: `--help` must not pay for it
    from contextlens.analyses.benchmarks.result import BenchmarkResult
    from contextlens.core.contextual_models import ContextualModel
    from contextlens.core.runtime_choice import ModelBackend

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


Run = Callable[["ContextualModel", Callable[[int, int], None]], "BenchmarkResult"]


def lazy(module: str, name: str) -> Callable[[], Any]:
    """``module.name``, imported when called: a command's analysis or figure loads torch or
    matplotlib, which a usage error and ``--help`` must not pay for."""
    return lambda: getattr(importlib.import_module(module), name)


def chosen_models(models: Sequence[str], precision: str, runtime: str, device: str = "auto") -> list[ModelBackend]:
    """Every --model (and --also) with --precision, --runtime and --device resolved once, before any
    loads (:func:`~contextlens.cli.common.model_choice`): a wrong name or option costs no heavy import."""
    return [model_choice(name, precision, runtime, device=device) for name in models]


def eval_results(chosen: Sequence[ModelBackend], threads: int | None, run: Run) -> list[BenchmarkResult]:
    """Each resolved model loaded and measured by ``run(model, progress)``, with the encoding's
    progress bar (on a terminal, only while it encodes)."""
    results = []
    for one in chosen:
        with encoding_progress(one.model) as progress:
            results.append(run(load_model(one, threads), progress))
    return results


def eval_output(
    shown: object,
    plot: Path | None,
    figure: Callable[[], Callable],
    json_out: bool,
    document: Callable[[], object],
    table: Callable[[], None],
) -> None:
    """The JSON ``document()`` or the ``table()``; then ``figure()`` drawn from ``shown`` when asked."""
    with plot_after(shown, plot, figure()):
        if json_out:
            print_json(document())
        else:
            table()


def eval_command(
    model: str,
    precision: str,
    runtime: str,
    threads: int | None,
    json_out: bool,
    plot: Path | None,
    *,
    run: Run,
    figure: Callable[[], Callable],
    table: Callable[[BenchmarkResult], None],
    device: str = "auto",
) -> None:
    """One model's benchmark, the way every eval command runs it: the options checked before any
    heavy import, the encoding with its progress bar, then the JSON or the table, the figure after."""
    (result,) = eval_results(chosen_models([model], precision, runtime, device), threads, run)
    eval_output(result, plot, figure, json_out, result.to_dict, lambda: table(result))


def model_title(result: BenchmarkResult) -> str:
    """The model as a table title names it: ``minilm``, or ``minilm (int8)`` when it ran at int8,
    ``minilm (onnx fp32)`` / ``minilm (onnx int8)`` on ONNX Runtime."""
    return result.backend.name_with(str(result.model))


def layer_cell(layer: int | None) -> str:
    return "-" if layer is None else str(layer)


def timing_footer(result: BenchmarkResult) -> None:
    console.print(
        f"[dim]{result.size} data; {result.seconds:.1f} s ({result.encode_seconds:.1f} s encoding, "
        "cached on disk after the first run)[/dim]"
    )


# Each module registers its subcommand on `eval_app` when imported.
from contextlens.cli.eval import contextuality, layers, retrieval, similarity, static, wic, wsd, wsi  # noqa: E402,F401
