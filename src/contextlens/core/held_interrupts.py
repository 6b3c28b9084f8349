"""Ctrl-C held back across an import that cannot take it, then raised.

A KeyboardInterrupt that lands in C++ inside torch's import (``torch.distributed``, through
pybind11) cannot be passed on: the process aborts with "terminate called after throwing an
instance of 'pybind11::error_already_set'" (exit -6; 3 of 226 runs of ``compare --runtime
torch`` interrupted at 0.5-2.0 s). Held, it is raised once the import is done (torch imports in
about 1.2 s), and the command line's usual one line and exit 130 follow.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def held_interrupts() -> Iterator[None]:
    """SIGINT during the block is remembered, not raised; KeyboardInterrupt after it if one came.
    Only where Python's own handler is in place in the main thread (elsewhere: nothing held)."""
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    came: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if came:
        raise KeyboardInterrupt
