"""Foundation commands: compare, neighbors, models, demo."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from contextlens.analyses.divergence import Comparison, compare, same_minus_cross
from contextlens.cli import app
from contextlens.cli.common import (
    DEFAULT_MODEL,
    DEFAULT_STATIC_MODEL,
    HtmlOpt,
    JsonOpt,
    ModelOpt,
    OccurrenceOpt,
    PlotOpt,
    StaticOpt,
    WordOpt,
    console,
    fmt,
    note,
    occurrences_from_args,
    print_json,
)
from contextlens.core.contextual_models import POOLINGS, load_contextual
from contextlens.core.occurrences import parse_marked
from contextlens.core.resources import model_status
from contextlens.core.static_models import load_static
from contextlens.errors import InputError
from contextlens.examples import BANK_BY_SENSE, WORKED_EXAMPLE


@app.command("compare")
def compare_cmd(
    sentences: Annotated[list[str], typer.Argument(help="Two or more sentences, target in \\[brackets].")],
    model: ModelOpt = DEFAULT_MODEL,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    word: WordOpt = None,
    occurrence: OccurrenceOpt = 0,
    pooling: Annotated[str, typer.Option(help="Pool a multi-token word: mean, first or last.")] = "mean",
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
) -> None:
    """Per-layer cosine of the target across sentences, beside its static vector and input row."""
    if pooling not in POOLINGS:
        raise InputError(f"unknown --pooling {pooling!r}; use one of {', '.join(POOLINGS)}")
    occs = occurrences_from_args(sentences, word, occurrence)
    if len(occs) < 2:
        raise InputError(
            "compare needs at least two sentences; give the same word in two or more contexts, "
            "e.g. 'The [bank] called.' 'The river [bank] flooded.'"
        )
    static_model = load_static(static)
    for o in occs:  # fail on an unknown word before paying for the contextual model
        static_model.vector(o.word)
    result = compare(occs, load_contextual(model), static_model, pooling=pooling)  # type: ignore[arg-type]
    if plot is not None:
        from contextlens.reports.figures import divergence_figure, save

        note(f"figure written to {save(divergence_figure(result), plot)}")
    if html is not None:
        from contextlens.reports.interactive import divergence_figures, write_page

        note(f"interactive figure written to {write_page(divergence_figures(result), html, 'contextlens compare')}")
    if json_out:
        print_json(result.to_dict())
        return
    render_comparison(result)


def render_comparison(result: Comparison) -> None:
    """Sentences, then one row per layer with a bar, then the two static baselines."""
    for i, (o, toks) in enumerate(zip(result.occurrences, result.target_tokens, strict=True), 1):
        cut = "  [yellow](cut to a window around the target)[/yellow]" if result.truncated[i - 1] else ""
        console.print(f"[bold]{i}.[/bold] {escape(o.marked())}  [dim]tokens: {escape(' '.join(toks))}[/dim]{cut}")
    many = result.n > 2
    table = Table(title=f"{result.model}: cosine of the target's hidden states", title_justify="left")
    table.add_column("layer", justify="right")
    table.add_column("mean pairwise cosine" if many else "cosine", justify="right")
    if many:
        table.add_column("lowest pair", justify="right")
    table.add_column("", no_wrap=True)
    worst = result.most_divergent_layer
    for layer, cos, m in zip(result.layers, result.layer_cosines, result.matrices, strict=True):
        cells = [str(layer), fmt(cos)] + ([fmt(float(m.min()))] if many else []) + [_bar(cos)]
        table.add_row(*cells, style="bold red" if layer == worst else None)
    table.add_section()
    if result.static_cosine is not None:
        cells = ["static", fmt(result.static_cosine)]
        table.add_row(*cells, *([""] if many else []), _bar(result.static_cosine), style="blue")
    cells = ["input row", fmt(result.input_row_cosine)]
    table.add_row(*cells, *([""] if many else []), _bar(result.input_row_cosine), style="green")
    console.print(table)
    console.print(
        f"most divergent layer: [bold red]{worst}[/bold red] (cosine {fmt(min(result.layer_cosines))}); "
        f"static vector ({result.static_model}) and input row are the same in every sentence"
    )


def _bar(cosine: float, width: int = 20) -> str:
    """A text bar for a cosine in [0, 1] (negative cosines draw no bar)."""
    filled = max(0, round(cosine * width))
    return "█" * filled + "·" * (width - filled)


@app.command("neighbors")
def neighbors_cmd(
    word: Annotated[str | None, typer.Argument(help="Word whose nearest words to list.")] = None,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    analogy: Annotated[str | None, typer.Option(help="Analogy a:b::c, e.g. king:man::queen (b - a + c).")] = None,
    positive: Annotated[list[str] | None, typer.Option("--positive", "-p", help="Add this word.")] = None,
    negative: Annotated[list[str] | None, typer.Option("--negative", "-N", help="Subtract this word.")] = None,
    top: Annotated[int, typer.Option("--top", "-k", help="How many neighbours.")] = 10,
    json_out: JsonOpt = False,
) -> None:
    """Nearest words in the static model; analogies with --analogy or --positive/--negative."""
    model = load_static(static)
    if analogy is not None:
        a, b, c = _parse_analogy(analogy)
        results = model.analogy(a, b, c, topn=top)
        query = {"analogy": f"{a}:{b}::{c}", "positive": [b, c], "negative": [a]}
    else:
        pos = ([word] if word else []) + list(positive or [])
        neg = list(negative or [])
        if not pos and not neg:
            raise InputError("give a WORD, --analogy a:b::c, or --positive/--negative words")
        results = model.most_similar(pos, neg, topn=top)
        query = {"positive": pos, "negative": neg}
    if json_out:
        print_json({"static_model": model.name, **query, "neighbors": [{"word": w, "cosine": s} for w, s in results]})
        return
    title = query.get("analogy") or " + ".join(query["positive"]) + "".join(f" - {n}" for n in query["negative"])
    table = Table(title=escape(f"nearest words to {title} — {model.name}"))
    table.add_column("#", justify="right")
    table.add_column("word")
    table.add_column("cosine", justify="right")
    for i, (w, s) in enumerate(results, 1):
        table.add_row(str(i), w, fmt(s))
    console.print(table)


def _parse_analogy(text: str) -> tuple[str, str, str]:
    parts = text.replace("::", ":").split(":")
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise InputError(f"--analogy {text!r} is not of the form a:b::c (e.g. king:man::queen)")
    a, b, c = (p.strip() for p in parts)
    return a, b, c


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


@app.command("demo")
def demo_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    out: Annotated[Path, typer.Option(help="Folder for the figures and report.html.")] = Path("contextlens-demo"),
) -> None:
    """The lesson end to end: "bank" in two sentences, several per sense, and report.html with every experiment."""
    static_model = load_static(static)
    contextual = load_contextual(model)
    console.rule("[bold]1. Same word, two contexts")
    pair = compare([parse_marked(s) for s in WORKED_EXAMPLE], contextual, static_model)
    render_comparison(pair)
    console.print(
        "The static vector and the input row are the same in both sentences (cosine 1.0); the "
        "hidden states drift apart as attention mixes in the context."
    )
    console.rule("[bold]2. Several sentences per sense")
    labels = [label for label, _ in BANK_BY_SENSE]
    many = compare([parse_marked(s) for _, s in BANK_BY_SENSE], contextual, static_model)
    table = Table(title=f"“bank”: mean cosine of same-sense vs cross-sense pairs — {contextual.name}")
    for col in ("layer", "same sense", "cross sense", "gap"):
        table.add_column(col, justify="right")
    for layer, m in zip(many.layers, many.matrices, strict=True):
        same, cross = same_minus_cross(m, labels)
        table.add_row(str(layer), fmt(same), fmt(cross), fmt(same - cross))
    console.print(table)
    from contextlens.reports.figures import divergence_figure, save

    out.mkdir(parents=True, exist_ok=True)
    p1 = save(
        divergence_figure(pair, "Same start, diverging paths: “bank” (finance vs river)"),
        out / "bank-two-sentences.png",
    )
    p2 = save(divergence_figure(many, "“bank” in 8 sentences (4 finance, 4 river)", labels), out / "bank-by-sense.png")
    console.print(f"figures: {p1}, {p2}")
    console.rule("[bold]3. The whole lesson as one offline HTML report")
    from contextlens.analyses.lesson import run_lesson
    from contextlens.reports.report import write_report

    with console.status("running the explorer, ranking, attention, probe and trace..."):
        lesson = run_lesson(contextual, static_model)
    report, n_figures = write_report(lesson, out / "report.html")
    console.print(f"report: {report} ({n_figures} interactive figures; open it in a browser, no network needed)")
