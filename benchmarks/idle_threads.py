"""Idle threads that spin against idle threads that sleep, for torch (OpenMP) and ONNX Runtime.

Between two parallel operators an idle worker thread either spins, holding its core, or sleeps.
Both runtimes spin by default (OpenMP's ``OMP_WAIT_POLICY``, ONNX Runtime's
``session.intra_op.allow_spinning``). On a quiet machine spinning saves a wake-up per operator;
on cores shared with other work (a test suite, a second job, a loaded laptop) a spinning thread
holds a core the straggling work needs, and the forward waits for it. contextlens makes both sleep
(``OMP_WAIT_POLICY=PASSIVE`` unless it is set, in :mod:`contextlens.core.threads`, and
:data:`contextlens.core.onnx_graphs.ALLOW_SPINNING`). This script runs contextlens's own
extraction core (WordNet usage examples, every layer, 2 threads) with each setting in a process of
its own (OpenMP reads its policy once, at load), interleaved, and prints wall and CPU seconds side
by side with the load average. ``--burners N`` starts N busy-looping processes beside it to stand
for other work.

    python benchmarks/idle_threads.py [--model minilm] [--sentences 128] [--rounds 3] [--burners 0]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ONE_RUN = r"""
import json, os, resource, sys, time
from contextlens.core import onnx_graphs, wordnet
from contextlens.core.alignment import tokenize_many
from contextlens.core.contextual_models import load_contextual
from contextlens.core.extraction import extract_targets
from contextlens.core.occurrences import Occurrence
from contextlens.core.threads import set_threads

model_name, runtime, spin, sentences, policy = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
# import contextlens set OMP_WAIT_POLICY (unless given); torch is not loaded yet, so this still decides
if policy == "default":
    os.environ.pop("OMP_WAIT_POLICY", None)  # libgomp's own: spin a while, then sleep
else:
    os.environ["OMP_WAIT_POLICY"] = policy
onnx_graphs.ALLOW_SPINNING = spin
set_threads(2)
model = load_contextual(model_name, "fp32", runtime)
examples = wordnet.usage_examples()[::97][:sentences]  # spread over WordNet's files
tokenized = tokenize_many(model, [Occurrence(e.text, e.start, e.end) for e in examples])
layers = tuple(range(model.num_layers + 1))
extract_targets(model, tokenized, layers)  # untimed: each batch shape's first forward
usage = resource.getrusage(resource.RUSAGE_SELF)
cpu, wall = usage.ru_utime + usage.ru_stime, time.perf_counter()
extract_targets(model, tokenized, layers)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": usage.ru_utime + usage.ru_stime - cpu}))
"""

SETTINGS = {  # (runtime, label): (OpenMP's policy, ORT spinning)
    ("torch", "spin"): ("default", "1"),
    ("torch", "sleep"): ("PASSIVE", "1"),
    ("onnx", "spin"): ("PASSIVE", "1"),
    ("onnx", "sleep"): ("PASSIVE", "0"),
}


def run_once(model: str, runtime: str, label: str, sentences: int) -> dict[str, float]:
    policy, spin = SETTINGS[(runtime, label)]
    env = os.environ | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("OMP_NUM_THREADS", None)
    shown = subprocess.run(
        [sys.executable, "-c", ONE_RUN, model, runtime, spin, str(sentences), policy],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(shown.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sentences", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burners", type=int, default=0)
    args = parser.parse_args()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)]
    loads, results = [os.getloadavg()[0]], {key: [] for key in SETTINGS}
    try:
        for round_ in range(args.rounds):
            for key in list(SETTINGS)[:: 1 if round_ % 2 == 0 else -1]:  # the order turned each round
                results[key].append(run_once(args.model, *key, args.sentences))
            loads.append(os.getloadavg()[0])
    finally:
        for burner in burners:
            burner.kill()
    print(
        f"{args.model} (contextual encoder), {args.sentences} WordNet sentences, every layer, 2 threads, "
        f"{args.rounds} rounds, {args.burners} burners, load average {min(loads):.1f}-{max(loads):.1f}"
    )
    print(f"{'runtime':<8}{'idle threads':<26}{'best wall s':>12}{'mean wall s':>12}{'mean CPU s':>12}")
    for (runtime, label), runs in results.items():
        walls, cpus = [r["wall"] for r in runs], [r["cpu"] for r in runs]
        name = {"spin": "spin (the runtime's default)", "sleep": "sleep (contextlens)"}[label]
        mean_wall, mean_cpu = sum(walls) / len(walls), sum(cpus) / len(cpus)
        print(f"{runtime:<8}{name:<26}{min(walls):>12.2f}{mean_wall:>12.2f}{mean_cpu:>12.2f}")


if __name__ == "__main__":
    main()
