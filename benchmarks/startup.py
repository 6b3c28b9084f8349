"""Cold-process wall time of `--help` and of usage errors, beside the floors they must stay under.

Issue 17: `import contextlens` and `--help` import no torch, and a usage error answers before any
weights load. Each row runs in a fresh interpreter, several times (the median kept), and says
whether torch was imported; the floors are `python -c pass` and `python -c "import torch"`,
measured in the same run. (Issue 18's fuller start-up benchmark, with compare, demo and serve, is
not this script.)

    python benchmarks/startup.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
PROBE = (
    "import sys\nsys.argv = ['contextlens', *sys.argv[1:]]\n"
    "try:\n    from contextlens.cli import main\n    main()\n"
    "except SystemExit:\n    pass\n"
    "sys.stdout.write('TORCH=%s\\n' % ('torch' in sys.modules))\n"
)
ROWS = [
    ("import contextlens", None),
    ("--help", ["--help"]),
    ("bad marker", ["compare", "The [bank is here.", "A [bank] was there.", "-m", "minilm"]),
    ("unknown model", ["compare", "The [bank] is.", "A [bank] was.", "-m", "nosuchmodel"]),
    ("word not in GloVe", ["compare", "The [qqzzxv] is.", "A [qqzzxv] was.", "-m", "minilm"]),
    ("layer out of range", ["attention", "The [bank] is here.", "-m", "minilm", "--layer", "99"]),
    ("cost --count nan", ["cost", "--count", "nan", "-m", "minilm"]),
    ("cka --limit -1", ["cka", "--limit", "-1", "-m", "minilm"]),
    ("index search, no folder", ["index", "search", "/no/such/index", "money"]),
    ("eval wic, unknown model", ["eval", "wic", "-m", "nosuchmodel"]),
]


def _time(argv: list[str]) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=SRC, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    py = sys.executable
    floors = {
        "python -c pass": [py, "-c", "pass"],
        "python -c 'import torch'": [py, "-c", "import torch"],
    }
    rows = []
    for name, argv in floors.items():
        times = [_time(argv)[0] for _ in range(args.runs)]
        rows.append({"what": name, "median_s": statistics.median(times), "torch": "import torch" in argv[-1]})
    torch_floor = rows[-1]["median_s"]
    for name, cli_args in ROWS:
        argv = [py, "-c", "import sys, contextlens; print('TORCH=%s' % ('torch' in sys.modules))"]
        if cli_args is not None:
            argv = [py, "-c", PROBE, *cli_args]
        runs = [_time(argv) for _ in range(args.runs)]
        rows.append(
            {
                "what": name,
                "median_s": statistics.median(t for t, _ in runs),
                "torch": any("TORCH=True" in out for _, out in runs),
            }
        )
    for row in rows:
        row["vs_torch_import"] = row["median_s"] / torch_floor
    if args.json:
        print(json.dumps({"runs": args.runs, "load_avg": os.getloadavg(), "rows": rows}, indent=2))
        return
    print(f"median of {args.runs} fresh processes each, load {os.getloadavg()[0]:.1f}")
    print(f"{'what':<28} {'median s':>9} {'/ import torch':>15} {'torch imported':>15}")
    for row in rows:
        print(f"{row['what']:<28} {row['median_s']:>9.3f} {row['vs_torch_import']:>15.2f} {str(row['torch']):>15}")


if __name__ == "__main__":
    main()
