"""Ctrl-C while a model loads: how each interrupted run ends, and how long after the signal.

Starts ``contextlens compare ... --runtime torch`` (torch's import and minilm's load take the
first seconds), sends SIGINT after each delay in turn, and counts the endings: exit 130 with the
one line ``interrupted`` is right; -2 (killed by the signal) and -6 (an abort in torch's C++
import) are the defects fixed in ``cli/__init__.py`` and ``core/held_interrupts.py``.

``--burners N`` runs N CPU-bound processes beside it, as a loaded machine: there the exit used to
come 19-22 s after the signal (issue 35: the Ctrl-C held until torch's import ended, then torch's
teardown), the baseline printed beside the figures.

    python benchmarks/ctrl_c.py [--runs 60] [--delays 0.5,0.6,0.7,0.9,1.2] [--burners 4]
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import statistics
import subprocess
import sys
import time

ARGS = ["compare", "The [bank] called.", "The river [bank] flooded.", "-m", "minilm", "--static", "none"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=60)
    ap.add_argument("--delays", default="0.5,0.6,0.7,0.9,1.2", help="seconds before the SIGINT, in turn")
    ap.add_argument("--burners", type=int, default=0, help="CPU-bound processes running beside it")
    args = ap.parse_args()
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)]
    try:
        run(args)
    finally:
        for burner in burners:
            burner.kill()


def run(args: argparse.Namespace) -> None:
    delays = [float(x) for x in args.delays.split(",")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    endings: collections.Counter[str] = collections.Counter()
    waits = []
    load_before = os.getloadavg()
    for i in range(args.runs):
        proc = subprocess.Popen(
            [sys.executable, "-m", "contextlens", *ARGS, "--runtime", "torch"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        time.sleep(delays[i % len(delays)])
        proc.send_signal(signal.SIGINT)
        sent = time.perf_counter()
        _, err = proc.communicate(timeout=120)
        waits.append(time.perf_counter() - sent)
        right = (proc.returncode, err) == (130, "interrupted\n")
        endings["exit 130, one line" if right else f"exit {proc.returncode}, {err.strip().splitlines()[:1]}"] += 1
    print(f"compare --runtime torch on minilm, SIGINT after {args.delays} s in turn, {args.runs} runs, "
          f"{args.burners} CPU burner(s) beside it:")  # fmt: skip
    for ending, n in endings.most_common():
        print(f"  {n:4}  {ending}")
    print(f"from the signal to the exit: median {statistics.median(waits):.2f} s, max {max(waits):.2f} s; load "
          f"average before {load_before[0]:.1f}, after {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs")  # fmt: skip
    print("baseline (issue 35, before the exit at the signal): 19-22 s from the signal to the exit under load")


if __name__ == "__main__":
    main()
