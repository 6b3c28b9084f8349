"""`contextlens tune MODEL --name NAME`: fine-tune a shipped encoder for word senses; the result is
usable as `-m NAME` by every command (docs/tuning.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from contextlens.cli.common import JsonOpt, ThreadsOpt, console, err_console, note, print_json, use_threads
from contextlens.cli.registry import app

if TYPE_CHECKING:
    from contextlens.analyses.tuning.train import TuneResult, TuneStep


REPORT = "report"


@app.command("tune")
def tune_cmd(  # noqa: PLR0913 - a command: one parameter per option
    model: Annotated[
        str, typer.Argument(help="The encoder to start from (minilm, mpnet, a local folder), or `report`.")
    ],
    tuned: Annotated[str | None, typer.Argument(help="With `report`: the tuned model to report on.")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Name to register it under; then pass -m NAME.")] = None,
    layer: Annotated[int, typer.Option("--layer", "-l", help="Layer whose pooled target state learns (1..L).")] = -1,
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over the train lemmas.")] = 4,
    max_steps: Annotated[int | None, typer.Option("--max-steps", help="Stop after this many steps.")] = None,
    lemmas_per_step: Annotated[int, typer.Option("--lemmas-per-step", help="Lemmas per optimizer step.")] = 16,
    learning_rate: Annotated[float, typer.Option("--lr", help="AdamW peak learning rate.")] = 5e-5,
    temperature: Annotated[float, typer.Option("--temperature", help="Contrastive softmax temperature.")] = 0.1,
    eval_every: Annotated[int, typer.Option("--eval-every", help="Steps between dev evaluations.")] = 25,
    patience: Annotated[int, typer.Option("--patience", help="Evaluations without gain before stopping.")] = 4,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the lemma order and the data sample.")] = 0,
    max_lemmas: Annotated[int | None, typer.Option("--max-lemmas", help="Use a sample of the lemmas.")] = None,
    checkpoint_every: Annotated[int, typer.Option("--checkpoint-every", help="Steps between checkpoints.")] = 25,
    glosses: Annotated[
        bool, typer.Option("--glosses", help="Add each sense's WordNet definition as a view (more lemmas).")
    ] = False,
    keep_last: Annotated[bool, typer.Option("--keep-last", help="Keep the last step's weights.")] = False,
    restart: Annotated[bool, typer.Option("--restart", help="Ignore an interrupted run's checkpoint.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace a tuned model of the same name.")] = False,
    onnx: Annotated[bool, typer.Option("--onnx/--no-onnx", help="Export and check the ONNX graph after.")] = True,
    quick: Annotated[bool, typer.Option("--quick", help="With `report`: the quick benchmark sets.")] = False,
    threads: ThreadsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Fine-tune MODEL so a word's hidden state separates its senses (WordNet lemmas no benchmark scores);
    `tune report NAME`: what tuning changed, layer by layer, and what it cost."""
    if model == REPORT:
        _report(tuned, quick, threads, json_out)
        return
    if tuned is not None:
        raise typer.BadParameter(f"tune takes one MODEL, got {tuned!r} too; for a report: contextlens tune report NAME")
    from contextlens.analyses.tuning.folder import check_new_name
    from contextlens.analyses.tuning.settings import TuneSettings, check_base

    settings = dict(
        layer=layer, epochs=epochs, max_steps=max_steps, lemmas_per_step=lemmas_per_step, learning_rate=learning_rate,
        temperature=temperature, eval_every=eval_every, patience=patience, seed=seed, max_lemmas=max_lemmas,
        checkpoint_every=checkpoint_every, glosses=glosses, keep_best=not keep_last,
    )  # fmt: skip
    check_new_name(name, force)  # every refusal before torch loads
    TuneSettings(**settings).checked(check_base(model).num_layers)
    use_threads(threads)
    from contextlens.analyses.tuning.train import tune

    with _loss_bar(name) as told:
        result = tune(model, name, force=force, restart=restart, export_onnx=onnx, on_step=told, **settings)
    if json_out:
        print_json(result.to_dict())
        return
    _render(result)


@contextmanager
def _loss_bar(name: str) -> Iterator[Callable[[TuneStep], None]]:
    """A bar on stderr (a terminal only) with the step's loss and the best dev AUC so far."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, disable=not err_console.is_terminal) as bar:
        task = bar.add_task(f"tune {name}", total=None)

        def told(step: TuneStep) -> None:
            what = f"tune {name}: loss {step.loss:.4f}, dev AUC best {step.best_dev_auc:.4f} (step {step.best_step})"
            bar.update(task, description=what, completed=step.step, total=step.total)

        yield told


def _render(result: TuneResult) -> None:
    data, check = result.data, result.data["check"]
    table = Table(title=f"{result.name}: {result.base} tuned for word senses", show_header=False)
    table.add_column("what")
    table.add_column("value")
    rows = [
        ("layer", f"{result.layer} (blocks 1..{result.layer} learned; the input rows did not)"),
        (
            "data",
            f"{data['counts']['train_lemmas']:,} train lemmas ({data['counts']['train_examples']:,} examples), "
            f"{data['counts']['dev_lemmas']:,} dev lemmas",
        ),  # fmt: skip
        (
            "split check",
            f"{check['test_lemmas_in_tuning']} test lemmas, {check['test_sentences_in_tuning']} test "
            f"sentences in training (of {check['benchmark_lemmas']:,} benchmark lemmas, "
            f"{check['benchmark_texts']:,} sentences); split {data['split_hash'][:12]}",
        ),  # fmt: skip
        (
            "steps",
            f"{result.steps} ({result.stopped}); kept step {result.best_step}"
            + (f"; resumed from step {result.resumed_from}" if result.resumed_from else ""),
        ),  # fmt: skip
        ("dev AUC", f"{result.dev_auc_base:.4f} (base) -> {result.dev_auc_best:.4f}"),
        (
            "time",
            f"{result.train_seconds:.1f} s on {result.threads} thread(s)"
            + (" (reproducible)" if result.threads == 1 else ""),
        ),  # fmt: skip
        ("ONNX", "exported and checked" if result.onnx else "not exported"),
        ("saved", result.path),
    ]
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    note(f"use it: contextlens eval wic -m {result.name}")


def _report(name: str | None, quick: bool, threads: int | None, json_out: bool) -> None:
    from contextlens.core.resources import cache_dir
    from contextlens.core.tuned_store import read_record

    if name is None or read_record(cache_dir(), name) is None:
        raise typer.BadParameter(
            f"`tune report` needs a tuned model's name, got {name!r} (`contextlens models` lists them)"
        )
    use_threads(threads)
    from contextlens.analyses.tuning.report import tune_report

    report = tune_report(name, "quick" if quick else "full")
    if json_out:
        print_json(report.to_dict())
        return
    table = Table(title=f"{report.name} vs {report.base}: per layer (tuned at layer {report.tuned_layer})")
    for column in ("layer", "WiC test base", "WiC test tuned", "CKA base-tuned"):
        table.add_column(column)
    cka = {r["layer"]: r["cka"] for r in report.cka}
    for row in report.wic:
        table.add_row(str(row["layer"]), f"{row['base_test']:.3f}", f"{row['tuned_test']:.3f}",
                      f"{cka.get(row['layer'], float('nan')):.3f}")  # fmt: skip
    console.print(table)
    base, tuned = report.wic_chosen["base"], report.wic_chosen["tuned"]
    console.print(f"WiC at the dev-chosen layer: base {base['test_accuracy_at_dev_layer']:.3f} "
                  f"(layer {base['layer_by_dev']}), tuned {tuned['test_accuracy_at_dev_layer']:.3f} "
                  f"(layer {tuned['layer_by_dev']})")  # fmt: skip
    cost = Table(title="what it cost")
    for column in ("measure", "base", "tuned"):
        cost.add_column(column)
    for metric in ("ndcg@10", "spearman"):
        cost.add_row(f"Lee retrieval {metric} (sentence embedding)", f"{report.lee['base'][metric]:.4f}",
                     f"{report.lee['tuned'][metric]:.4f}")  # fmt: skip
    for row in report.similarity:
        cost.add_row(f"{row['dataset']} Spearman ({row['reduction']}, best layer)", f"{row['base_spearman']:.4f}",
                     "-" if row["tuned_spearman"] is None else f"{row['tuned_spearman']:.4f}")  # fmt: skip
    console.print(cost)
    lesson = Table(title="the lesson's \"bank\" (money vs river sentence) and each model's random-word mean")
    for column in ("layer", "cosine base", "cosine tuned", "− random base", "− random tuned", "random mean base",
                   "random mean tuned"):  # fmt: skip
        lesson.add_column(column, justify="right")
    for bank, spread in zip(report.bank, report.anisotropy, strict=True):
        lesson.add_row(str(bank["layer"]), *(f"{bank[k]:.3f}" for k in ("base_cosine", "tuned_cosine")),
                       *(f"{bank[k]:+.3f}" for k in ("base_minus_random", "tuned_minus_random")),
                       *(f"{spread[k]:.3f}" for k in ("base_random_mean", "tuned_random_mean")))  # fmt: skip
    console.print(lesson)
    for line in report.notes:
        note(line)
