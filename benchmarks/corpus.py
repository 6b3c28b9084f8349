"""Corpus extraction throughput: the local engine vs Ray (1 and 2 actors), and memory at 10x size.

Each run is a fresh process (so ``ru_maxrss`` is its own: the driver's; Ray actors are separate
processes whose memory is not measured here); the clock includes reading, sentence
splitting, locating, encoding and writing the shards, not the model load of the local engine
(Ray's actor start-up and model loads are inside the clock: that is what a job pays).

    python benchmarks/corpus.py [--corpus lee] [--words fire,government,police] [--model minilm]
                                [--engines local ray1 ray2] [--scale 10] [--threads 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _one(engine: str, corpus: str, words: list[str], model: str, threads: int, queue) -> None:
    import torch

    from contextlens.analyses.corpus.extract import extract_corpus
    from contextlens.core.contextual_models import load_contextual

    torch.set_num_threads(threads)
    load_contextual(model)
    out = Path(tempfile.mkdtemp(prefix="cl-bench-"))
    actors = {"local": 1, "ray1": 1, "ray2": 2}[engine]
    if engine != "local":
        import ray

        ray.init(num_cpus=threads, include_dashboard=False, log_to_driver=False)
    start = time.perf_counter()
    result = extract_corpus(
        corpus,
        words,
        out / "x",
        model=model,
        layers=None,
        engine="local" if engine == "local" else "ray",
        actors=actors,
    )
    seconds = time.perf_counter() - start
    if engine != "local":
        import ray

        ray.shutdown()
    shutil.rmtree(out, ignore_errors=True)
    queue.put(
        {
            "engine": engine,
            "corpus": corpus,
            "seconds": round(seconds, 2),
            "sentences": result.stats.sentences,
            "occurrences": result.manifest.counts["rows"],
            "sentences_per_s": round(result.stats.sentences / seconds, 1),
            "occurrences_per_s": round(result.manifest.counts["rows"] / seconds, 1),
            "driver_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
    )


def run(engine: str, corpus: str, words: list[str], model: str, threads: int) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_one, args=(engine, corpus, words, model, threads, queue))
    proc.start()
    row = queue.get()
    proc.join()
    return row


def repeated(corpus: str, times: int) -> str:
    """The corpus written ``times`` times into one gzipped text file (one document per line)."""
    import gzip

    from contextlens.analyses.corpus.readers import read_corpus

    path = Path(tempfile.gettempdir()) / f"cl-bench-{corpus}-x{times}.txt.gz"
    if not path.exists():
        lines = [" ".join(d.pieces) for d in read_corpus(corpus)]
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            for _ in range(times):
                fh.write("\n".join(lines) + "\n")
    return str(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="lee")
    ap.add_argument("--words", default="fire,government,police")
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--engines", nargs="+", default=["local", "ray1", "ray2"])
    ap.add_argument("--scale", type=int, default=10, help="also run the local engine on the corpus repeated N times")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    words = args.words.split(",")
    rows = [run(e, args.corpus, words, args.model, args.threads) for e in args.engines]
    if args.scale > 1:
        row = run("local", repeated(args.corpus, args.scale), words, args.model, args.threads)
        row["corpus"] = f"{args.corpus} x{args.scale}"
        rows.append(row)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        return
    print(f"{'engine':8} {'corpus':12} {'sent':>7} {'occ':>6} {'s':>7} {'sent/s':>8} {'occ/s':>7} {'RSS MiB':>8}")
    for r in rows:
        print(
            f"{r['engine']:8} {r['corpus']:12} {r['sentences']:7} {r['occurrences']:6} {r['seconds']:7} "
            f"{r['sentences_per_s']:8} {r['occurrences_per_s']:7} {r['driver_peak_rss_mib']:8}"
        )


if __name__ == "__main__":
    main()
