"""Cold-process wall time and peak memory of contextlens commands, beside the floors they are
judged by, all measured in the same run.

Every row is a fresh interpreter (the median of ``--runs`` runs; the demo runs once): what a user
typing the command waits for. The floors: ``python -c pass``; ``import torch``; importing
transformers' AutoModel; the torch floor (import torch and transformers, ``from_pretrained``
minilm, one forward of two sentences: what any torch-based command pays before its own work); and
the lean floor (import onnxruntime and tokenizers, read minilm's tokenizer, open an ONNX Runtime
session on its cached, checked graph). Each row says whether torch was imported and its peak RSS
(``wait4``'s ``ru_maxrss``), and its ratio to the torch floor beside the issue-18 target.

    python benchmarks/startup.py [--runs 5] [--no-demo] [--json]

The ONNX exports must be cached for the lean rows to be lean: run ``contextlens compare ... -m
minilm`` (and ``-m mpnet``) once first; the script does so itself before timing.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
PROBE = (
    "import sys\nsys.argv = ['contextlens', *sys.argv[1:]]\n"
    "try:\n    from contextlens.cli import main\n    main()\n"
    "except SystemExit:\n    pass\n"
    "sys.stderr.write('TORCH=%s\\n' % ('torch' in sys.modules))\n"
)
BANK = ["The [bank] called about my account.", "The river [bank] flooded last night."]
TORCH_FLOOR = """
import torch, transformers
from transformers import AutoModel, AutoTokenizer
from contextlens.core.resources import resolve_contextual
_, source, _ = resolve_contextual("minilm")
tok = AutoTokenizer.from_pretrained(source); model = AutoModel.from_pretrained(source).eval()
with torch.inference_mode():
    model(**tok(["The bank called about my account.", "The river bank flooded last night."],
                padding=True, return_tensors="pt"), output_hidden_states=True)
"""
LEAN_FLOOR = """
import onnxruntime, tokenizers
from contextlens.core.onnx_graphs import export_folder
from contextlens.core.resources import resolve_contextual
name, source, _ = resolve_contextual("minilm")
tokenizers.Tokenizer.from_file(source + "/tokenizer.json")
onnxruntime.InferenceSession(str(export_folder(name, source) / "fp32.onnx"), providers=["CPUExecutionProvider"])
"""
FLOORS = [
    ("python -c pass", "pass"),
    ("import torch", "import torch"),
    ("import transformers AutoModel", "import transformers; from transformers import AutoModel"),
    ("torch floor: load minilm + one forward", TORCH_FLOOR),
    ("lean floor: onnxruntime + tokenizer + session", LEAN_FLOOR),
]
# (row, command-line arguments, issue-18 target as a ratio of the torch floor, or None)
COMMANDS = [
    ("import contextlens", None, 0.06),
    ("--help", ["--help"], 0.06),
    ("usage error (bad marker)", ["compare", "The [bank is here.", "A [bank] was there.", "-m", "minilm"], 0.06),
    ("usage error (layer 99)", ["attention", "The [bank] is here.", "-m", "minilm", "--layer", "99"], 0.06),
    ("compare -m minilm (auto: lean ONNX)", ["compare", *BANK, "-m", "minilm"], 0.15),
    ("compare -m minilm --runtime torch", ["compare", *BANK, "-m", "minilm", "--runtime", "torch"], None),
    ("compare -m mpnet (auto: lean ONNX)", ["compare", *BANK, "-m", "mpnet"], None),
    ("compare -m mpnet --runtime torch", ["compare", *BANK, "-m", "mpnet", "--runtime", "torch"], None),
    ("explore bank -m minilm (auto)", ["explore", "bank", "-m", "minilm"], None),
    ("trace -m minilm (auto: lean attention graph)", ["trace", BANK[1], "-m", "minilm"], None),
    ("neighbors bank (GloVe)", ["neighbors", "bank"], None),
]
TARGET_SECONDS = {"compare -m minilm (auto: lean ONNX)": 1.0, "compare -m mpnet (auto: lean ONNX)": 2.0}


def _env() -> dict[str, str]:
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return dict(os.environ, PYTHONPATH=SRC, **offline)


def _run(argv: list[str]) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (MiB) and stderr of one fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
    err = proc.stderr.read() if proc.stderr else ""
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_maxrss // 1024, err


def _row(name: str, argv: list[str], runs: int, target: float | None, torch_known: bool | None = None) -> dict:
    results = [_run(argv) for _ in range(runs)]
    torch = torch_known if torch_known is not None else any("TORCH=True" in err for _, _, err in results)
    return {
        "what": name,
        "median_s": statistics.median(t for t, _, _ in results),
        "peak_rss_mib": max(r for _, r, _ in results),
        "torch_imported": torch,
        "target_vs_torch_floor": target,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve_row(name: str, extra: list[str], runs: int) -> dict:
    """``serve`` from start until ``/health`` answers, then stopped (SIGTERM)."""
    times, peaks = [], []
    for _ in range(runs):
        port = _free_port()
        argv = [sys.executable, "-m", "contextlens", "serve", "-m", "minilm", "--port", str(port), *extra]
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"{' '.join(argv)} exited with {proc.returncode}") from None
                time.sleep(0.05)
        times.append(time.perf_counter() - start)
        proc.terminate()
        _pid, _status, usage = os.wait4(proc.pid, 0)
        peaks.append(usage.ru_maxrss // 1024)
    return {
        "what": name,
        "median_s": statistics.median(times),
        "peak_rss_mib": max(peaks),
        "torch_imported": None,
        "target_vs_torch_floor": None,
        "target_s": 3.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-demo", action="store_true", help="Skip the demo row (about a minute).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    py = sys.executable
    for model in ("minilm", "mpnet"):  # the exports exist before anything is timed (once per machine)
        subprocess.run([py, "-m", "contextlens", "compare", *BANK, "-m", model], env=_env(), capture_output=True)
    rows = [_row(name, [py, "-c", code], args.runs, None, "torch" in code) for name, code in FLOORS]
    torch_floor = rows[3]["median_s"]
    for name, cli_args, target in COMMANDS:
        argv = [py, "-c", "import sys, contextlens; sys.stderr.write('TORCH=%s' % ('torch' in sys.modules))"]
        if cli_args is not None:
            argv = [py, "-c", PROBE, *cli_args]
        row = _row(name, argv, args.runs, target)
        if name in TARGET_SECONDS:
            row["target_s"] = TARGET_SECONDS[name]
        rows.append(row)
    rows.append(_serve_row("serve -m minilm until /health (torch)", ["--runtime", "torch"], max(1, args.runs // 2)))
    rows.append(_serve_row("serve -m minilm until /health (onnx)", ["--runtime", "onnx"], max(1, args.runs // 2)))
    if not args.no_demo:
        with tempfile.TemporaryDirectory() as out:
            demo = ["demo", "-m", "minilm", "--out", out]
            rows.append(_row("demo -m minilm", [py, "-c", PROBE, *demo], 1, None))
    for row in rows:
        row["vs_torch_floor"] = row["median_s"] / torch_floor
    report = {"runs": args.runs, "load_avg": os.getloadavg(), "cores": os.cpu_count(), "rows": rows}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"load average {report['load_avg'][0]:.2f}, {report['cores']} cores, median of {args.runs} fresh processes")
    print(f"{'what':<48} {'seconds':>8} {'x torch floor':>14} {'target':>14} {'peak RSS':>9} {'torch':>6}")
    for row in rows:
        target = ""
        if row.get("target_vs_torch_floor") is not None:
            target = f"<= {row['target_vs_torch_floor']:.2f}x"
        if row.get("target_s") is not None:
            target = f"{target} <= {row['target_s']:.1f} s".strip()
        torch = "-" if row["torch_imported"] is None else ("yes" if row["torch_imported"] else "no")
        print(
            f"{row['what']:<48} {row['median_s']:>8.2f} {row['vs_torch_floor']:>13.2f}x {target:>14} "
            f"{row['peak_rss_mib']:>6} MiB {torch:>6}"
        )


if __name__ == "__main__":
    main()
