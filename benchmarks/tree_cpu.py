"""The CPU seconds a command and every process it starts use, all of them, until the last one ends.

    python benchmarks/tree_cpu.py -- python -m pytest -q -p no:cacheprovider tests/test_corpus.py

tests/cpu_ledger.py sums per test what it can see (the test process, its reaped children, its live
descendants), which misses what leaves the tree: Chromium's renderers and whole browser when its
driver ends it, Ray's nodes (`setsid` in scripts/ray-cluster.sh, reparented when the script
exits), the embedded PostgreSQL (it detaches). Here this process is a child subreaper
(``PR_SET_CHILD_SUBREAPER``): every orphan of the command is reparented to it and reaped by it, so
its ``RUSAGE_CHILDREN`` at the end holds the CPU of every process the command started. A process
still running ``--wait`` seconds after the command ended (a server's idle reaper) is reported by
pid and not waited for; its CPU is then missing from the total.

That total still misses the children of a process that ignores SIGCHLD: the kernel then discards
their CPU time when they end. Ray's raylet does so (``SigIgn`` in its /proc status), so its
actors, workers and Ray Data's helpers are not in it. Where a cgroup can be made (root, cgroup v1's
``cpuacct`` or cgroup v2), the command also runs in a cgroup of its own, and the cgroup's CPU, which
counts every process that ever ran in it however it ended, is printed beside the total.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
CGROUP_ROOTS = (  # (folder, file of its CPU, unit in seconds)
    (Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage", 1e-9),
    (Path("/sys/fs/cgroup/unified"), "cpu.stat", 1e-6),
    (Path("/sys/fs/cgroup"), "cpu.stat", 1e-6),
)


class CpuGroup:
    """A cgroup of this run's own: every process of the command, its CPU when they are gone."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        for root, stat, unit in CGROUP_ROOTS:
            if (root / "cgroup.procs").is_file():
                folder = root / f"contextlens-tree-cpu-{os.getpid()}"
                try:
                    folder.mkdir()
                except OSError:
                    continue
                if (folder / stat).is_file():
                    self.folder, self.stat, self.unit = folder, stat, unit
                    return
                folder.rmdir()

    def enter(self) -> None:
        """In the child, before it runs the command: join the cgroup."""
        if self.folder is not None:
            (self.folder / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float | None:
        if self.folder is None:
            return None
        text = (self.folder / self.stat).read_text()
        value = int(text) if self.stat == "cpuacct.usage" else int(text.split("usage_usec")[1].split()[0])
        return value * self.unit

    def remove(self) -> None:
        if self.folder is not None:
            with contextlib.suppress(OSError):  # a process still in it (reported as still running)
                self.folder.rmdir()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wait", type=float, default=120.0, help="seconds to wait for orphans after the command")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command: tree_cpu.py -- COMMAND ...")
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("tree_cpu.py: prctl(PR_SET_CHILD_SUBREAPER) failed: Linux only")
    group = CpuGroup()
    start = time.monotonic()
    main_pid = subprocess.Popen(command, preexec_fn=group.enter).pid
    code = _reap_until(main_pid)
    wall = time.monotonic() - start
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:  # the orphans, reparented here: reap them as they end
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.2)
    left = [p for p in os.listdir("/proc") if p.isdigit() and _parent(p) == os.getpid()]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    in_group = group.seconds()
    group.remove()
    print(
        f"tree_cpu: {used.ru_utime + used.ru_stime:.1f} CPU s ({used.ru_utime:.1f} user, {used.ru_stime:.1f} "
        f"system), command wall {wall:.1f} s, exit {code}" + (f"; still running, not counted: {left}" if left else "")
        + (f"; cgroup: {in_group:.1f} CPU s (every process, a raylet's children too)" if in_group is not None else
           "; no cgroup could be made: children of a process that ignores SIGCHLD are not counted"),
        file=sys.stderr,
    )  # fmt: skip
    sys.exit(code)


def _reap_until(main_pid: int) -> int:
    """Reap every child (the command and the orphans reparented here) until the command ends; its
    exit code. An orphan must be reaped as it ends, not after the command: a zombie keeps its
    /proc entry, and a test that waits for a stopped server's pid to go would wait out its guard."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == main_pid:
            return os.waitstatus_to_exitcode(status)


def _parent(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


if __name__ == "__main__":
    main()
