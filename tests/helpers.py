"""Run the real `contextlens` CLI in a subprocess: real stderr, real exit codes."""

from __future__ import annotations

import os
import subprocess
import sys


def run_cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "contextlens", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def assert_plain_json(obj: object, where: str = "result") -> None:
    """Fail unless ``obj`` is made of plain JSON types only (no numpy scalars or arrays, no NaN)."""
    import json
    import math

    if isinstance(obj, dict):
        for key, value in obj.items():
            assert type(key) is str, f"{where}: key {key!r} is {type(key).__name__}, not str"
            assert_plain_json(value, f"{where}.{key}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            assert_plain_json(value, f"{where}[{i}]")
    else:
        assert obj is None or type(obj) in (str, int, float, bool), f"{where} is {type(obj).__name__}"
        assert not (type(obj) is float and not math.isfinite(obj)), f"{where} is {obj}"
    json.dumps(obj, allow_nan=False)
