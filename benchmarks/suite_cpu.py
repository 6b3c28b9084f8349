"""The test suite's CPU by file: where the 2-core wall-time floor comes from (issue 30).

    CONTEXTLENS_TEST_CPU=/tmp/cpu make test      # or pytest -n 3 ... with the variable set
    python benchmarks/suite_cpu.py /tmp/cpu [--top 30] [--cores 2] [--write-groups tests/group_seconds.json]

Reads the ledger lines tests/cpu_ledger.py wrote (one file per worker) and prints each test file's
CPU seconds and wall seconds, the ten costliest tests, and the suite's CPU divided by the cores:
the least wall time the suite can take on that many cores, beside issue 30's 240 s target.
``--write-groups`` writes each worker group's wall seconds (tests/file_scheduling.py's groups):
the order a clean clone, which has no pytest cache, hands the groups out in.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from collections import defaultdict

TARGET_SECONDS = 240


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ledger", help="the CONTEXTLENS_TEST_CPU value the suite ran with")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--write-groups", metavar="FILE", help="write each worker group's wall seconds (JSON)")
    args = parser.parse_args()
    rows = []
    for path in sorted(glob.glob(args.ledger + ".gw*") + glob.glob(args.ledger + ".main")):  # not a LEDGER.log beside
        with open(path) as fh:
            rows += [json.loads(line) for line in fh]
    if not rows:
        raise SystemExit(f"no ledger lines under {args.ledger}.*: run the suite with CONTEXTLENS_TEST_CPU=LEDGER")
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for row in rows:
        entry = by_file[row["test"].split("::", 1)[0]]
        entry[0] += row["cpu"]
        entry[1] += row["wall"]
        entry[2] += 1
    total_cpu = sum(r["cpu"] for r in rows)
    print(f"{len(rows)} tests, {total_cpu:.0f} CPU s in all; on {args.cores} cores at least "
          f"{total_cpu / args.cores:.0f} s of wall time (issue 30's target: {TARGET_SECONDS} s)\n")  # fmt: skip
    print("| CPU s | share | wall s | tests | file |\n|---|---|---|---|---|")
    for name, (cpu, wall, count) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"| {cpu:.1f} | {cpu / total_cpu:.1%} | {wall:.1f} | {count} | {name} |")
    print("\n| CPU s | wall s | test |\n|---|---|---|")
    for row in sorted(rows, key=lambda r: -r["cpu"])[:10]:
        print(f"| {row['cpu']:.1f} | {row['wall']:.1f} | {row['test']} |")
    if args.write_groups:
        write_groups(rows, args.write_groups)


def write_groups(rows: list[dict], path: str) -> None:
    """Each worker group's wall seconds in this run, longest first, one group a line."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from tests.file_scheduling import worker_group

    seconds: dict[str, float] = defaultdict(float)
    for row in rows:
        seconds[worker_group(row["test"])] += row["wall"]
    ordered = sorted(seconds.items(), key=lambda kv: -kv[1])
    with open(path, "w") as fh:
        fh.write("{\n" + ",\n".join(f"{json.dumps(g)}: {s:.1f}" for g, s in ordered) + "\n}\n")
    print(f"\nwrote {len(ordered)} groups' seconds to {path}")


if __name__ == "__main__":
    main()
