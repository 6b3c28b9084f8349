"""Where a Ray job's fixed start-up goes on this machine: what each actor imports and loads before
its first block, and what Ray itself starts, in CPU seconds (what 2 cores must share).

A ``corpus extract --engine ray`` actor is a fresh Python process (a Ray worker) that imports Ray,
then torch, then transformers' model code, then loads the model: none of it is shared between
actors, so on 2 cores two actors pay it side by side while the driver and Ray's own processes
run too. ``benchmarks/corpus.py --ray-scaling`` prints the start-up a 1.6x job allows; this script
prints what the start-up is made of.

    python benchmarks/ray_startup.py [--model minilm] [--repeats 3]

Part 1, an actor's steps, each timed in order in a fresh process (``--repeats`` processes, median):
import ray; import torch; import transformers' shared model code (``transformers.modeling_utils``);
the corpus engine's modules (what unpickling the actor class imports); ``load_contextual`` (the
architecture's module, the tokenizer and the weights).

Part 2, Ray: ``ray.init`` of a local Ray of 2 CPUs (as ``corpus extract`` starts one), the CPU its
processes (GCS, raylet, dashboard head, agents, log monitor, autoscaler monitor) have used when it
returns and 10 s later; then one trivial Ray Data job on an actor pool, and the CPU of the
processes it added (Ray Data's detached helpers and the pool's worker).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # corpus.py's warm-up job
from corpus import warm_ray_data  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ACTOR_STEPS = r"""
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
steps, t, c = [], time.perf_counter(), cpu()
def mark(name):
    global t, c
    steps.append([name, time.perf_counter() - t, cpu() - c]); t, c = time.perf_counter(), cpu()
import ray; mark("import ray")
import torch; mark("import torch")
import transformers.modeling_utils; mark("transformers' model code")
import contextlens.analyses.corpus.ray_engine, contextlens.analyses.corpus.chunks; mark("corpus engine modules")
from contextlens.core.contextual_models import load_contextual
torch.set_num_threads(1)
load_contextual(sys.argv[1], "fp32", "torch"); mark("load_contextual (architecture, tokenizer, weights)")
print(json.dumps(steps))
"""


def actor_steps(model: str, repeats: int) -> list[tuple[str, float, float]]:
    """Median (wall, CPU) seconds of each step over ``repeats`` fresh processes."""
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", ACTOR_STEPS, model], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return [
        (name, statistics.median(r[i][1] for r in runs), statistics.median(r[i][2] for r in runs))
        for i, (name, _, _) in enumerate(runs[0])
    ]


def _tree_cpu() -> dict[int, tuple[str, float]]:
    """pid -> (name, CPU seconds) of every process under this one (Ray's, started by ray.init)."""
    import psutil

    found = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            times = proc.cpu_times()
            found[proc.pid] = (_name(proc), times.user + times.system)
        except psutil.Error:
            continue
    return found


def _name(proc) -> str:
    line = proc.cmdline()
    if line and line[0].startswith("ray::"):
        return line[0]
    script = next((os.path.basename(a) for a in line if a.endswith(".py")), None)
    return script or os.path.basename(line[0] if line else proc.name())


def ray_processes() -> dict:
    import ray

    from contextlens.analyses.corpus.ray_engine import start_ray

    t0 = time.perf_counter()
    start_ray(None, cpus=2)  # the engine's own start of a local Ray
    init_s = time.perf_counter() - t0
    at_init = _tree_cpu()
    time.sleep(10)
    later = _tree_cpu()

    data_s = warm_ray_data()  # corpus.py's warm-up: the same trivial job on a pool of one actor
    after_data = _tree_cpu()
    ray.shutdown()
    return {"init_s": init_s, "at_init": at_init, "later": later, "data_s": data_s, "after_data": after_data}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    load_before = os.getloadavg()
    steps = actor_steps(args.model, args.repeats)
    print(f"One actor's start, in a fresh process (median of {args.repeats}; model {args.model} fp32, torch):")
    print(f"{'step':52} {'wall s':>7} {'CPU s':>7}")
    for name, wall, cpu in steps:
        print(f"{name:52} {wall:7.2f} {cpu:7.2f}")
    actor_cpu = sum(cpu for _, _, cpu in steps)
    print(f"{'in all':52} {sum(w for _, w, _ in steps):7.2f} {actor_cpu:7.2f}")

    ray = ray_processes()
    print(f"\nray.init of a local Ray of 2 CPUs: {ray['init_s']:.2f} s. CPU seconds of its processes:")
    print(f"{'process':34} {'at return':>9} {'10 s on':>8}")
    for pid, (name, cpu) in sorted(ray["later"].items(), key=lambda kv: -kv[1][1]):
        print(f"{name[:34]:34} {ray['at_init'].get(pid, (name, 0.0))[1]:9.2f} {cpu:8.2f}")
    init_cpu = sum(cpu for _, cpu in ray["later"].values())
    new = {pid: v for pid, v in ray["after_data"].items() if pid not in ray["later"]}
    print(f"{'in all':34} {sum(c for _, c in ray['at_init'].values()):9.2f} {init_cpu:8.2f}")
    print(f"\nthe first Ray Data job (1 row, an actor pool of 1): {ray['data_s']:.2f} s; the processes it added:")
    for _, (name, cpu) in sorted(new.items(), key=lambda kv: -kv[1][1]):
        print(f"{name[:34]:34} {cpu:9.2f}")
    print(f"{'in all':34} {sum(c for _, c in new.values()):9.2f}")
    cores = os.cpu_count() or 1
    two = 2 * actor_cpu
    print(f"\n# {cores} CPUs: 2 actors' start-up is {two:.1f} CPU-s, at best {two / min(cores, 2):.1f} s of wall clock "
          f"on {cores} cores (1 actor: {actor_cpu:.1f} CPU-s on a core, {actor_cpu:.1f} s) before the "
          f"first forward; load average before {'/'.join(f'{x:.1f}' for x in load_before)}, after "
          f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}")  # fmt: skip


if __name__ == "__main__":
    main()
