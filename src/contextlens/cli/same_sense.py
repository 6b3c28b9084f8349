"""`contextlens same-sense`: do two uses of a word share a sense? The rule `eval wic` tunes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from contextlens.cli.common import (
    DeviceOpt,
    JsonOpt,
    ModelsOpt,
    OccurrenceOpt,
    PlotOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    WordOpt,
    console,
    encoding_progress,
    layer_numbers_to_check,
    layer_text,
    load_model,
    model_choice,
    models_option,
)
from contextlens.cli.registry import app
from contextlens.cli.side_by_side import answer_and_show
from contextlens.core.occurrences import locate_all
from contextlens.errors import InputError

if TYPE_CHECKING:
    from contextlens.analyses.lesson.same_sense import SameSenseAnswer


@app.command("same-sense")
def same_sense_cmd(
    sentences: Annotated[list[str], typer.Argument(help="Exactly two sentences, target in \\[brackets].")],
    model: ModelsOpt = None,
    layer: Annotated[
        str, typer.Option("--layer", "-l", help="auto (the layer eval wic picks on dev lemmas) or a layer number.")
    ] = "auto",
    quick: Annotated[
        bool, typer.Option("--quick", help="Tune on the small benchmark subset (seconds; for tests, not for answers).")
    ] = False,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "auto",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    word: WordOpt = None,
    occurrence: OccurrenceOpt = 0,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
) -> None:
    """Same sense or not: the dev-tuned cosine threshold of eval wic, a probability, and the rule's accuracy."""
    occs = locate_all(sentences, word, occurrence)
    if len(occs) != 2:
        raise InputError(f"same-sense compares exactly two sentences, got {len(occs)}")
    from contextlens.analyses.lesson.same_sense import check_same_word, same_sense, same_sense_rule

    check_same_word(*occs)  # before any weights load
    wanted = layer_text(layer)
    names = models_option(model)
    layers = layer_numbers_to_check(wanted)
    chosen = [model_choice(name, precision, runtime, layers=layers, device=device) for name in names]
    models = [load_model(one, threads) for one in chosen]
    size = "quick" if quick else "full"

    def ask(contextual):  # noqa: ANN001, ANN202 - one model's answer
        with encoding_progress(contextual.name) as progress:  # the rule's one-time encoding, under a bar
            same_sense_rule(contextual, wanted, size, progress)
        return same_sense(occs[0], occs[1], contextual, wanted, size)

    answer_and_show(models, ask, render_answer, command="same-sense", json_out=json_out, plot=plot)


def render_answer(answer: SameSenseAnswer) -> None:
    """The answer first, then how often the rule is right, then the scale of the cosine."""
    r = answer.rule
    for i, o in enumerate(answer.occurrences, 1):
        console.print(f"[bold]{i}.[/bold] {escape(o.marked())}")
    verdict = "[bold green]same sense[/bold green]" if answer.same else "[bold red]different senses[/bold red]"
    sign = "≥" if answer.same else "<"
    console.print(
        f"{verdict}: cosine {answer.cosine:.4f} {sign} threshold {r.threshold:.4f} at layer {r.layer} "
        f"({r.layer_choice}); P(same) = {answer.probability:.2f}"
    )
    console.print(
        f"this rule on {r.test_pairs:,} held-out test pairs ({r.test_lemmas:,} lemmas never seen in tuning): "
        f"accuracy {r.test_accuracy:.3f} (chance {r.chance:.3f}; dev {r.dev_accuracy:.3f} on {r.dev_pairs:,} pairs); "
        f"P(same) from a logistic fit on the {r.dev_pairs:,} dev pairs (Platt scaling), expected calibration error "
        f"on test {r.test_ece:.3f}",
        soft_wrap=True,
    )
    if answer.baseline_mean is not None:
        console.print(
            f"[dim]random-word baseline at layer {r.layer}: mean {answer.baseline_mean:.3f}; this cosine is above "
            f"{answer.baseline_percentile:.1f}% of unrelated word pairs[/dim]"
        )
    for note in answer.notes:
        console.print(f"[dim]{escape(note)}[/dim]")
    if r.size == "quick":
        console.print("[yellow]--quick: tuned on a few dozen pairs; the accuracy above is not a measurement[/yellow]")
