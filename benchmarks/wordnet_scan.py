"""WordNet's whole-file scan (issue 30): NLTK's reader beside ours, and a first `compare` before/after.

Why: a first command on an empty cache lists WordNet's usage examples, one pass over all 117,659
synsets; through NLTK's ``all_synsets`` that pass cost most of the ~13 s the examples took. This
prints the CPU and wall seconds of the walk alone (the fields the scans read) with each reader,
of the usage-example scan with NLTK's walk (the old code), with ours, and with ours plus the
memoised morphy (the new code), and checks that the two walks give the same synsets, field by field,
and that the old and new scans give the same examples (the test suite compares a sample).

    python benchmarks/wordnet_scan.py [--repeats 1] [--before DIR] [--model minilm] [--json]

``--before DIR``: a copy of the old tree (``git -C /work/main archive HEAD | tar -x -C DIR``);
then ``contextlens compare`` is run once on an empty cache (``CONTEXTLENS_CACHE``) with that
tree's ``src`` and once with this one's, each in a fresh process, wall and CPU (children) seconds.
The reader itself is built before the timings (its index files: ~3 s in either case).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RIVER, MONEY = "I sat on the river [bank].", "I opened a [bank] account."


def _timed(work: Callable[[], object], repeats: int) -> tuple[float, float, object]:
    """Best CPU and best wall seconds over ``repeats`` runs, and the last run's result."""
    cpu = wall = float("inf")
    result = None
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        result = work()
        cpu, wall = min(cpu, time.process_time() - c), min(wall, time.perf_counter() - w)
    return cpu, wall, result


def scan_rows(repeats: int) -> list[dict[str, object]]:
    from contextlens.core import wordnet as wn
    from contextlens.core.wordnet_files import SynsetEntry

    reader = wn.wordnet()

    def nltk_entries():
        reader._synset_offset_cache.clear()  # each walk parses every line again, as a fresh process does
        for pos in ("n", "v", "a", "r"):
            for s in reader.all_synsets(pos):
                lemmas, examples = tuple(s.lemma_names()), tuple(s.examples())
                yield SynsetEntry(s.name(), s.pos(), s.offset(), lemmas, s.definition(), examples)

    memoised = wn._morphy

    def scan(entries, memo: bool):
        wn._morphy = memoised if memo else (lambda form, pos: reader._morphy(form, pos))
        memoised.cache_clear()
        try:
            return wn._scan_usage_examples(entries())
        finally:
            wn._morphy = memoised

    cases = [
        ("walk: NLTK all_synsets", lambda: sum(1 for _ in nltk_entries())),
        ("walk: contextlens wordnet_files", lambda: sum(1 for _ in wn.synset_entries())),
        ("usage examples: NLTK walk, morphy per call (before)", lambda: scan(nltk_entries, memo=False)),
        ("usage examples: our walk, morphy per call", lambda: scan(wn.synset_entries, memo=False)),
        ("usage examples: our walk, memoised morphy (after)", lambda: scan(wn.synset_entries, memo=True)),
    ]
    rows, results = [], {}
    for label, work in cases:
        cpu, wall, result = _timed(work, repeats)
        results[label] = result
        rows.append({"what": label, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2)})
    if list(nltk_entries()) != list(wn.synset_entries()):
        raise SystemExit("the walks differ: NLTK's reader and ours give other synsets")
    rows.append({"what": "same synsets, field by field, in the same order", "cpu_s": None, "wall_s": None})
    before, after = results[cases[2][0]], results[cases[4][0]]
    if before != after:
        raise SystemExit("the scans differ: NLTK's walk and ours give other usage examples")
    rows.append({"what": f"same examples and stats: {after[1]}", "cpu_s": None, "wall_s": None})
    return rows


def first_compare(tree: Path, model: str) -> dict[str, object]:
    """``contextlens compare`` on an empty cache with ``tree``'s sources: wall and CPU seconds."""
    with tempfile.TemporaryDirectory(prefix="wn-first-") as cache:
        env = {**os.environ, "CONTEXTLENS_CACHE": cache, "PYTHONPATH": str(tree / "src")}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "contextlens", "compare", RIVER, MONEY, "-m", model],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"compare with {tree} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"what": f"first compare -m {model}, {tree}", "cpu_s": round(cpu, 1), "wall_s": round(wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--before", type=Path, default=None, help="a copy of the old tree, for the first compare")
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    load = os.getloadavg()
    rows = scan_rows(args.repeats)
    if args.before is not None:
        rows += [first_compare(args.before.resolve(), args.model), first_compare(SRC.parent, args.model)]
    load = (load[0], os.getloadavg()[0])
    if args.json:
        print(json.dumps({"rows": rows, "load_average": load, "cpus": os.cpu_count()}))
        return
    for row in rows:
        figures = "" if row["cpu_s"] is None else f"{row['cpu_s']:>8} CPU s {row['wall_s']:>8} wall s   "
        print(f"{figures}{row['what']}")
    print(f"load average {load[0]:.1f} before, {load[1]:.1f} after; {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
