"""Which worker runs which tests under pytest-xdist, and in what order (``make test``: ``-n``
a worker a core, ``--dist loadgroup``).

Each test file stays on one worker, so its module fixtures are made once; the files that share the
embedded PostgreSQL go to one worker together, since some of them stop it or time its idle limit,
and so do the files that read the session's one demo run (conftest's ``demo_run``, a run of
`contextlens demo` made once in each worker that asks for it).
xdist 3.8's ``xdist_group`` marks do nothing under pytest 9.2 (it writes the group into a test id
pytest no longer reads), so the grouping is a scheduler of our own.

The groups are handed out longest first, so that the two longest (the demo group, which holds the
browser file, and the Ray file) start at once on two workers and the last to finish are short:
xdist's own order (most tests first) can leave a long file for the end. On 2 cores the suite is
CPU-bound, so the gain there is within the noise (3 workers: 645 s against 653 s; docs/speed.md).
A group's length is the sum of its tests' seconds in their last run on this machine (pytest's
cache, written at the end of each run), else its seconds in ``tests/group_seconds.json`` (a quiet
run's, for a clean clone), else a guess from its number of tests.
"""

from __future__ import annotations

import json
from collections import OrderedDict, defaultdict
from pathlib import Path

import pytest

PG_FILES = frozenset({"test_pgvector.py", "test_pg_security.py", "test_pg_measured.py", "test_pg_hnsw_pages.py",
                      "test_pg_lifetime.py"})  # fmt: skip
SHIPPED_SECONDS = Path(__file__).with_name("group_seconds.json")
CACHE_KEY = "contextlens/test_seconds"
GUESS_PER_TEST = 0.5  # seconds, for a test no run has timed yet
DEMO_FILES = frozenset({"test_web_browser.py", "test_report.py", "test_cli.py"})


def worker_group(nodeid: str) -> str:
    """The worker group of a test: its file (``tests/test_x.py``), "pg" for the files that share the
    server, or "demo" for those that read the demo run."""
    path = nodeid.split("::", 1)[0]
    name = path.rsplit("/", 1)[-1]
    return "pg" if name in PG_FILES else "demo" if name in DEMO_FILES else path


def group_seconds(groups: dict[str, dict[str, bool]], config: pytest.Config) -> dict[str, float]:
    """Each group's expected seconds (``groups``: group -> its test ids)."""
    shipped = json.loads(SHIPPED_SECONDS.read_text()) if SHIPPED_SECONDS.is_file() else {}
    timed: dict[str, float] = config.cache.get(CACHE_KEY, {}) if getattr(config, "cache", None) else {}
    seconds = {}
    for group, tests in groups.items():
        if any(test in timed for test in tests):
            seconds[group] = sum(timed.get(test, GUESS_PER_TEST) for test in tests)
        else:
            seconds[group] = shipped.get(group, GUESS_PER_TEST * len(tests))
    return seconds


def longest_first(groups: dict[str, dict[str, bool]], seconds: dict[str, float]) -> OrderedDict:
    """The work queue reordered so that the longest groups are handed out first."""
    return OrderedDict(sorted(groups.items(), key=lambda item: seconds[item[0]], reverse=True))


def make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadgroup`` or ``loadfile``: whole groups to one worker each, the longest first."""
    if config.getvalue("dist") not in ("loadgroup", "loadfile"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileGroups(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

        def _assign_work_unit(self, node) -> None:  # noqa: ANN001 - xdist's WorkerController
            if not self.ordered:  # the queue is whole by the first assignment
                self.workqueue = longest_first(self.workqueue, group_seconds(self.workqueue, config))
                self.ordered = True
            super()._assign_work_unit(node)

    return FileGroups(config, log)


class DurationRecorder:
    """Each test's seconds (set-up, call, tear-down), summed in the controller and kept in pytest's
    cache for the next run's order; a partial run updates the tests it ran."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if getattr(self.config, "cache", None) is None or not self.seconds:
            return
        kept = dict(self.config.cache.get(CACHE_KEY, {}))
        kept.update({test: round(s, 2) for test, s in self.seconds.items()})
        self.config.cache.set(CACHE_KEY, kept)


def record_durations(config: pytest.Config, worker: str | None) -> None:
    """Time the tests in a plain run or xdist's controller (a worker sees only its share)."""
    if worker is None:
        config.pluginmanager.register(DurationRecorder(config), "contextlens-durations")
