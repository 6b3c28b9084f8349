"""`contextlens cost`: a static lookup vs a contextual forward pass, measured here."""

from __future__ import annotations

import contextlib
from typing import Annotated

import typer
from rich.table import Table

from contextlens.cli.capacity import human_bytes
from contextlens.cli.common import (
    DEFAULT_MODEL,
    DEFAULT_STATIC_MODEL,
    DeviceOpt,
    JsonOpt,
    ModelOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    StaticOpt,
    ThreadsOpt,
    console,
    contextual_option,
    figures_after,
    print_json,
)
from contextlens.cli.registry import app


@app.command("cost")
def cost_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    static: StaticOpt = DEFAULT_STATIC_MODEL,
    count: Annotated[float, typer.Option("--count", "-n", help="Documents to embed and index (1e6 works).")] = 1e6,
    corpus: Annotated[str, typer.Option("--corpus", help="Sentences to time on: wordnet, lee or builtin.")] = "wordnet",
    limit: Annotated[int, typer.Option("--limit", help="Time on at most this many sentences.")] = 256,
    repeats: Annotated[int, typer.Option("--repeats", help="Timed runs; the median is reported.")] = 5,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """The seeds' comparison table made live: time and memory of a static lookup vs a forward pass."""
    from contextlens.core.arguments import whole_number

    # before the analysis (numpy) is even imported: a mistake answers in the time of --help
    count = whole_number(count, "count", minimum=1, floats=True)
    repeats = whole_number(repeats, "repeats", minimum=1)
    limit = whole_number(limit, "limit", minimum=1)
    from contextlens.analyses.search.cost import measure_cost
    from contextlens.core.static_models import optional_static
    from contextlens.data.text_sets import corpus_texts

    static_model = optional_static(static, optional=False)
    texts = corpus_texts(corpus, limit)
    loaded = contextual_option(model, precision, threads, runtime, device=device)
    with contextlib.nullcontext() if json_out else console.status("timing lookups and forward passes..."):
        report = measure_cost(loaded, static_model, texts, count=count, repeats=repeats)
    with figures_after(plot, None, report, "cost"):
        if json_out:
            print_json(report.to_dict())
            return
        _print_cost(report, corpus)


def _print_cost(report, corpus: str) -> None:
    """Per token, static against contextual: time, bytes, the cost at --count documents, and the seed's table."""
    table = Table(title=f"per token, measured on {report.sentences} {corpus} sentences ({report.machine})")
    backend = report.backend
    contextual = f"{report.model_name} (contextual{'' if backend.is_reference else ', ' + backend.label})"
    for col in ("", report.static_name + " (static)", contextual):
        table.add_column(col, justify="right")
    table.add_row(
        "time per token (median)",
        f"{report.lookup_seconds_per_token * 1e9:,.0f} ns",
        f"{report.forward_seconds_per_token * 1e6:,.1f} us",
    )
    table.add_row("ratio", "1x", f"{report.ratio:,.0f}x")
    table.add_row("table / weights", human_bytes(report.static_table_bytes), human_bytes(report.model_weight_bytes))
    table.add_row("activations, one batch", "-", human_bytes(report.activation_bytes))
    docs = report.documents
    table.add_row(
        f"embed {report.count:,} documents",
        _duration(docs["static"]["embed_seconds"]),
        _duration(docs["contextual"]["embed_seconds"]),
    )
    table.add_row(
        f"flat index of {report.count:,}",
        f"{human_bytes(docs['static']['index_bytes'])} ({docs['static']['dim']}d)",
        f"{human_bytes(docs['contextual']['index_bytes'])} ({docs['contextual']['dim']}d)",
    )
    console.print(table)
    console.print("[bold]the seed's table, with our numbers filled in[/bold]")
    for row in report.seed_table():
        console.print(f"[bold]{row['aspect']}[/bold]")
        console.print(f"  static, seed:         {row['seed_static']}")
        console.print(f"  static, measured:     {row['measured_static']}")
        console.print(f"  contextual, seed:     {row['seed_contextual']}")
        console.print(f"  contextual, measured: {row['measured_contextual']}")
    console.print(f"[dim]activations: {report.activation_formula}; documents as long as the timed sentences[/dim]")


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:,.2f} s"
