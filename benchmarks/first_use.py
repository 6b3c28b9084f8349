"""First use (issue 30, item 3): each verb's first and second run on an empty cache, beside
`contextlens prepare`'s own time and the first run after it.

Why: the goal is that after the README's set-up every first command runs at warm speed; this
measures how far a first command is from its second one without `prepare`, and with it.

    python benchmarks/first_use.py --models minilm --verbs compare,same-sense [--json]

Per model and verb: a fresh cache folder (``CONTEXTLENS_CACHE``), the verb twice; then one more
fresh folder, ``contextlens prepare -m MODEL`` and each verb once more ("after prepare"). ``index
search`` and ``corpus search`` need an index or extraction first: it is built, untimed, in that
same folder before the first search (so that search's "first" already has the export). ``serve``
is timed until ``/health`` answers.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

RIVER, MONEY = "I sat on the river [bank].", "I opened a [bank] account."
DOCS = [
    "The bank raised its interest rates again.",
    "We had a picnic on the grassy bank of the river.",
    "She deposited her salary at the bank on Monday.",
    "Fish gathered near the muddy bank where the water was calm.",
]
VERBS = [
    "compare", "same-sense", "explore", "probe", "rank", "attention", "trace", "serve", "demo",
    "index search", "corpus search",
]  # fmt: skip
HEALTH_WAIT = 600  # seconds a server may take to answer /health before the run counts as failed


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "CONTEXTLENS_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "contextlens", *args]


def _timed(cmd: list[str], cache: Path) -> float:
    """Wall seconds of one run; its CPU seconds (user + sys) and the load average go to stderr, since
    on a shared machine the wall says more of the neighbours than of the command."""
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(cmd, env=_env(cache), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[2:])} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    used, load = _children_cpu() - cpu, os.getloadavg()[0]
    print(f"  {' '.join(cmd[3:5])}: wall {seconds:.1f} s, CPU {used:.1f} s, load {load:.1f}", file=sys.stderr)
    return seconds


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(model: str, cache: Path) -> float:
    """Seconds from the start of `serve` until /health answers; the server is stopped after."""
    port = _free_port()
    started = time.perf_counter()
    proc = subprocess.Popen(
        _cli("serve", "--port", str(port), "--model", model),
        env=_env(cache), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        while time.perf_counter() - started < HEALTH_WAIT:
            if proc.poll() is not None:
                raise SystemExit(f"serve exited {proc.returncode}: {proc.stderr.read()[-400:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return time.perf_counter() - started
            except OSError:
                time.sleep(0.1)
        raise SystemExit(f"serve did not answer /health within {HEALTH_WAIT} s")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _runner(verb: str, model: str, work: Path) -> tuple[Callable[[Path], None] | None, Callable[[Path], float]]:
    """(untimed set-up or None, the timed run) of ``verb`` for ``model``; ``work`` holds its files."""
    m = ["-m", model]
    simple = {
        "compare": ["compare", RIVER, MONEY, *m],
        "same-sense": ["same-sense", RIVER, MONEY, *m],
        "explore": ["explore", "bank", *m],
        "probe": ["probe", "The river [bank] flooded.", "--anchors", "money,water", *m],
        "rank": ["rank", "--static", "glove-50d", *m],
        "attention": ["attention", RIVER, MONEY, "--layer", "2", "--head", "1", *m],
        "trace": ["trace", MONEY, *m],
        "demo": ["demo", *m, "--out", str(work / "demo")],
    }
    if verb in simple:
        return None, lambda cache: _timed(_cli(*simple[verb]), cache)
    if verb == "serve":
        return None, lambda cache: _serve(model, cache)
    docs = work / "docs.txt"
    docs.write_text("\n".join(DOCS) + "\n")
    if verb == "index search":
        index = work / "index"

        def build_index(cache: Path) -> None:
            _timed(_cli("index", "build", str(docs), "--out", str(index), "--force", *m), cache)

        return build_index, lambda cache: _timed(_cli("index", "search", str(index), "money"), cache)
    if verb == "corpus search":
        folder = work / "occurrences"

        def extract(cache: Path) -> None:
            _timed(_cli("corpus", "extract", str(docs), "--words", "bank", "--out", str(folder), "--force", *m), cache)

        return extract, lambda cache: _timed(_cli("corpus", "search", str(folder), "--like", MONEY), cache)
    raise SystemExit(f"unknown verb {verb!r}; choose among: {', '.join(VERBS)}")


def measure(model: str, verbs: list[str]) -> dict[str, object]:
    """First and second run per verb on fresh caches; prepare's time and each verb after it."""
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for verb in verbs:
            cache, work = root / f"cache-{verb}", root / f"work-{verb}"
            work.mkdir()
            setup, run = _runner(verb, model, work)
            if setup is not None:
                setup(cache)
            rows[verb] = {"first": run(cache), "second": run(cache)}
            print(f"{model} {verb}: first {rows[verb]['first']:.1f} s, second {rows[verb]['second']:.1f} s",
                  file=sys.stderr)  # fmt: skip
        prepared = root / "cache-prepared"
        prepare_seconds = _timed(_cli("prepare", "-m", model), prepared)
        print(f"{model} prepare: {prepare_seconds:.1f} s", file=sys.stderr)
        for verb in verbs:
            work = root / f"after-{verb}"
            work.mkdir()
            setup, run = _runner(verb, model, work)
            if setup is not None:
                setup(prepared)
            rows[verb]["after_prepare"] = run(prepared)
    return {"model": model, "prepare_seconds": prepare_seconds, "verbs": rows}


def table(results: list[dict]) -> str:
    lines = [
        "| model | verb | first (empty cache) | second | first after prepare |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(f"| {r['model']} | `contextlens prepare` | {r['prepare_seconds']:.1f} | | |")
        for verb, t in r["verbs"].items():
            lines.append(f"| {r['model']} | {verb} | {t['first']:.1f} | {t['second']:.1f} | {t['after_prepare']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm", help="comma-separated: minilm, mpnet")
    parser.add_argument("--verbs", default=",".join(VERBS), help=f"comma-separated among: {', '.join(VERBS)}")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    verbs = [v.strip() for v in args.verbs.split(",") if v.strip()]
    unknown = [v for v in verbs if v not in VERBS]
    if unknown:
        parser.error(f"unknown verb(s) {', '.join(unknown)}; choose among: {', '.join(VERBS)}")
    results = [measure(m.strip(), verbs) for m in args.models.split(",") if m.strip()]
    print(json.dumps(results, indent=2) if args.json else table(results))


if __name__ == "__main__":
    main()
