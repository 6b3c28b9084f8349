"""Time the full benchmark suite for one model from a cold cache: encoding, then each benchmark.

Usage: python benchmarks/eval_suite_timing.py minilm [--size full] [--out DIR]
Prints one line per step (seconds) and writes each benchmark's JSON to DIR.
Set CONTEXTLENS_CACHE to an empty folder for a cold run (the encoding is cached on disk).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from contextlens.analyses.benchmarks import suite as bs  # noqa: E402
from contextlens.analyses.measures.sizes import SIZES  # noqa: E402
from contextlens.core.contextual_models import load_contextual  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--size", default="full", choices=sorted(SIZES))
    parser.add_argument("--out", type=Path, default=Path("benchmark-results"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    suite = bs.build_suite(args.size)
    print(
        f"build suite: {time.perf_counter() - t0:.1f} s ({suite.counts['texts']} texts, {suite.counts['spans']} spans)"
    )
    t = time.perf_counter()
    load_contextual(args.model)
    print(f"load {args.model}: {time.perf_counter() - t:.1f} s")
    _, seconds = bs.encode_suite(args.model, args.size)
    print(f"encode suite: {seconds:.1f} s")
    runs = {
        "wic": lambda: bs.run_wic(args.model, "glove-50d", args.size),
        "wsd": lambda: bs.run_wsd(args.model, args.size),
        "similarity": lambda: bs.run_similarity(args.model, "glove-50d", args.size),
        "contextuality": lambda: bs.run_contextuality(args.model, args.size),
    }
    for name, run in runs.items():
        t = time.perf_counter()
        result = run()
        print(f"{name}: {time.perf_counter() - t:.1f} s")
        (args.out / f"{name}-{args.model}-{args.size}.json").write_text(
            json.dumps(result.to_dict(), indent=1, allow_nan=False)
        )
    print(f"total: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
