"""Ctrl-C held back across an import that cannot take it, then raised.

A KeyboardInterrupt that lands in C++ inside torch's import (``torch.distributed``, through
pybind11) cannot be passed on: the process aborts with "terminate called after throwing an
instance of 'pybind11::error_already_set'" (exit -6; 3 of 226 runs of ``compare --runtime
torch`` interrupted at 0.5-2.0 s). Held, it is raised once the import is done (torch imports in
about 1.2 s), and the command line's usual one line and exit 130 follow.

Under load the import takes far longer (6-8 s with four CPU burners on 2 cores), so the command
line asks instead for the process to end at the Ctrl-C (:func:`stop_at_interrupt`): nothing of the
import needs undoing, and ending the process raises nothing into the C++ below.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_stop: Callable[[], object] | None = None  # what a Ctrl-C inside a held block does now, if set


def stop_at_interrupt(stop: Callable[[], object] | None) -> None:
    """``stop`` (it ends the process) runs at once on a Ctrl-C inside a held block, instead of the
    interrupt waiting for the block's end; None: held again. The command line's choice, not the API's."""
    global _stop
    _stop = stop


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

    def hold(signum: int, _frame: object) -> None:
        if _stop is not None:
            _stop()
        came.append(signum)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if came:
        raise KeyboardInterrupt
