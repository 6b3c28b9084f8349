"""`contextlens static train|distill|list`: static models made here, usable as every `--static NAME`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from contextlens.cli.common import JsonOpt, ThreadsOpt, console, contextual_option, default_threads, note, print_json
from contextlens.cli.registry import app

static_app = typer.Typer(
    help="Static models made here: word2vec / fastText trained on a corpus, a model distilled from a transformer.",
    no_args_is_help=True,
)
app.add_typer(static_app, name="static")

NameOpt = Annotated[str, typer.Option("--name", help="Name to save it under; then pass it as --static NAME.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Replace a made model of the same name.")]


def _table(title: str, rows: list[tuple[str, str]]) -> None:
    table = Table(title=title, show_header=False)
    table.add_column("what")
    table.add_column("value")
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)


@static_app.command("train")
def train_cmd(  # noqa: PLR0913 - a command: one parameter per option
    corpus: Annotated[
        str,
        typer.Argument(help="installed (enwiki + lee + wordnet, default), one of them, a file or a folder of .txt."),
    ] = "installed",
    name: NameOpt = ...,  # type: ignore[assignment]
    method: Annotated[str, typer.Option("--method", help="word2vec or fasttext (subword n-grams).")] = "word2vec",
    sg: Annotated[bool, typer.Option("--sg/--cbow", help="Skip-gram (default) or CBOW.")] = True,
    dim: Annotated[int, typer.Option("--dim", help="Vector size.")] = 100,
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over the corpus.")] = 5,
    window: Annotated[int, typer.Option("--window", help="Context words on each side.")] = 5,
    min_count: Annotated[int, typer.Option("--min-count", help="Drop words seen fewer times.")] = 5,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the initial vectors and negative samples.")] = 0,
    workers: Annotated[
        int,
        typer.Option("--workers", help="Training threads; 1 (default) is reproducible from --seed, more is faster."),
    ] = 1,
    buckets: Annotated[
        int | None, typer.Option("--buckets", help="fastText only: hashed n-gram vectors kept (default 200,000).")
    ] = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Train word2vec or fastText with gensim on a corpus; saved in the cache as --name."""
    from contextlens.core.static_store import check_new

    check_new(name, force)  # before the corpus is read
    if workers > default_threads():
        note(f"--workers {workers} is more than the {default_threads()} cores this process may use")
    from contextlens.analyses.static.train import train_static

    result = train_static(
        corpus, method, name=name, sg=sg, dim=dim, epochs=epochs, window=window, min_count=min_count,
        seed=seed, workers=workers, buckets=buckets, force=force, show_progress_bar=True,
    )  # fmt: skip
    if json_out:
        print_json(result.to_dict())
        return
    p = result.parameters
    _table(
        f"{result.name}: {result.method} {result.architecture if result.method == 'word2vec' else ''}".rstrip(),
        [
            ("corpus", ", ".join(result.corpus)),
            ("size", f"{result.documents:,} documents, {result.lines:,} lines, {result.tokens:,} tokens"),
            ("vocabulary", f"{result.vocabulary:,} words (seen at least {p['min_count']} times)"),
            ("parameters", ", ".join(f"{k}={v}" for k, v in p.items() if k != "min_count")),
            ("time", f"read {result.read_seconds:.1f} s, trained {result.train_seconds:.1f} s"),
            ("reproducible", "yes (one worker, --seed)" if result.reproducible else "no (several workers)"),
            ("saved", result.path),
        ],
    )
    note(f"use it: contextlens neighbors WORD --static {result.name}")


@static_app.command("distill")
def distill_cmd(
    model: Annotated[str, typer.Argument(help="Teacher: minilm, mpnet or a local model folder (offline).")],
    name: NameOpt = ...,  # type: ignore[assignment]
    pca_dims: Annotated[int, typer.Option("--pca-dims", help="Dimensions kept by PCA (model2vec: 256).")] = 256,
    sif_coefficient: Annotated[float, typer.Option("--sif", help="SIF weighting (model2vec: 1e-4).")] = 1e-4,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Tokens per forward pass.")] = 256,
    threads: ThreadsOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Distill a static model from a contextual model by model2vec's recipe (one vector per token)."""
    from contextlens.analyses.static.distill import check_arguments, distill_static
    from contextlens.cli.common import check_model
    from contextlens.core.static_store import check_new

    check_new(name, force)
    check_arguments(pca_dims, sif_coefficient, batch_size)
    check_arguments(pca_dims, sif_coefficient, batch_size, check_model(model))  # its hidden size, from config.json
    teacher = contextual_option(model, threads=threads)

    result = distill_static(
        teacher, name=name, pca_dims=pca_dims, sif_coefficient=sif_coefficient, batch_size=batch_size,
        force=force, show_progress_bar=True,
    )  # fmt: skip
    if json_out:
        print_json(result.to_dict())
        return
    _table(
        f"{result.name}: distilled from {result.teacher}",
        [
            ("teacher", f"{result.teacher} ({result.teacher_kind}, {result.teacher_dim}-d)"),
            ("vectors", f"{result.tokens:,} tokens x {result.dim} dims"),
            ("PCA", f"{result.teacher_dim} -> {result.dim} dims, {result.explained_variance:.1%} of the variance kept"),
            ("weighting", f"SIF {result.sif_coefficient:g}, Zipf ranks; mean pooling"),
            ("time", f"{result.seconds:.1f} s"),
            ("recipe", result.recipe),
            ("saved", result.path),
        ],
    )
    note(f"use it: contextlens neighbors WORD --static {result.name}")


@static_app.command("list")
def list_cmd(json_out: JsonOpt = False) -> None:
    """The static models made here, with how each was made."""
    from contextlens.core.static_store import made_models

    rows = made_models()
    if json_out:
        print_json(rows)
        return
    if not rows:
        console.print("no static models made yet; make one with: contextlens static train lee --name w2v-lee")
        return
    table = Table(title="static models made here")
    for col in ("name", "method", "from", "size", "time"):
        table.add_column(col)
    for r in rows:
        if r.get("method") == "distilled":
            made_from, size = f"teacher {r.get('teacher')}", f"{r.get('tokens', 0):,} tokens x {r.get('dim')}"
            took = f"{r.get('seconds', 0):.1f} s"
        else:
            made_from = ", ".join(r.get("corpus", []))
            size = f"{r.get('vocabulary', 0):,} words, {r.get('tokens', 0):,} tokens trained on"
            took = f"{r.get('train_seconds', 0):.1f} s"
        method = r.get("method", "?") + (f" {r['architecture']}" if r.get("method") == "word2vec" else "")
        table.add_row(r["name"], method, made_from, size, took)
    console.print(table)
