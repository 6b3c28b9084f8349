"""Run the catalogue of user mistakes through the real CLI and print what each one gets.

    PYTHONPATH=src python scripts/error_catalogue.py > docs/errors.md

Every row is one mistake a new user makes, run as a subprocess (real stderr, real exit code);
nothing in the table is typed by hand. A row whose message is not one ``error:`` line, or whose
exit code is not 2, is flagged ``NOT ONE LINE`` so that a regression shows in the document.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

TWO = ["The [bank] approved the loan.", "We sat on the river [bank]."]
M = ["-m", "minilm"]


def catalogue(tmp: Path) -> list[tuple[str, list[str]]]:
    """(mistake, arguments) pairs; models are the small shipped ones so the run takes minutes."""
    a_file = tmp / "a-file"
    a_file.write_text("not a folder\n")
    empty = tmp / "empty.txt"
    empty.write_text("")
    river = tmp / "river.txt"
    river.write_text("We sat on the river bank.\nThe bank approved the loan.\n")
    return [
        ("unknown command", ["frobnicate"]),
        ("unknown option", ["compare", *TWO, "--bogus"]),
        ("missing argument", ["trace"]),
        ("option without its value", ["compare", *TWO, "--model"]),
        ("non-integer number", ["attention", TWO[0], *M, "--layer", "2.5"]),
        ("one sentence for compare", ["compare", TWO[0], *M]),
        ("no [marker] and no --word", ["compare", "The bank.", "The river bank.", *M]),
        ("unbalanced marker", ["compare", "The [bank flooded.", TWO[1], *M]),
        ("two markers in one sentence", ["compare", "The [bank] and [river].", TWO[1], *M]),
        ("--word not in the sentence", ["compare", "The bank.", "A river.", "--word", "bank", *M]),
        ("empty sentence", ["compare", "   ", TWO[1], *M]),
        ("unknown --pooling", ["compare", *TWO, *M, "--pooling", "max"]),
        ("unknown contextual model", ["compare", *TWO, "--model", "no-such-model"]),
        ("unknown static model", ["compare", *TWO, *M, "--static", "no-such-static"]),
        ("word GloVe does not know (CJK)", ["compare", "我爱[银行]。", "他去[银行]了。", *M]),
        ("--static none where a static model is needed", ["rank", *M, "--static", "none"]),
        ("--plot with an unknown file type", ["compare", *TWO, *M, "--plot", "fig.xyz"]),
        ("--plot into a read-only folder", ["compare", *TWO, *M, "--plot", "/sys/fig.png"]),
        ("--plot into a missing folder", ["compare", *TWO, *M, "--plot", str(tmp / "missing" / "fig.png")]),
        ("--plot naming a folder", ["compare", *TWO, *M, "--plot", str(tmp)]),
        ("--html into a read-only folder", ["compare", *TWO, *M, "--html", "/sys/page.html"]),
        ("--html with a .png name", ["compare", *TWO, *M, "--html", "page.png"]),
        ("demo --out is a file", ["demo", *M, "--out", str(a_file)]),
        ("demo --out in a read-only folder", ["demo", *M, "--out", "/sys/contextlens-demo"]),
        ("eval --plot with an unknown file type", ["eval", "wic", "--quick", *M, "--plot", "fig.xyz"]),
        ("attention on three sentences", ["attention", *TWO, "The [bank] is closed.", *M]),
        ("attention layer out of range", ["attention", TWO[0], *M, "--layer", "99"]),
        ("attention head out of range", ["attention", TWO[0], *M, "--head", "99"]),
        ("attention --top 0", ["attention", TWO[0], *M, "--top", "0"]),
        ("trace --top 0", ["trace", TWO[0], *M, "--top", "0"]),
        ("hidden-state layer out of range", ["explore", "bank", *M, "--layer", "99"]),
        ("explore a word not in the set", ["explore", "zzzz", *M]),
        ("explore --sentences file missing", ["explore", *M, "--sentences", str(tmp / "missing.tsv")]),
        ("probe without anchors", ["probe", TWO[1], *M]),
        ("probe template without [{word}]", ["probe", TWO[1], "-a", "river", *M, "--template", "The word."]),
        ("rank with a missing pairs file", ["rank", str(tmp / "missing.tsv"), *M]),
        ("neighbors without a word", ["neighbors"]),
        ("neighbors malformed --analogy", ["neighbors", "--analogy", "king-man-queen"]),
        ("--precision that does not exist", ["compare", *TWO, *M, "--precision", "fp16"]),
        ("--threads 0", ["compare", *TWO, *M, "--threads", "0"]),
        ("--runtime that does not exist", ["compare", *TWO, *M, "--runtime", "tensorrt"]),
        ("--runtime where attention weights are read", ["attention", TWO[0], *M, "--runtime", "onnx"]),
        ("index build from a missing file", ["index", "build", str(tmp / "missing.txt"), "--out", str(tmp / "ix")]),
        ("index query on a folder with no index", ["index", "search", str(tmp), "river bank"]),
        ("capacity with a negative count", ["capacity", "--count", "-5", "--dim", "384"]),
        ("capacity with an unknown index type", ["capacity", "--count", "1000", "--dim", "384", "--index", "lsh"]),
        ("cka on an unknown corpus", ["cka", *M, "--corpus", "nowhere"]),
        ("cost --count 0", ["cost", *M, "--count", "0"]),
        (
            "corpus extract from a missing file",
            ["corpus", "extract", str(tmp / "none.txt"), "--words", "bank", "--out", str(tmp / "x1"), *M],
        ),
        (
            "corpus extract from an empty file",
            ["corpus", "extract", str(empty), "--words", "bank", "--out", str(tmp / "x2"), *M],
        ),
        (
            "corpus extract of a word that never occurs",
            ["corpus", "extract", str(river), "--words", "zyzzyva", "--out", str(tmp / "x3"), *M],
        ),
        ("corpus extract with no --words", ["corpus", "extract", str(river), "--out", str(tmp / "x4"), *M]),
        (
            "corpus extract, unknown --layers",
            ["corpus", "extract", str(river), "--words", "bank", "--out", str(tmp / "x5"), *M, "--layers", "0,99"],
        ),
        (
            "corpus extract, a Ray address that does not answer",
            [
                "corpus",
                "extract",
                str(river),
                "--words",
                "bank",
                "--out",
                str(tmp / "x6"),
                *M,
                "--engine",
                "ray",
                "--address",
                "127.0.0.1:1",
            ],
        ),
        ("senses induce on a folder that is not an extraction", ["senses", "induce", str(tmp), "--word", "bank"]),
        (
            "eval contextuality --corpus on a missing folder",
            ["eval", "contextuality", *M, "--corpus", str(tmp / "nowhere")],
        ),
        ("serve with a malformed --index", ["serve", *M, "--index", "no-equals-sign"]),
    ]


def run(args: list[str]) -> tuple[int, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(
        [sys.executable, "-m", "contextlens", *args], capture_output=True, text=True, env=env, timeout=600
    )
    return done.returncode, done.stderr.strip()


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ⏎ ")


def main() -> None:
    print("# What each user mistake prints\n")
    print(
        "Generated by `scripts/error_catalogue.py`, which runs every row through the real CLI. Every mistake "
        "prints one line `error: ...` on stderr and exits with code 2; output paths are checked before any "
        "model runs.\n"
    )
    print("| mistake | command | message (stderr) | exit |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        for mistake, args in catalogue(tmp):
            code, err = run(args)
            flag = "" if code == 2 and len(err.splitlines()) == 1 and err.startswith("error: ") else " NOT ONE LINE"
            shown = " ".join("'" + a + "'" if " " in a or not a else a for a in args).replace(str(tmp), "TMP")
            message = err.replace(str(tmp), "TMP")
            print(f"| {mistake} | `contextlens {cell(shown)}` | {cell(message)} | {code}{flag} |")


if __name__ == "__main__":
    main()
