"""What Python's bytecode caches save per process (issue 30: the suite's CPU).

    python benchmarks/bytecode_cache.py [--repeats 3]

Some machines set PYTHONDONTWRITEBYTECODE, so nothing writes the ``__pycache__`` folders of the
package (an editable install: pip compiles only what it copies) or the ``-pytest-`` files that hold
pytest's rewritten test modules; every process then compiles what it imports. The Makefile unexports
the variable. This runs each command with no cache of the project's own code (its ``__pycache__``
folders under src/ and tests/ removed, the variable set) and with a warm one (one earlier run
without the variable wrote them), and prints the CPU seconds of each side by side. The caches of
site-packages are pip's and are read either way. It leaves the project's caches warm.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "import the CLI and the web app": [sys.executable, "-c", "import contextlens.cli, contextlens.web.app"],
    "contextlens --help": [sys.executable, "-m", "contextlens", "--help"],
    "pytest --collect-only (one worker's collection)": [
        sys.executable,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
    ],  # fmt: skip
}


def cpu_of(command: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one run of ``command`` and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def drop_caches() -> None:
    """Remove the project's own bytecode caches (git-ignored folders)."""
    for folder in ("src", "tests"):
        for cache in (ROOT / folder).rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    base |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    off, on = base | {"PYTHONDONTWRITEBYTECODE": "1"}, base
    print(f"{'command':<50} {'no cache, CPU s':>16} {'warm cache, CPU s':>18}")
    for name, command in COMMANDS.items():
        without = []
        for _ in range(args.repeats):
            drop_caches()  # each time: a process that clears its environment (the pg keeper) writes some
            without.append(cpu_of(command, off))
        cpu_of(command, on)  # writes the caches
        with_cache = [cpu_of(command, on) for _ in range(args.repeats)]
        print(f"{name:<50} {statistics.median(without):>16.2f} {statistics.median(with_cache):>18.2f}")
    print(f"(median of {args.repeats} runs each; {sys.platform}, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
