"""How many threads a forward pass may use, said once for torch and ONNX Runtime alike.

Why apart: the lean path (:mod:`contextlens.core.lean_backbone`) never imports torch, yet its ONNX
Runtime sessions must run on the count ``--threads`` asked for, and torch's count, where torch is
loaded, stays the one source of truth (callers and benchmarks set ``torch.set_num_threads``).
"""

from __future__ import annotations

import os
import sys

_chosen: int | None = None
WAIT_POLICY = "PASSIVE"  # OpenMP's idle threads sleep (benchmarks/idle_threads.py)


def sleep_when_idle() -> None:
    """Make OpenMP's idle threads (torch's) sleep, unless the user chose a policy: a spinning
    thread holds a core that straggling work needs, and on shared cores that costs a forward up to
    2.5 times its time (docs/speed.md, "Idle threads"). Read once, when torch loads its OpenMP: so this
    runs on ``import contextlens``, before any torch import of ours."""
    os.environ.setdefault("OMP_WAIT_POLICY", WAIT_POLICY)


def default_threads() -> int:
    """Every core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def set_threads(count: int) -> None:
    """Use ``count`` threads from now on: torch's count too when torch is loaded (not imported here)."""
    global _chosen
    _chosen = max(1, int(count))
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(_chosen)


def sync_torch() -> None:
    """Give torch, just imported, the count chosen before it loaded (if one was)."""
    torch = sys.modules.get("torch")
    if torch is not None and _chosen is not None:
        torch.set_num_threads(_chosen)


def current_threads() -> int:
    """torch's count where torch is loaded (it may have been set directly), else the one chosen
    with :func:`set_threads`, else every core."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return int(torch.get_num_threads())
    return _chosen if _chosen is not None else default_threads()
