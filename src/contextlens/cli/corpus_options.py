"""The options of `contextlens corpus` and their parsing: declared once, read by its commands.

A module of its own so that :mod:`contextlens.cli.corpus` reads as the commands it offers (each a
signature and a call), the option declarations and the printing living beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextlens.errors import DataFileError, InputError
from contextlens.reports.output_paths import check_output_folder


def _output_folder(value: str | None):
    return None if value is None else check_output_folder(value)


CorpusArg = Annotated[str, typer.Argument(help="A file, folder, .jsonl, .parquet, or enwiki / lee / wordnet.")]
FolderArg = Annotated[Path, typer.Argument(help="A folder written by `contextlens corpus extract`.")]
OutOpt = Annotated[
    str | None,
    typer.Option("--out", "-o", help="Folder for the Parquet shards and manifest.json.", callback=_output_folder),
]
WordsOpt = Annotated[str | None, typer.Option("--words", help="Comma-separated target words.")]
WordsFileOpt = Annotated[Path | None, typer.Option("--words-file", help="One target word per line.")]
FormsOpt = Annotated[
    bool,
    typer.Option("--forms", help="Also match inflected forms (WordNet 3.0): bank -> banks, banked, banking."),
]
PlanFormsOpt = Annotated[bool, typer.Option("--forms", help="Also match inflected forms (WordNet 3.0).")]
LayersOpt = Annotated[str, typer.Option("--layers", help="Layers to keep: 0,6,12 or all.")]
PoolingOpt = Annotated[str, typer.Option("--pooling", help="Over a word's tokens: mean, first, last.")]
DtypeOpt = Annotated[str, typer.Option("--dtype", help="float16 (default) or float32.")]
EngineOpt = Annotated[str, typer.Option("--engine", help="local (this process) or ray (Ray Data actors).")]
AddressOpt = Annotated[str | None, typer.Option("--address", help="Ray cluster to join (e.g. auto, ray://host:10001).")]
ActorsOpt = Annotated[
    int, typer.Option("--actors", help="Ray: model actors (one model each; threads: --threads or the CPU share).")
]
PlanActorsOpt = Annotated[int, typer.Option("--actors", help="Also price N Ray actors (2 are always shown).")]
ChunkOpt = Annotated[
    int,
    typer.Option("--chunk", help="Characters of text per shard, whole documents (part of the job's identity)."),
]
OnErrorOpt = Annotated[str, typer.Option("--on-error", help="Non-UTF-8 lines: skip (counted) or stop (file:line).")]
PlanOnErrorOpt = Annotated[str, typer.Option("--on-error", help="Non-UTF-8 lines: skip or stop.")]
ForceOpt = Annotated[
    bool, typer.Option("--force", help="Write into an --out folder that holds other files (they are kept).")
]
EstimateOpt = Annotated[
    bool, typer.Option("--estimate", help="Price the job (as `corpus plan`): nothing is encoded or written.")
]
LineBreaksOpt = Annotated[
    str | None,
    typer.Option(
        "--line-breaks",
        help="Files' line breaks: paragraphs (blank lines separate paragraphs, wrapped lines are joined; the default) "
        "or lines (one sentence or paragraph per line). Continuing a folder: its own.",
    ),
]
RateOpt = Annotated[
    float | None,
    typer.Option(
        "--rate",
        help="Price the job also at this forward rate in tokens/s (a GPU's, another machine's, as you measured "
        "or expect it; none is assumed).",
    ),
]
SampleOpt = Annotated[
    int, typer.Option("--sample-bytes", help="Bytes of the corpus read to price the job (whole files or paragraphs).")
]
FolderLayerOpt = Annotated[
    str | None,
    typer.Option(
        "--layer",
        "-l",
        help="An extracted layer (default: the top), or auto: the layer eval wic picks on dev "
        "lemmas for the folder's model.",
    ),
]
LikeOpt = Annotated[
    str, typer.Option("--like", help='An example occurrence, the word in brackets: "The river [bank] flooded."')
]
TopOpt = Annotated[int, typer.Option("--top", "-k", help="How many occurrences to show.")]
FolderModelOpt = Annotated[
    str | None, typer.Option("--model", "-m", help="Must be the folder's own model (default: it is).")
]
SenseOpt = Annotated[
    int | None,
    typer.Option("--sense", help="Only the example word's occurrences induced into this sense (0..k-1)."),
]
SensesOpt = Annotated[
    bool, typer.Option("--senses", help="Label each hit with its induced sense (as `senses induce`).")
]
ExampleRuntimeOpt = Annotated[
    str | None,
    typer.Option(
        "--runtime",
        help="The example's runtime: auto (default at fp32: ONNX Runtime, starting without torch, checked "
        "within 1e-4 of torch, its check printed), torch or onnx; an int8 folder's own by default.",
    ),
]
FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        help="projector: the Embedding Projector's vectors.tsv + metadata.tsv "
        "(occurrence, target, form, document, sense).",
    ),
]
ExportOutOpt = Annotated[
    Path | None, typer.Option("--out", "-o", help="Folder for the files (default: FOLDER/projector-layer_L).")
]
ExportSensesOpt = Annotated[
    bool,
    typer.Option(
        "--senses/--no-senses",
        help="The sense column: each occurrence's induced sense at the layer, as `corpus search --sense` "
        "numbers them ('K: synset (definition)'; '-' for a word with under 3 occurrences). It loads the "
        "folder's model; --no-senses leaves the column out.",
    ),
]

CorpusDeviceOpt = Annotated[
    str,
    typer.Option(
        "--device",
        help="auto (default: a GPU where there is one, else the CPU; int8 stays on the CPU), cpu, cuda or cuda:N. "
        "--engine ray: the actors' device, from the cluster's GPUs (one whole GPU each, its cuda:0; the driver "
        "loads no model). A folder continues on another device only at fp32 (within the printed check).",
    ),
]
ExampleDeviceOpt = Annotated[
    str | None,
    typer.Option(
        "--device",
        help="Where the example runs: auto, cpu, cuda or cuda:N (default: the CPU for an fp32 or int8 folder, "
        "whose vectors agree across devices within the printed check; else the folder's own device).",
    ),
]
PriceDeviceOpt = Annotated[
    str,
    typer.Option(
        "--device",
        help="auto (default), cpu, cuda or cuda:N: where the forward rate is measured (this machine's; price "
        "another machine's GPU with --rate).",
    ),
]

EXTRACT_FLAGS = {
    "source": "CORPUS",
    "out": "--out",
    "targets": "--words",
    "forms": "--forms",
    "model": "--model",
    "layers": "--layers",
    "pooling": "--pooling",
    "dtype": "--dtype",
    "chunk_chars": "--chunk",
    "engine": "--engine",
    "address": "--address",
    "actors": "--actors",
    "threads": "--threads",
    "on_error": "--on-error",
    "line_breaks": "--line-breaks",
    "force": "--force",
    "precision": "--precision",
    "runtime": "--runtime",
    "device": "--device",
}
"""Each keyword of :func:`extract_corpus` as the option a user typed (an error names the option)."""


def parse_layers(value: str) -> list[int] | None:
    if value.strip().lower() == "all":
        return None
    try:
        return [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"--layers {value!r}: give numbers like 0,6,12 or 'all'") from None


def target_words(words: str | None, words_file: Path | None) -> list[str]:
    out = [w for w in (words or "").split(",") if w.strip()]
    if words_file is not None:
        try:
            out += [line.strip() for line in words_file.read_text(encoding="utf-8").splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError) as exc:
            raise DataFileError(f"cannot read --words-file {words_file}: {exc}") from None
    if not out:
        raise InputError("no target words; pass --words bank,spring or --words-file FILE")
    return out
