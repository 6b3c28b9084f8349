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
