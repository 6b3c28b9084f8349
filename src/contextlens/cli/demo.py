"""`contextlens demo`: the lesson end to end."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_MODEL,
    DEFAULT_STATIC_MODEL,
    DeviceOpt,
    ModelOpt,
    PrecisionOpt,
    RuntimeOpt,
    StaticOpt,
    ThreadsOpt,
    console,
    fmt,
    load_model,
    model_choice,
    static_option,
    status_line,
    written,
)
from contextlens.cli.compare import render_comparison
from contextlens.cli.registry import app
from contextlens.core.occurrences import parse_marked
from contextlens.examples import BANK_BY_SENSE, WORKED_EXAMPLE
from contextlens.reports.output_paths import check_output_folder

OutOpt = Annotated[Path, typer.Option(help="Folder for the figures and report.html.", callback=check_output_folder)]


@app.command("demo")
def demo_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "auto",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    out: OutOpt = Path("contextlens-demo"),
) -> None:
    """The lesson end to end: "bank" in two sentences, several per sense, and report.html with every experiment."""
    from contextlens.analyses.lesson.divergence import compare, same_and_cross_by_layer

    chosen = model_choice(model, precision, runtime, attention_weights=True, device=device)
    words = {parse_marked(s).word for s in (*WORKED_EXAMPLE, *(s for _, s in BANK_BY_SENSE))}
    with _working(f"loading {static}") as show:
        static_model = static_option(static, sorted(words))
        show(f"loading {model}")
        contextual = load_model(chosen, threads)
    console.rule("[bold]1. Same word, two contexts")
    with _working(f"{model}: “bank” in two sentences, every layer"):
        pair = compare([parse_marked(s) for s in WORKED_EXAMPLE], contextual, static_model)
    render_comparison(pair)
    console.print(
        "The static vector and the input row are the same in both sentences (cosine 1.0); the "
        "hidden states drift apart as attention mixes in the context."
    )
    console.rule("[bold]2. Several sentences per sense")
    labels = [label for label, _ in BANK_BY_SENSE]
    with _working(f"{model}: “bank” in {len(BANK_BY_SENSE)} sentences, every layer"):
        many = compare([parse_marked(s) for _, s in BANK_BY_SENSE], contextual, static_model)
    table = Table(title=f"“bank”: mean cosine of same-sense vs cross-sense pairs — {contextual.name}")
    for col in ("layer", "same sense", "cross sense", "gap"):
        table.add_column(col, justify="right")
    for layer, same, cross, gap in same_and_cross_by_layer(many, labels):
        table.add_row(str(layer), fmt(same), fmt(cross), fmt(gap))
    console.print(table)
    with _working("drawing the two figures"):
        from contextlens.reports.figures import divergence_figure, save

        out.mkdir(parents=True, exist_ok=True)
        p1 = save(
            divergence_figure(pair, "Same start, diverging paths: “bank” (finance vs river)"),
            out / "bank-two-sentences.png",
        )
        p2 = save(
            divergence_figure(many, "“bank” in 8 sentences (4 finance, 4 river)", labels), out / "bank-by-sense.png"
        )
    console.print(f"figures: {p1}, {p2}")
    _lesson_report(contextual, static_model, model, out)


def _lesson_report(contextual, static_model, model: str, out: Path) -> None:
    """Section 3: every experiment of the lesson run once, drawn into report.html (and two PNG figures)."""
    from contextlens.reports.figures import save

    console.rule("[bold]3. The whole lesson as one offline HTML report")
    from contextlens.analyses.lesson.run import run_lesson

    with _working(f"{model}: the lesson") as show:
        lesson = run_lesson(contextual, static_model, step=lambda what: show(f"{model}: {what}"))
        show("drawing the cost and CKA figures")
        from contextlens.reports.claims_figures import cka_figure, cost_figure
        from contextlens.reports.report import write_report

        claims = [save(cost_figure(lesson.cost), out / "cost.png"), save(cka_figure(lesson.cka), out / "cka.png")]
    console.print(f"figures: {', '.join(str(p) for p in claims)}")
    with _working("writing report.html (its interactive figures)"), written(out / "report.html"):
        report, n_figures = write_report(lesson, out / "report.html")
    console.print(f"report: {report} ({n_figures} interactive figures; open it in a browser, no network needed)")
    from contextlens.core.static_store import made_models

    made = [m["name"] for m in made_models()]
    console.print(
        f"static models made here, in the report's static-methods section: {', '.join(made)}"
        if made
        else "no static model made here yet, so the report's static-methods section shows GloVe alone: "
        "`contextlens static train --name w2v-sg` (about a minute) makes a word2vec one"
    )


@contextmanager
def _working(first: str) -> Iterator[Callable[[str], None]]:
    """A status line on stderr (spinner, what runs now, elapsed time) while nothing is printed,
    so the demo is never silent for long: rich would send stdout's lines through the live stderr
    display (and so to stderr) if anything were printed inside."""
    progress, show = status_line(first)
    with progress:
        yield show
