"""Issue 36, item 7: a local Ray starts with what a job needs (no dashboard, metrics or usage
report; patient health checks), tries again after Ray's hard-coded 30 s raylet deadline was missed
on a loaded machine, within a deadline of its own, and says any failure in one line (RayStartError,
exit 2 in the CLI). The session's shared cluster (conftest.ray_cluster) is left alone: these tests
stand a fake ``ray`` in for the real one, and the real start runs in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from contextlens.analyses.corpus import ray_engine
from contextlens.analyses.corpus.ray_engine import LOCAL_RAY_ENV, MISSED_START, RayStartError, start_local_ray


class FakeRay:
    """``ray.init`` failing with ``errors`` in turn (None: it starts), recording the environment each
    try saw and the shutdowns between tries."""

    def __init__(self, *errors: str | None) -> None:
        self.errors, self.env, self.kwargs, self.shutdowns = list(errors), [], [], 0

    def init(self, **kwargs) -> None:
        self.env.append({k: os.environ.get(k) for k in LOCAL_RAY_ENV})
        self.kwargs.append(kwargs)
        error = self.errors.pop(0)
        if error is not None:
            raise Exception(error)  # noqa: TRY002 - what Ray raises

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_a_missed_raylet_deadline_is_tried_again_with_a_lean_environment(monkeypatch):
    for k in LOCAL_RAY_ENV:
        monkeypatch.delenv(k, raising=False)
    ray = FakeRay(f"The current node {MISSED_START}. This could happen", f"The current node {MISSED_START}.", None)
    start_local_ray(ray, 2, {"include_dashboard": False})
    assert len(ray.env) == 3 and ray.shutdowns == 2  # each failed try's processes stopped before the next
    assert all(env == LOCAL_RAY_ENV for env in ray.env)
    assert ray.kwargs[0] == {"address": "local", "num_cpus": 2, "include_dashboard": False}  # never a running one
    assert all(k not in os.environ for k in LOCAL_RAY_ENV)  # as before, after the start


def test_a_users_own_ray_setting_is_kept(monkeypatch):
    name = "RAY_enable_metrics_collection"  # Ray's own spelling
    monkeypatch.setenv(name, "1")
    ray = FakeRay(None)
    start_local_ray(ray, 1, {})
    assert ray.env[0][name] == "1" and os.environ[name] == "1"


def test_a_start_failure_is_one_line_after_the_tries_or_the_deadline():
    ray = FakeRay(*[f"The current node {MISSED_START}.\nThis could happen because ..."] * 10)
    with pytest.raises(RayStartError) as caught:
        start_local_ray(ray, 1, {})
    assert len(ray.env) == ray_engine.LOCAL_START_TRIES
    message = str(caught.value)
    assert "\n" not in message and f"in {ray_engine.LOCAL_START_TRIES} tries over" in message
    assert MISSED_START in message and "`engine` local" in message
    once = FakeRay(f"node {MISSED_START}", None)
    with pytest.raises(RayStartError):
        start_local_ray(once, 1, {}, deadline=0)  # the deadline gone: no second try
    other = FakeRay("Address already in use\nmore", None)
    with pytest.raises(RayStartError, match="Address already in use"):
        start_local_ray(other, 1, {})  # not the raylet deadline: not tried again
    assert len(once.env) == len(other.env) == 1


def test_a_real_local_ray_starts_lean_and_in_time(tmp_path):
    """A fresh process starts a local Ray as a job does and reports how long it took and which of
    Ray's processes run: its API server without the dashboard's frontend and modules."""
    pytest.importorskip("ray")
    script = textwrap.dedent(
        """
        import json, os, time
        import psutil
        from contextlens.analyses.corpus.ray_engine import start_ray
        t = time.monotonic()
        ray = start_ray(None, cpus=1)
        seconds = time.monotonic() - t
        children = [" ".join(p.cmdline()) for p in psutil.Process().children(recursive=True)]
        metrics = os.environ.get("RAY_enable_metrics_collection")
        ray.shutdown()
        print(json.dumps({"seconds": seconds, "children": children, "metrics_env_after": metrics}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in LOCAL_RAY_ENV}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env,
                          cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"local Ray started in {out['seconds']:.1f} s; {len(out['children'])} processes")
    assert out["seconds"] < ray_engine.LOCAL_START_SECONDS
    # Ray 2.60 always runs its API server; without the dashboard it loads no UI (--disable-frontend)
    heads = [c for c in out["children"] if "dashboard/dashboard.py" in c]
    assert all("--disable-frontend" in c for c in heads), heads
    assert out["metrics_env_after"] is None  # the lean settings were for Ray's processes only
