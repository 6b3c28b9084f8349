"""Run the catalogue of user mistakes through the real CLI and print what each one gets.

    PYTHONPATH=src python scripts/error_catalogue.py > docs/errors.md

Every row is one mistake a new user makes, run by the real CLI in a process of its own (real
stderr, real exit code); nothing in the table is typed by hand. A row whose message is not one ``error:`` line, or whose
exit code is not 2, is flagged ``NOT ONE LINE`` so that a regression shows in the document; one
that runs past its time limit (a hang, a server that starts) is flagged ``TIMED OUT``, and a
message longer than ``LONGEST`` characters ``TOO LONG``. The rows run ``CATALOGUE_JOBS`` at a
time (default 4), each in a child forked from one process that imported the CLI once, so the
catalogue takes a couple of minutes, not one interpreter start per row; ``CATALOGUE_FRESH=1``
starts a fresh ``python -m contextlens`` per row instead. The table keeps the rows' order.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}

TWO = ["The [bank] approved the loan.", "We sat on the river [bank]."]
M = ["-m", "minilm"]
LONGEST = 600  # characters: a longer message is not one readable line
TIMEOUT = 90  # seconds per row; a mistake that hangs or a server that starts is cut off here
HANG = 20  # seconds for rows that hang or start a server when the mistake is not caught


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
        ("an option of one value given twice (two models)", ["attention", TWO[0], "-m", "minilm", "-m", "mpnet"]),
        ("non-integer number", ["attention", TWO[0], *M, "--layer", "2.5"]),
        ("a superscript digit as a number", ["same-sense", *TWO, *M, "--quick", "--layer", "²"]),
        ("same-sense on two different words", ["same-sense", "The river [bank] flooded.", "The [river] rose.", *M]),
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
        ("--precision that does not exist", ["compare", *TWO, *M, "--precision", "fp99"]),
        ("--device that does not exist", ["compare", *TWO, *M, "--device", "tpu"]),
        ("--device cuda on a machine without a GPU", ["compare", *TWO, *M, "--device", "cuda"]),
        ("--precision int8 on a GPU", ["compare", *TWO, *M, "--precision", "int8", "--device", "cuda:0"]),
        ("--threads 0", ["compare", *TWO, *M, "--threads", "0"]),
        ("--runtime that does not exist", ["compare", *TWO, *M, "--runtime", "tensorrt"]),
        (
            "attention weights on ONNX int8 (no attention graph)",
            ["attention", TWO[0], *M, "--runtime", "onnx", "--precision", "int8"],
        ),
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
        (
            "corpus extract, a local Ray that cannot start (its temporary folder not writable)",
            ["corpus", "extract", str(river), "--words", "bank", "--out", str(tmp / "x7"), *M, "--engine", "ray"],
            TIMEOUT,
            {"RAY_TMPDIR": "/sys/contextlens-ray"},
        ),
        ("senses induce on a folder that is not an extraction", ["senses", "induce", str(tmp), "--word", "bank"]),
        (
            "eval contextuality --corpus on a missing folder",
            ["eval", "contextuality", *M, "--corpus", str(tmp / "nowhere")],
        ),
        ("serve with a malformed --index", ["serve", *M, "--index", "no-equals-sign"]),
        ("prepare a model that is not a shipped encoder", ["prepare", "-m", "glove-50d"]),
        ("prepare an unknown model", ["prepare", "-m", "bert-huge"]),
        *newer_commands(tmp),
        *static_commands(tmp),
    ]


def extraction(tmp: Path, name: str, river: Path) -> Path:
    """A fresh copy of one small, complete extraction folder (made once, by the real CLI), so that
    rows that repair or resume a folder never see another row's changes."""
    good = tmp / "extraction"
    if not good.exists():
        args = ["corpus", "extract", str(river), "--words", "bank", "--out", str(good), *M]
        run(args, tmp)
    copy = tmp / name
    shutil.copytree(good, copy)
    return copy


def shard(folder: Path) -> Path:
    return next(folder.glob("part-*.parquet"), folder / "part-000000.parquet")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def newer_commands(tmp: Path) -> list[tuple[str, list[str]] | tuple[str, list[str], int]]:
    """The corpus, senses, eval --corpus, cost, cka, serve, index and capacity mistakes."""
    import json

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    river = tmp / "corpus.txt"
    river.write_text("We sat on the river bank.\nThe bank approved the loan.\nThe bank was closed.\n")
    x = ["--words", "bank", *M]
    deep = tmp / "deep.jsonl"
    deep.write_text('{"text": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    fifo = tmp / "fifo.txt"
    os.mkfifo(fifo)
    binary = tmp / "binary.txt"
    binary.write_bytes(bytes(range(256)) * 64)
    latin1 = tmp / "latin1.txt"
    latin1.write_bytes("Le caf\xe9 pr\xe8s de la bank.\n".encode("latin-1"))
    utf16 = tmp / "utf16.txt"
    utf16.write_text("We sat on the river bank.\n", encoding="utf-16")
    numbers = tmp / "numbers.parquet"
    pq.write_table(pa.table({"text": [1, 2, 3]}), numbers)
    words = tmp / "absent-words.txt"
    words.write_text("".join(f"zqx{i:04d}\n" for i in range(4999)))
    malformed = tmp / "malformed-glove.txt"
    malformed.write_text("bank 0.1 0.2\nriver 0.3\n")
    vectors = tmp / "vectors.npy"
    np.save(vectors, np.arange(24, dtype=np.float32).reshape(3, 8))
    flat_npy = tmp / "flat.npy"
    np.save(flat_npy, np.arange(8, dtype=np.float32))
    fake_npy = tmp / "fake.npy"
    fake_npy.write_text("not an array\n")
    mine = tmp / "my-notes"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n")
    foreign = tmp / "foreign-out"
    foreign.mkdir()
    shutil.copy(numbers, foreign / "part-000000.parquet")
    others = tmp / "other-files"
    others.mkdir()
    (others / "notes.txt").write_text("mine\n")
    index = tmp / "index"
    run(["index", "build", str(river), "--out", str(index), *M], tmp)  # a good index, made by the real CLI
    damaged_index = tmp / "damaged-index"
    shutil.copytree(index, damaged_index)
    for faiss_file in damaged_index.glob("*/index.faiss"):
        faiss_file.write_bytes(faiss_file.read_bytes()[:100])  # its checksum no longer matches the manifest

    listed = {}
    for kind, content in (("list", "[]"), ("null", "null")):
        folder = tmp / f"manifest-{kind}"
        folder.mkdir()
        (folder / "manifest.json").write_text(content)
        listed[kind] = folder
    damaged = {}
    for use in ("extract", "senses", "eval"):
        for kind in ("zero-byte", "truncated", "foreign"):
            folder = extraction(tmp, f"{use}-{kind}-shard", river)
            part = shard(folder)
            blob = part.read_bytes()
            if kind == "zero-byte":
                part.write_bytes(b"")
            elif kind == "truncated":
                part.write_bytes(blob[: len(blob) // 2])
            else:
                shutil.copy(numbers, part)
            damaged[use, kind] = folder
    good = extraction(tmp, "extraction-used", river)
    fp32 = extraction(tmp, "extraction-fp32", river)
    ctx = ["eval", "contextuality", *M, "--corpus"]
    ce = ["corpus", "extract"]
    si = ["senses", "induce"]
    cs = ["corpus", "search", str(good)]
    linked = tmp / "extraction-linked-out"
    shutil.copytree(good, linked)
    outside = tmp / "outside.txt"
    outside.write_text("not the folder's\n")
    victim = shard(linked)
    victim.unlink()
    victim.symlink_to(outside)
    checked = {kind: extraction(tmp, f"extraction-{kind}", river) for kind in ("nan", "zeros", "mpnet", "layers")}
    for kind, fill in (("nan", float("nan")), ("zeros", 0.0)):  # the top layer's vectors rewritten by pyarrow
        table = pq.read_table(shard(checked[kind]))
        name = table.schema.names[-1]
        width = table.schema.field(name).type.list_size
        filled = pa.FixedSizeListArray.from_arrays(pa.array([fill] * (table.num_rows * width), pa.float16()), width)
        pq.write_table(table.set_column(len(table.schema) - 1, table.schema.field(name), filled), shard(checked[kind]))
    for kind, change in (("mpnet", {"model": "mpnet"}), ("layers", {"layers": "0,6"})):  # hand-edited manifests
        manifest_file = checked[kind] / "manifest.json"
        manifest_file.write_text(json.dumps(json.loads(manifest_file.read_text()) | change))
    checked["zero-byte"] = extraction(tmp, "extraction-zero-byte-served", river)
    shard(checked["zero-byte"]).write_bytes(b"")
    checked["missing"] = extraction(tmp, "extraction-missing-served", river)
    shard(checked["missing"]).unlink()
    serve_corpus = ["serve", *M, "--port", str(free_port()), "--corpus"]
    pg_build = ["index", "build", str(river), "--out", str(tmp / "pg-ix"), "--engine", "pgvector", *M]
    return [
        (
            "corpus search: a shard linked to a file outside the folder",
            ["corpus", "search", str(linked), "--like", "The river [bank]."],
        ),
        ("index build --dsn that libpq cannot read", [*pg_build, "--dsn", "garbage"]),
        ("index build --dsn with an unterminated quote", [*pg_build, "--dsn", "host='abc password=SECRET"]),
        ("index build --dsn an http URL", [*pg_build, "--dsn", "http://example.com/"]),
        ("index build --dsn empty", [*pg_build, "--dsn", ""]),
        (
            "capacity --dsn without --measure",
            ["capacity", "--engine", "pgvector", "-n", "10", "-d", "8", "--dsn", "host=/x"],
        ),
        ("corpus search: an example without [brackets]", [*cs, "--like", "The river bank flooded."]),
        ("corpus search: --model other than the folder's", [*cs, "--like", "The river [bank].", "-m", "mpnet"]),
        ("corpus search: a layer not extracted", [*cs, "--like", "The river [bank].", "--layer", "99"]),
        ("corpus search: --top 0", [*cs, "--like", "The river [bank].", "--top", "0"]),
        ("corpus search: not an extraction folder", ["corpus", "search", str(tmp), "--like", "The [bank]."]),
        ("corpus export: an unknown --format", ["corpus", "export", str(good), "--format", "csv"]),
        ("corpus search: a shard with NaN vectors", ["corpus", "search", str(checked["nan"]), "--like", "The [bank]."]),
        (
            "corpus search: a shard of all-zero vectors",
            ["corpus", "search", str(checked["zeros"]), "--like", "The [bank]."],
        ),
        (
            "corpus search: a manifest that says mpnet over minilm's shards",
            ["corpus", "search", str(checked["mpnet"]), "--like", "The [bank]."],
        ),
        (
            "corpus search: a manifest whose layers is a string",
            ["corpus", "search", str(checked["layers"]), "--like", "The [bank]."],
        ),
        ("corpus export: a shard with NaN vectors", ["corpus", "export", str(checked["nan"])]),
        ("corpus export: a manifest whose layers is a string", ["corpus", "export", str(checked["layers"])]),
        ("serve --corpus: a zero-byte shard", [*serve_corpus, f"wiki={checked['zero-byte']}"], HANG),
        ("serve --corpus: a missing shard", [*serve_corpus, f"wiki={checked['missing']}"], HANG),
        ("serve --corpus: a NAME with a slash", [*serve_corpus, f"a/b={good}"], HANG),
        ("corpus extract: a JSONL line nested 100,000 deep", [*ce, str(deep), "--out", str(tmp / "c1"), *x]),
        ("corpus extract: --out whose manifest.json is a list", [*ce, str(river), "--out", str(listed["list"]), *x]),
        ("corpus extract: --out whose manifest.json is null", [*ce, str(river), "--out", str(listed["null"]), *x]),
        (
            "corpus extract: resume over a zero-byte shard",
            [*ce, str(river), "--out", str(damaged["extract", "zero-byte"]), *x],
        ),
        (
            "corpus extract: resume over a truncated shard",
            [*ce, str(river), "--out", str(damaged["extract", "truncated"]), *x],
        ),
        (
            "corpus extract: resume over a foreign Parquet shard",
            [*ce, str(river), "--out", str(damaged["extract", "foreign"]), *x],
        ),
        ("corpus extract: a FIFO as the corpus", [*ce, str(fifo), "--out", str(tmp / "c2"), *x], HANG),
        ("corpus extract: --out an unrelated non-empty folder", [*ce, str(river), "--out", str(mine), *x]),
        ("corpus extract: --out ''", [*ce, str(river), "--out", "", *x]),
        (
            "corpus extract: --actors with the local engine",
            [*ce, str(river), "--out", str(tmp / "c3"), *x, "--actors", "4"],
        ),
        (
            "corpus extract: --address without --engine ray",
            [*ce, str(river), "--out", str(tmp / "c4"), *x, "--address", "127.0.0.1:1"],
        ),
        (
            "corpus extract: --engine ray --threads 999",
            [*ce, str(river), "--out", str(tmp / "c5"), *x, "--engine", "ray", "--threads", "999"],
        ),
        (
            "corpus extract: an fp32 folder rerun at int8",
            [*ce, str(river), "--out", str(fp32), *x, "--precision", "int8"],
        ),
        ("corpus extract: a binary file", [*ce, str(binary), "--out", str(tmp / "c6"), *x]),
        ("corpus extract: a latin-1 file", [*ce, str(latin1), "--out", str(tmp / "c7"), *x]),
        ("corpus extract: a UTF-16 file", [*ce, str(utf16), "--out", str(tmp / "c8"), *x]),
        (
            "corpus extract: a Parquet whose text column holds integers",
            [*ce, str(numbers), "--out", str(tmp / "c9"), *x],
        ),
        ("corpus extract ''", [*ce, "", "--out", str(tmp / "c10"), *x]),
        ("corpus extract: a foreign part-000000.parquet in --out", [*ce, str(river), "--out", str(foreign), *x]),
        (
            "corpus extract: --words-file with 4,999 absent words",
            [*ce, str(river), "--out", str(tmp / "c11"), "--words-file", str(words), *M],
        ),
        ("senses induce: manifest.json is a list", [*si, str(listed["list"]), "--word", "bank"]),
        ("senses induce: a zero-byte shard", [*si, str(damaged["senses", "zero-byte"]), "--word", "bank"]),
        ("senses induce: a truncated shard", [*si, str(damaged["senses", "truncated"]), "--word", "bank"]),
        ("senses induce: a foreign Parquet shard", [*si, str(damaged["senses", "foreign"]), "--word", "bank"]),
        ("senses induce: a word that was not extracted", [*si, str(good), "--word", "river"]),
        ("senses induce: a layer that was not extracted", [*si, str(good), "--word", "bank", "--layer", "99"]),
        ("senses induce: --k 0", [*si, str(good), "--word", "bank", "--k", "0"]),
        ("senses induce: --k a superscript digit", [*si, str(good), "--word", "bank", "--k", "²"]),
        ("eval contextuality --corpus: manifest.json is a list", [*ctx, str(listed["list"])]),
        ("eval contextuality --corpus: a zero-byte shard", [*ctx, str(damaged["eval", "zero-byte"])]),
        ("eval contextuality --corpus: a truncated shard", [*ctx, str(damaged["eval", "truncated"])]),
        ("eval contextuality --corpus: a foreign Parquet shard", [*ctx, str(damaged["eval", "foreign"])]),
        ("eval contextuality --corpus DIR --min-contexts 0", [*ctx, str(good), "--min-contexts", "0"]),
        ("eval contextuality --corpus DIR --min-contexts -5", [*ctx, str(good), "--min-contexts", "-5"]),
        (
            "eval contextuality --corpus DIR of minilm with -m mpnet",
            [*ctx[:2], "-m", "mpnet", "--corpus", str(good), "--min-contexts", "3"],
        ),
        (
            "eval contextuality --corpus DIR --precision int8",
            [*ctx, str(good), "--min-contexts", "3", "--precision", "int8"],
        ),
        (
            "eval contextuality --corpus DIR --runtime onnx",
            [*ctx, str(good), "--min-contexts", "3", "--runtime", "onnx"],
        ),
        (
            "eval contextuality --min-contexts without --corpus",
            ["eval", "contextuality", *M, "--min-contexts", "1"],
            HANG,
        ),
        ("compare with a malformed GloVe file", ["compare", *TWO, *M, "--static", str(malformed)]),
        ("eval layers with a malformed GloVe file", ["eval", "layers", "--quick", *M, "--static", str(malformed)]),
        ("eval wsi with a malformed GloVe file", ["eval", "wsi", "--quick", *M, "--static", str(malformed)]),
        ("cost --count nan", ["cost", *M, "--count", "nan"]),
        ("cost --count inf", ["cost", *M, "--count", "inf"]),
        ("cost --limit -1", ["cost", *M, "--limit", "-1"]),
        ("cost --repeats 0", ["cost", *M, "--repeats", "0"]),
        ("cka --limit -1", ["cka", *M, "--limit", "-1"]),
        ("cka --sentences file missing", ["cka", *M, "--sentences", str(tmp / "missing.txt")]),
        (
            "index build --nprobe 0",
            ["index", "build", str(river), "--out", str(tmp / "i1"), *M, "--index", "ivfpq", "--nprobe", "0"],
        ),
        (
            "index build --ef-search 0",
            ["index", "build", str(river), "--out", str(tmp / "i2"), *M, "--index", "hnsw", "--ef-search", "0"],
        ),
        ("index build --out a folder with other files", ["index", "build", str(river), "--out", str(others), *M]),
        ("index search -k 0", ["index", "search", str(index), "river bank", "-k", "0"]),
        (
            "index search with another model than the index's",
            ["index", "search", str(index), "river bank", "-m", "mpnet"],
        ),
        ("capacity --dim 0", ["capacity", "--count", "1000", "--dim", "0"]),
        ("capacity --data with a --count it does not hold", ["capacity", "--data", str(vectors), "--count", "5"]),
        ("capacity --data with another --dim", ["capacity", "--data", str(vectors), "--dim", "384"]),
        ("capacity --data of documents without --dim", ["capacity", "--data", str(river)]),
        (
            "capacity --data of documents with --measure",
            ["capacity", "--engine", "pgvector", "--data", str(river), "--dim", "8", "--measure"],
        ),  # fmt: skip
        ("capacity --data of a .npy that is not (n, d)", ["capacity", "--data", str(flat_npy)]),
        ("capacity --data of a file that is not .npy", ["capacity", "--data", str(fake_npy)]),
        ("capacity with neither --count nor --data", ["capacity", "--dim", "8"]),
        (
            "capacity --nlist above --count",
            ["capacity", "--count", "100", "--dim", "64", "--index", "ivfpq", "--nlist", "500"],
        ),
        (
            "capacity on Vertex with a machine the shard size does not allow",
            [
                "capacity",
                "--engine",
                "vertex",
                "-n",
                "1000",
                "-d",
                "768",
                "--shard-size",
                "large",
                "--machine",
                "e2-standard-16",
            ],
        ),
        (
            "capacity on OpenSearch with a method its engine does not document",
            [
                "capacity",
                "--engine",
                "opensearch",
                "-n",
                "1000",
                "-d",
                "768",
                "--knn-engine",
                "lucene",
                "--method",
                "ivf",
            ],
        ),
        ("capacity on Azure over its dimension limit", ["capacity", "--engine", "azure", "-n", "1000", "-d", "5000"]),
        (
            "capacity on pgvector over its vector type's 16,000 dims",
            ["capacity", "--engine", "pgvector", "-n", "1000", "-d", "70000", "--index", "flat"],
        ),
        (
            "capacity --measure on pgvector over its vector type's 16,000 dims",
            ["capacity", "--engine", "pgvector", "-n", "1000", "-d", "70000", "--index", "flat", "--measure"],
        ),
        (
            "capacity on pgvector over the table's integer rows",
            ["capacity", "--engine", "pgvector", "-n", str(10**30), "-d", "384"],
        ),
        (
            "capacity on pgvector past PostgreSQL's pages per relation",
            ["capacity", "--engine", "pgvector", "-n", "2000000000", "-d", "16000"],
        ),
        (
            "capacity --measure on pgvector above --max-measure",
            ["capacity", "--engine", "pgvector", "-n", "200000", "-d", "8", "--measure"],
        ),
        ("capacity --max-measure without --measure", ["capacity", "-n", "1000", "-d", "8", "--max-measure", "10"]),
        (
            "capacity on Azure with --deleted-ratio 1.5",
            ["capacity", "--engine", "azure", "-n", "1000", "-d", "768", "--deleted-ratio", "1.5"],
        ),
        (
            "capacity on OpenSearch with --heap-gib 0",
            ["capacity", "--engine", "opensearch", "-n", "1000", "-d", "768", "--heap-gib", "0"],
        ),
        ("serve --workers 10**12", ["serve", "--workers", str(10**12)]),
        (
            "serve with the same --index name twice",
            ["serve", *M, "--port", str(free_port()), "--index", f"a={index}", "--index", f"a={index}"],
            HANG,
        ),
        (
            "serve with a damaged index",
            ["serve", *M, "--port", str(free_port()), "--index", f"a={damaged_index}"],
            HANG,
        ),
        ("serve on a port in use", ["serve", *M, "--port", "PORT_IN_USE"], HANG),
        (
            "serve with an unresolvable --host",
            ["serve", *M, "--port", str(free_port()), "--host", "no-such-host.invalid"],
            HANG,
        ),
        ("serve with a malformed --host", ["serve", *M, "--port", str(free_port()), "--host", "999.1.1.1"], HANG),
    ]


def static_commands(tmp: Path) -> list[tuple[str, list[str]]]:
    """The `static train|distill`, `eval static` and static-encoder mistakes (none trains a model or
    writes into the cache: each is refused before)."""
    corpus = tmp / "static-corpus.txt"
    corpus.write_text("We sat on the river bank.\nThe bank approved the loan.\n")
    static_index = tmp / "static-index"
    run(["index", "build", str(corpus), "--out", str(static_index), "--static", "glove-50d"], tmp)
    train = ["static", "train", str(corpus)]
    return [
        ("static train without --name", train),
        ("static train --name that is a path", [*train, "--name", "../w2v"]),
        ("static train --name of a registered model", [*train, "--name", "glove-50d"]),
        ("static train --name of a registered model in capitals", [*train, "--name", "GLOVE-50D"]),
        ("static train --name none", [*train, "--name", "none"]),
        ("static train --seed past numpy's range", [*train, "--name", "w", "--seed", "4294967296"]),
        ("static train --buckets with word2vec", [*train, "--name", "w", "--buckets", "5000"]),
        ("static train --method unknown", [*train, "--name", "w", "--method", "glove"]),
        ("static train on a missing corpus", ["static", "train", str(tmp / "missing.txt"), "--name", "w"]),
        ("static train on an unknown corpus name", ["static", "train", "wikipedia", "--name", "w"]),
        ("static train --dim 1", [*train, "--name", "w", "--dim", "1"]),
        ("static train --epochs 0", [*train, "--name", "w", "--epochs", "0"]),
        ("static train --workers 0", [*train, "--name", "w", "--workers", "0"]),
        ("static train --buckets 10", [*train, "--name", "w", "--method", "fasttext", "--buckets", "10"]),
        ("static train --min-count above every word's count", [*train, "--name", "w", "--min-count", "1000"]),
        ("static distill an unknown model", ["static", "distill", "no-such-model", "--name", "d"]),
        ("static distill --pca-dims 1", ["static", "distill", "minilm", "--name", "d", "--pca-dims", "1"]),
        ("static distill --sif 2", ["static", "distill", "minilm", "--name", "d", "--sif", "2"]),
        ("static distill --batch-size 0", ["static", "distill", "minilm", "--name", "d", "--batch-size", "0"]),
        (
            "static distill --pca-dims above the hidden size",
            ["static", "distill", "minilm", "--name", "d", "--pca-dims", "1000"],
        ),  # fmt: skip
        (
            "static distill --batch-size 10**12",
            ["static", "distill", "minilm", "--name", "d", "--batch-size", "1000000000000"],
        ),  # fmt: skip
        ("static distill a static model", ["static", "distill", "glove-50d", "--name", "d"]),
        ("eval static with an unknown static model", ["eval", "static", "-s", "no-such-static", "--quick"]),
        ("eval static naming a model twice", ["eval", "static", "-s", "glove-50d", "-s", "glove-50d", "--quick"]),
        ("eval static naming a teacher twice", ["eval", "static", "-m", "minilm", "-m", "minilm", "--quick"]),
        ("eval static with an unknown teacher", ["eval", "static", "-m", "no-such-model", "--quick"]),
        (
            "index build --static with --model",
            ["index", "build", str(corpus), "--out", str(tmp / "s1"), "--static", "glove-50d", *M],
        ),  # fmt: skip
        ("index build --kind static", ["index", "build", str(corpus), "--out", str(tmp / "s2"), "--kind", "static"]),
        ("index build --static unknown", ["index", "build", str(corpus), "--out", str(tmp / "s3"), "--static", "x"]),
        ("index search a static index with a contextual model", ["index", "search", str(static_index), "bank", *M]),
        (
            "index search a static index with another static model",
            ["index", "search", str(static_index), "bank", "--static", "other-static"],
        ),  # fmt: skip
        ("eval retrieval with an unknown --static", ["eval", "retrieval", *M, "--quick", "--static", "x"]),
        (
            "eval retrieval naming a --static twice",
            ["eval", "retrieval", *M, "--quick", "-s", "glove-50d", "-s", "glove-50d"],
        ),  # fmt: skip
    ]


def run(args: list[str], tmp: Path, timeout: int = TIMEOUT, extra: dict[str, str] | None = None) -> tuple[str, str]:
    """``(exit code or TIMED OUT, stderr)`` of a fresh ``python -m contextlens ARGS``, run in a
    folder of its own (a mistake that writes into the current folder writes there); ``extra`` is
    the row's own environment (a row whose mistake is in the machine, not the command line)."""
    env = {**os.environ, **ENV, **(extra or {})}
    cwd = workdir(tmp)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "contextlens", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired as stop:
        err = stop.stderr.decode(errors="replace") if isinstance(stop.stderr, bytes) else stop.stderr or ""
        return f"TIMED OUT after {timeout} s", err.strip()
    return str(done.returncode), done.stderr.strip()


def workdir(tmp: Path) -> Path:
    cwd = tmp / "cwd"
    cwd.mkdir(exist_ok=True)
    return cwd


def run_all(rows: list[tuple], tmp: Path, jobs: int) -> list[tuple[str, str]]:
    """Every row's ``(exit code or TIMED OUT, stderr)``, ``jobs`` at a time, in the rows' order."""
    if os.environ.get("CATALOGUE_FRESH") == "1":
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(lambda row: run(row[1], tmp, *row[2:]), rows))
    os.environ.update(ENV)
    import contextlens.cli  # noqa: F401 - imported once here; every forked row starts from it

    results: list[tuple[str, str] | None] = [None] * len(rows)
    pending = list(enumerate(rows))
    running: dict[int, tuple[int, Path, float, int]] = {}  # pid -> (row, stderr file, deadline, limit)
    while pending or running:
        while pending and len(running) < jobs:
            i, row = pending.pop(0)
            limit = row[2] if len(row) > 2 else TIMEOUT
            err = tmp / f".stderr-{i}"
            pid = os.fork()
            if pid == 0:
                _row_child(row[1], err, workdir(tmp), row[3] if len(row) > 3 else {})
            running[pid] = (i, err, time.monotonic() + limit, limit)
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid in running:
            i, err, _, _ = running.pop(pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)  # what the row started and left running (Ray agents)
            results[i] = (str(os.waitstatus_to_exitcode(status)), err.read_text(errors="replace").strip())
            continue
        for pid, (i, err, deadline, limit) in list(running.items()):
            if time.monotonic() > deadline:  # a hang, or a server that started: stop it and all it started
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                running.pop(pid)
                results[i] = (f"TIMED OUT after {limit} s", err.read_text(errors="replace").strip())
        time.sleep(0.05)
    return results  # type: ignore[return-value]


def _row_child(args: list[str], err: Path, cwd: Path, extra: dict[str, str]) -> None:
    """In the forked child: ``contextlens ARGS`` through the entry point, stderr to ``err``, with
    the row's own environment ``extra``."""
    code = 1
    try:
        os.environ.update(extra)
        os.setsid()  # its own process group, so a timeout stops what it started too
        os.chdir(cwd)
        os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        from contextlens.cli import main

        try:
            main(list(args))
            code = 0
        except SystemExit as stop:
            if isinstance(stop.code, str):
                sys.stderr.write(stop.code + "\n")
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:  # what the interpreter would print for an uncaught exception
            traceback.print_exc()
            code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def verdict(code: str, err: str) -> str:
    if code.startswith("TIMED OUT"):
        return code
    flags = "" if code == "2" and len(err.splitlines()) == 1 and err.startswith("error: ") else " NOT ONE LINE"
    return code + flags + (" TOO LONG" if len(err) > LONGEST else "")


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ⏎ ")


def main() -> None:
    print("# What each user mistake prints\n")
    print(
        "Generated by `scripts/error_catalogue.py`, which runs every row through the real CLI. Every mistake "
        "should print one line `error: ...` on stderr and exit with code 2; output paths are checked before any "
        "model runs. A row that does not is flagged in the exit column: NOT ONE LINE (another exit code, or "
        "more than one line), TOO LONG (over 600 characters, shown cut), TIMED OUT (a hang, or a server that "
        "started).\n"
    )
    print("| mistake | command | message (stderr) | exit |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder, socket.socket() as busy:
        tmp = Path(folder)
        busy.bind(("127.0.0.1", 0))  # a port in use, for the row that serves on it
        busy.listen()
        port = str(busy.getsockname()[1])
        rows = [(row[0], [port if a == "PORT_IN_USE" else a for a in row[1]], *row[2:]) for row in catalogue(tmp)]
        results = run_all(rows, tmp, int(os.environ.get("CATALOGUE_JOBS", "4")))
        for (mistake, args, *_), (code, err) in zip(rows, results, strict=True):
            shown = re.sub(
                r"--port \d+", "--port PORT", " ".join("'" + a + "'" if " " in a or not a else a for a in args)
            ).replace(str(tmp), "TMP")
            message = err.replace(str(tmp), "TMP")
            message = re.sub(r"v-\d{8}T\d{12}-\d+", "v-VERSION", message)  # an index version's time and pid
            if "--port" in args:  # ports are picked free per run; the document should not change with them
                message = message.replace(args[args.index("--port") + 1], "PORT")
            if len(message) > LONGEST:
                message = message[:LONGEST] + f" ... ({len(err):,} characters)"
            print(f"| {mistake} | `contextlens {cell(shown)}` | {cell(message)} | {verdict(code, err)} |")


if __name__ == "__main__":
    main()
