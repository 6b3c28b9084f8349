"""Idle threads sleep (docs/speed.md, "Idle threads"): OpenMP's policy is set before torch loads,
unless the user set one, and ONNX Runtime's sessions are made without spinning."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from contextlens.core.contextual_models import ContextualModel

SHOW_POLICY = "import os, contextlens; print(os.environ.get('OMP_WAIT_POLICY'))"


@pytest.mark.parametrize(("given", "seen"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_import_contextlens_makes_openmp_sleep_unless_the_user_chose(given: str | None, seen: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    shown = subprocess.run([sys.executable, "-c", SHOW_POLICY], env=env, capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == seen


def test_onnx_runtime_sessions_do_not_spin(minilm_onnx: ContextualModel) -> None:
    graphs = minilm_onnx.onnx_forward()
    session = graphs.session(minilm_onnx.num_layers)
    assert session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"
