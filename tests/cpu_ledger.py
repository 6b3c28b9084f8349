"""Per-test CPU seconds, for docs/speed.md's table (``CONTEXTLENS_TEST_CPU=FILE pytest ...``).

Wall time depends on the load; CPU time (this process, its reaped children, and every live
descendant: servers, Ray's raylets and workers, Chromium) is what a test costs the machine, so the
sum over the suite divided by the cores is the least wall time the suite can take there. Each
worker appends ``{"test", "cpu", "wall"}`` lines to ``FILE.<worker>``.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import psutil
import pytest


def _cpu_seconds() -> float:
    """CPU used so far by this process, its reaped children and its live descendants."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    gone = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + gone.ru_utime + gone.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        # and what its own reaped children used: a Chromium renderer that ended (its context closed)
        # is reaped by Chromium, not by us, and would otherwise drop out of the sum (negative rows)
        total += t.user + t.system + t.children_user + t.children_system
    return total


class CpuLedger:
    def __init__(self, path: Path) -> None:
        self.path = path

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        cpu, wall = _cpu_seconds(), time.monotonic()
        yield
        line = {"test": item.nodeid, "cpu": round(_cpu_seconds() - cpu, 2), "wall": round(time.monotonic() - wall, 2)}
        with self.path.open("a") as fh:
            fh.write(json.dumps(line) + "\n")


def register(config: pytest.Config, worker: str | None) -> None:
    """Install the ledger when ``CONTEXTLENS_TEST_CPU`` names a file."""
    target = os.environ.get("CONTEXTLENS_TEST_CPU")
    if target:
        config.pluginmanager.register(CpuLedger(Path(f"{target}.{worker or 'main'}")), "contextlens-cpu-ledger")
