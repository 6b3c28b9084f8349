"""Cold-process wall time of `--help` and of usage errors, beside the floors they must stay under.

Issue 17: `import contextlens` and `--help` import no torch, and a usage error answers before any
weights load. Each row runs in a fresh interpreter, several times (the median kept), and says
whether torch was imported; the floors are `python -c pass` and `python -c "import torch"`,
measured in the same run. ``--demo`` adds `contextlens demo` on minilm and mpnet (issue 18: one
forward per set of sentences, no silent step), beside the torch floor of the issue measured in
the same run: import torch and transformers, `from_pretrained(minilm)` and one forward of two
sentences. Each row also gives the peak RSS of its process.

    python benchmarks/startup.py [--runs 5] [--demo] [--demo-runs 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
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


TORCH_FLOOR = (  # the floor: what any torch command pays before its own work
    "import sys, torch\nfrom transformers import AutoModel, AutoTokenizer\n"
    "tok = AutoTokenizer.from_pretrained(sys.argv[1]); model = AutoModel.from_pretrained(sys.argv[1])\n"
    "batch = tok(['The bank called about my account.', 'The river bank flooded last night.'], padding=True,"
    " return_tensors='pt')\n"
    "with torch.inference_mode():\n    model(**batch)\n"
)
DEMOS = [("demo -m minilm", "minilm"), ("demo -m mpnet", "mpnet")]


def _time(argv: list[str]) -> tuple[float, str, float, float]:
    """Wall seconds, stdout, peak RSS (MiB) and CPU seconds (user + system: what the process
    itself did, which other processes on a shared machine inflate much less) of one fresh process."""
    env = dict(os.environ, PYTHONPATH=SRC, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with tempfile.TemporaryFile("w+") as out:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, text=True, env=env)
        _, _, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        child.returncode = 0  # reaped by wait4; keep Popen from waiting again
        out.seek(0)
        return seconds, out.read(), usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def _row(name: str, argv: list[str], runs: int, torch: bool | None = None) -> dict:
    timed = [_time(argv) for _ in range(runs)]
    return {
        "what": name,
        "median_s": statistics.median(t[0] for t in timed),
        "runs_s": [t[0] for t in timed],
        "median_cpu_s": statistics.median(t[3] for t in timed),
        "peak_rss_mib": max(t[2] for t in timed),
        "torch": torch if torch is not None else any("TORCH=True" in t[1] for t in timed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--demo", action="store_true", help="also time `contextlens demo` on minilm and mpnet")
    parser.add_argument("--demo-runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    py = sys.executable
    floors = {
        "python -c pass": [py, "-c", "pass"],
        "python -c 'import torch'": [py, "-c", "import torch"],
    }
    rows = [_row(name, argv, args.runs, "import torch" in argv[-1]) for name, argv in floors.items()]
    torch_floor = rows[-1]["median_s"]
    for name, cli_args in ROWS:
        argv = [py, "-c", "import sys, contextlens; print('TORCH=%s' % ('torch' in sys.modules))"]
        if cli_args is not None:
            argv = [py, "-c", PROBE, *cli_args]
        rows.append(_row(name, argv, args.runs))
    for row in rows:
        row["vs_torch_import"] = row["median_s"] / torch_floor
    demos = _demo_rows(py, args.demo_runs) if args.demo else []
    if args.json:
        print(json.dumps({"runs": args.runs, "load_avg": os.getloadavg(), "rows": rows, "demo": demos}, indent=2))
        return
    print(f"median of {args.runs} fresh processes each, load {os.getloadavg()[0]:.1f}")
    print(f"{'what':<28} {'median s':>9} {'/ import torch':>15} {'torch imported':>15} {'peak RSS MiB':>13}")
    for row in rows:
        print(
            f"{row['what']:<28} {row['median_s']:>9.3f} {row['vs_torch_import']:>15.2f} {str(row['torch']):>15} "
            f"{row['peak_rss_mib']:>13.0f}"
        )
    if demos:
        print(f"\nthe demo, median of {args.demo_runs} fresh processes each, load {os.getloadavg()[0]:.1f}")
        print(f"{'what':<50} {'median s':>9} {'/ torch floor':>14} {'CPU s':>7} {'peak RSS MiB':>13}  runs s")
        for row in demos:
            runs = " ".join(f"{t:.2f}" for t in row["runs_s"])
            print(
                f"{row['what']:<50} {row['median_s']:>9.3f} {row['vs_torch_floor']:>14.2f} "
                f"{row['median_cpu_s']:>7.2f} {row['peak_rss_mib']:>13.0f}  {runs}"
            )


def _demo_rows(py: str, runs: int) -> list[dict]:
    """The torch floor (the issue's), then the demo on each shipped encoder, each fresh process."""
    sys.path.insert(0, SRC)
    from contextlens.core.resources import resolve_contextual

    floor = _row(
        "torch floor: from_pretrained(minilm) + 1 forward",
        [py, "-c", TORCH_FLOOR, resolve_contextual("minilm")[1]],
        runs,
        True,
    )
    rows = [floor]
    with tempfile.TemporaryDirectory() as folder:
        for name, model in DEMOS:
            rows.append(_row(name, [py, "-m", "contextlens", "demo", "-m", model, "--out", folder], runs, True))
    for row in rows:
        row["vs_torch_floor"] = row["median_s"] / floor["median_s"]
    return rows


if __name__ == "__main__":
    main()
