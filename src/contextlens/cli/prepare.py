"""`contextlens prepare`: build once what a first command would build (issue 30), so it runs warm."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from contextlens.cli.common import JsonOpt, console, encoding_progress, note, print_json, use_threads
from contextlens.cli.registry import app

if TYPE_CHECKING:
    from contextlens.analyses.lesson.prepare import PrepareStep


@app.command("prepare")
def prepare_cmd(
    model: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", help="A shipped encoder to prepare (repeatable; default: minilm and mpnet)."),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Build the ONNX exports, baselines and same-sense rules the first commands need (make setup runs it)."""
    from contextlens.analyses.lesson.prepare import check_models, prepare

    names = check_models(model)  # a wrong name answers before anything loads
    use_threads()
    with encoding_progress("eval wic's pairs") as progress:
        result = prepare(names, progress=progress, on_step=None if json_out else render_step)
    if json_out:
        print_json(result.to_dict())
    else:
        note(f"prepared {', '.join(result.models)} in {result.seconds:.1f} s; a second run reads the caches")


def render_step(step: PrepareStep) -> None:
    """One line per step, as it ends: model, what, seconds, built or read from the cache."""
    state = {True: "cached", False: "built", None: "done"}[step.cached]
    console.print(f"{step.model or '-':7} {step.step:38} {step.seconds:6.1f} s  {state}")
