"""The suite's own scheduler (tests/file_scheduling.py): which worker group a test is in, and the
order the groups are handed out in."""

from __future__ import annotations

import json
from types import SimpleNamespace

from tests import file_scheduling
from tests.file_scheduling import CACHE_KEY, GUESS_PER_TEST, group_seconds, longest_first, worker_group


def _config(timed: dict[str, float] | None):
    cache = None if timed is None else SimpleNamespace(get=lambda key, default: timed if key == CACHE_KEY else default)
    return SimpleNamespace(cache=cache)


def test_a_file_is_a_group_and_the_postgresql_files_are_one_and_the_demo_readers_one():
    assert worker_group("tests/test_corpus.py::test_x[a::b]") == "tests/test_corpus.py"
    assert worker_group("tests/test_pgvector.py::test_y") == worker_group("tests/test_pg_lifetime.py::test_z") == "pg"
    assert worker_group("tests/test_cli.py::t") == worker_group("tests/test_web_browser.py::t") == "demo"


def test_the_last_run_on_this_machine_then_the_shipped_table_then_a_guess(tmp_path, monkeypatch):
    shipped = tmp_path / "group_seconds.json"
    shipped.write_text(json.dumps({"tests/test_a.py": 100.0, "tests/test_b.py": 5.0}))
    monkeypatch.setattr(file_scheduling, "SHIPPED_SECONDS", shipped)
    groups = {
        "tests/test_a.py": {"tests/test_a.py::t1": False, "tests/test_a.py::t2": False},
        "tests/test_b.py": {"tests/test_b.py::t1": False},
        "tests/test_new.py": {f"tests/test_new.py::t{i}": False for i in range(4)},
    }
    # timed here: test_a's one timed test and a guess for the other; test_b from the shipped table
    seconds = group_seconds(groups, _config({"tests/test_a.py::t1": 3.0}))
    guessed = {"tests/test_a.py": 3.0 + GUESS_PER_TEST, "tests/test_new.py": 4 * GUESS_PER_TEST}
    assert seconds == {**guessed, "tests/test_b.py": 5.0}
    assert list(longest_first(groups, seconds)) == ["tests/test_b.py", "tests/test_a.py", "tests/test_new.py"]
    # a clean clone (no pytest cache): the shipped table
    seconds = group_seconds(groups, _config(None))
    assert list(longest_first(groups, seconds)) == ["tests/test_a.py", "tests/test_b.py", "tests/test_new.py"]
