"""One loaded model, many threads: the same answers, and what the threads buy.

Issue 17 asks that one loaded model serve any number of threads at once, every answer equal to the
sequential one. This script runs the mixed calls of tests/test_reentrancy.py (compare, attention
with weights, trace, probe, explore; eight sentences of different lengths) once sequentially on
one thread (the baseline), then from 2, 4 and 8 threads at once (every thread runs every call, in
its own shuffled order) and prints, per thread count: the wall time, calls per second, the ratio
to the sequential calls per second, and how many answers differ from the sequential ones (the
claim is 0). The occurrence cache is off, so every call runs its forward pass. torch's intra-op
threads are set to 1 (``--torch-threads``), so the Python threads are the only parallelism; on a
machine with C cores no more than C-fold can be gained.

    python benchmarks/concurrency.py [--model minilm] [--runtime torch|onnx] [--threads 2 4 8]
                                     [--torch-threads 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))  # the calls are the reentrancy test's
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--runtime", default="torch", choices=["torch", "onnx"])
    parser.add_argument("--threads", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import torch
    from tests.test_reentrancy import mixed_calls

    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.static_models import load_static

    torch.set_num_threads(args.torch_threads)
    model = load_contextual(args.model, "fp32", args.runtime)
    model.cache_size = 0  # every call runs its forward pass
    glove = load_static("glove-50d")
    calls = mixed_calls(model, glove, with_attention=args.runtime == "torch")
    for _, call in calls:  # warm-up: first-call costs (ONNX sessions, kernels) off the clock
        call()
    start = time.perf_counter()
    sequential = {name: json.dumps(call(), sort_keys=True) for name, call in calls}
    seq_s = time.perf_counter() - start
    rows = [{"threads": 1, "calls": len(calls), "wall_s": seq_s, "calls_per_s": len(calls) / seq_s, "differ": 0}]

    for n in args.threads:

        def worker(seed: int):
            order = list(calls)
            random.Random(seed).shuffle(order)
            return [(name, json.dumps(call(), sort_keys=True)) for name, call in order]

        start = time.perf_counter()
        with ThreadPoolExecutor(n) as pool:
            answers = [a for got in pool.map(worker, range(n)) for a in got]
        wall = time.perf_counter() - start
        differ = sum(got != sequential[name] for name, got in answers)
        rows.append(
            {"threads": n, "calls": len(answers), "wall_s": wall, "calls_per_s": len(answers) / wall, "differ": differ}
        )
    base = rows[0]["calls_per_s"]
    for row in rows:
        row["vs_sequential"] = row["calls_per_s"] / base
    meta = {
        "model": f"{model.name} (contextual, {args.runtime} fp32)",
        "torch_threads": args.torch_threads,
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg(),
    }
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=2))
        return
    print(
        f"{meta['model']}, {len(calls)} distinct calls, torch threads {args.torch_threads}, {meta['cpus']} CPUs, "
        f"load {meta['load_avg'][0]:.1f}"
    )
    print(f"{'threads':>7} {'calls':>6} {'wall s':>8} {'calls/s':>8} {'vs sequential':>14} {'answers differing':>18}")
    for row in rows:
        label = "1 (seq)" if row["threads"] == 1 else str(row["threads"])
        print(
            f"{label:>7} {row['calls']:>6} {row['wall_s']:>8.2f} {row['calls_per_s']:>8.1f} "
            f"{row['vs_sequential']:>13.2f}x {row['differ']:>18}"
        )


if __name__ == "__main__":
    main()
