"""`contextlens cka`: linear CKA between every layer of two models (or one with itself)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from contextlens.cli.common import (
    DEFAULT_MODEL,
    DeviceOpt,
    JsonOpt,
    ModelOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    console,
    contextual_option,
    figures_after,
    print_json,
)
from contextlens.cli.registry import app


@app.command("cka")
def cka_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    other: Annotated[
        str | None, typer.Option("--other", "-o", help="Second model (default: the first with itself).")
    ] = None,
    sentences: Annotated[
        Path | None, typer.Option("--sentences", help="A UTF-8 file, one sentence per line (instead of --corpus).")
    ] = None,
    corpus: Annotated[
        str, typer.Option("--corpus", help="Built-in texts: wordnet (usage examples), lee (news), builtin.")
    ] = "wordnet",
    limit: Annotated[int, typer.Option("--limit", help="Use at most this many texts.")] = 400,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Compare representation spaces honestly: linear CKA between every layer of A and every layer of B."""
    from contextlens.core.arguments import whole_number

    whole_number(limit, "limit", minimum=0)  # before the analysis (numpy) is even imported
    from contextlens.analyses.representations.cka import compare_layers
    from contextlens.data.text_sets import read_texts

    texts = read_texts(sentences) if sentences is not None else None
    a = contextual_option(model, precision, threads, runtime, device=device)
    b = None if other in (None, model) else contextual_option(other, precision, threads, runtime, device=device)
    with contextlib.nullcontext() if json_out else console.status("encoding every token with both models..."):
        result = compare_layers(a, b, texts=texts, corpus=corpus, limit=limit)
    with figures_after(plot, None, result, "CKA"):
        if json_out:
            print_json(result.to_dict())
            return
        table = Table(title=f"linear CKA: {result.model_a} (rows) x {result.model_b} (columns)")
        table.add_column(f"{result.model_a}", justify="right")
        for layer in result.layers_b:
            table.add_column(str(layer), justify="right")
        table.add_column("best", justify="right")
        for i, (layer, best) in enumerate(zip(result.layers_a, result.best_match(), strict=True)):
            table.add_row(str(layer), *(f"{v:.2f}" for v in result.matrix[i]), str(best))
        console.print(table)
        console.print(
            f"{result.tokens:,} paired tokens from {result.aligned_texts} of {result.texts} {result.corpus} texts; "
            f"{result.skipped_texts} skipped (tokens not alignable), {result.dropped_tokens} tokens without a "
            f"counterpart dropped; {result.seconds:.1f} s"
        )
        console.print(
            "[dim]cosine between two models' hidden states is refused (different spaces); CKA compares the "
            "geometry each gives the same tokens: 1 = same up to rotation and scale, ~0 = unrelated[/dim]"
        )
