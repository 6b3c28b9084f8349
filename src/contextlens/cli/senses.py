"""`contextlens senses induce DIR --word W`: senses of a word from its corpus occurrences."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from contextlens.analyses.corpus.sense_labels import DEFAULT_MARGIN
from contextlens.cli.common import (
    HtmlOpt,
    JsonOpt,
    PlotOpt,
    console,
    encoding_progress,
    figures_after,
    layer_text,
    note,
    print_json,
)
from contextlens.cli.params import as_flags
from contextlens.cli.registry import app

senses_app = typer.Typer(help="Sense induction on an extraction folder (see `corpus extract`).", no_args_is_help=True)
app.add_typer(senses_app, name="senses")


LayerOpt = Annotated[
    str | None,
    typer.Option(
        "--layer",
        "-l",
        help="An extracted layer (default: the top), or auto: the layer eval wic picks on dev "
        "lemmas for the folder's model (best sense separation).",
    ),
]
KOpt = Annotated[str, typer.Option("--k", help="auto (silhouette over 2..8, 1 if none separates) or a number.")]
PosOpt = Annotated[
    str,
    typer.Option("--pos", help="Part of speech of the WordNet labels: n, v, a, r, or auto (nearest on average)."),
]
SenseVectorsOpt = Annotated[
    str,
    typer.Option("--sense-vectors", help="A WordNet sense as: examples (the word in its usage examples), gloss, both."),
]
MarginOpt = Annotated[
    float,
    typer.Option(
        "--margin",
        help="Label a cluster only if its nearest WordNet sense leads the runner-up by this much (mean cosine "
        "to each sense's nearest gloss or example); below it: unlabelled, with the two closest candidates.",
    ),
]


@senses_app.command("induce")
def induce_cmd(
    folder: Annotated[Path, typer.Argument(help="A folder written by `contextlens corpus extract`.")],
    word: Annotated[str, typer.Option("--word", "-w", help="One of the folder's targets.")],
    layer: LayerOpt = None,
    k: KOpt = "auto",
    pos: PosOpt = "auto",
    sense_vectors: SenseVectorsOpt = "examples",
    margin: MarginOpt = DEFAULT_MARGIN,
    json_out: JsonOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
) -> None:
    """Cluster a word's occurrences; label each sense; show typical and ambiguous occurrences."""
    from contextlens.analyses.corpus.senses import induce_senses
    from contextlens.core.numerals import integer_text
    from contextlens.errors import InputError

    senses = k if k == "auto" else integer_text(k, signed=False)
    if senses is None:
        raise InputError(f"--k {k!r}: give auto or a number between 1 and 8")
    wanted = None if layer is None else layer_text(layer)
    choice = None
    flags = {"word": "--word", "layer": "--layer", "k": "--k", "pos": "--pos", "sense_vectors": "--sense-vectors"}
    with as_flags(**flags, margin="--margin"):
        if wanted == "auto":  # the choice first, under a note and a progress bar when it encodes
            choice = auto_layer_of_folder(folder)
        result = induce_senses(
            folder, word, wanted, senses, pos=pos.strip().lower(), sense_vectors=sense_vectors, margin=margin
        )
    with figures_after(plot, html, result, f"senses of {word}"):
        if json_out:
            print_json(result.to_dict())
        else:
            _print_senses(result, choice)


def _print_senses(result, choice) -> None:
    """How k was chosen, how the clusters were labelled, then each sense with its typical and ambiguous lines."""
    from contextlens.analyses.corpus.senses import POS_NAMES

    sil = ", ".join(f"k={kk}: {v:.3f}" for kk, v in result.silhouettes.items())
    where = escape(choice.label()) if choice is not None else f"layer {result.layer}"
    console.print(
        f"[bold]{result.word}[/bold]: {len(result.labels)} occurrences, {result.model} {where} "
        f"-> [bold]k={result.k}[/bold]",
        soft_wrap=True,
    )
    console.print(f"[dim]{result.criterion}; silhouettes {sil}[/dim]", soft_wrap=True)
    if result.pos is not None:
        scores = ", ".join(f"{p} {v:.3f}" for p, v in result.pos_scores.items())
        which = "each cluster's nearest part of speech" if result.pos_per_cluster else f"{POS_NAMES[result.pos]} senses"
        console.print(
            f"[dim]labels: WordNet senses from {result.sense_vectors}, {which} (mean nearest-sense cosine "
            f"over all occurrences: {scores})[/dim]",
            soft_wrap=True,
        )
    if result.forms_removed:
        console.print("[dim]each form's own direction removed before clustering (a --forms folder)[/dim]")
    for c in result.clusters:
        _print_cluster(c, result.forms_removed)
    for warning in result.warnings:
        note(warning)


def _print_cluster(c, forms_removed: bool) -> None:
    """One sense: its distinctive words, forms, WordNet label, typical and ambiguous occurrences."""
    console.print(
        f"\n[bold]sense {c.cluster}[/bold] ({c.size}): {escape(', '.join(c.distinctive_words))}", soft_wrap=True
    )
    if len(c.forms) > 1 or forms_removed:
        console.print("  forms: " + ", ".join(f"{f} {n}" for f, n in c.forms.items()), markup=False)
    for line in label_lines(c.gloss, c.candidates):
        console.print(line, soft_wrap=True, markup=False)
    for e in c.typical:
        console.print(f"  typical   {e['score']:.3f}  {e['marked']}", soft_wrap=True, markup=False)
    for e in c.ambiguous:
        console.print(f"  ambiguous {e['score']:+.3f}  {e['marked']}", soft_wrap=True, markup=False)


def label_lines(gloss: dict | None, candidates: list[dict]) -> list[str]:
    """A cluster's WordNet label, or why it has none and the two closest candidates."""
    if gloss:
        return [
            f"  sense {gloss['synset']} (cosine {gloss['cosine']:.3f}, {gloss['margin']:+.3f} over the next; nearest "
            f"sense of {gloss['share']:.0%} of its occurrences): {gloss['definition']}"
        ]
    if not candidates:
        return []
    from contextlens.analyses.corpus.sense_labels import label_text

    return [f"  {label_text(None, candidates)}"]  # the web's sense map shows the same line


def auto_layer_of_folder(folder: Path):
    """--layer auto for an extraction folder: its model's sense layer, chosen here with a note and a
    progress bar when the benchmark sentences must be encoded (cached after)."""
    from contextlens.analyses.corpus.folder_check import checked_folder
    from contextlens.analyses.measures.layer_choice import choose_layer
    from contextlens.core.contextual_models import load_contextual

    manifest = checked_folder(folder)
    model = load_contextual(manifest.model, manifest.precision, manifest.runtime)
    with encoding_progress(model.name) as progress:
        return choose_layer(model, "sense", progress=progress, announce=note)
