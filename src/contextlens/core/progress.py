"""Progress of long core work, as callbacks: core counts, a face draws.

Core functions that batch take ``show_progress_bar`` (the sentence-transformers flag) and an
optional ``progress(done, total)`` callback. A bar is drawn by the drawer a face installed with
:func:`set_progress_drawer` (the CLI's is rich's); without one, a plain line on stderr when it is
a terminal. A run of several long steps (the lesson) takes a ``step(what)`` callback told as
each step starts, which a face shows as a status line. Core imports no drawing library.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

Progress = Callable[[int, int], None]  # (done, total)
Step = Callable[[str], None]  # told what a run of several long steps starts now (a face shows it)
Drawer = Callable[[str, int], AbstractContextManager[Progress]]  # (what, total) -> a bar to tell

_drawer: list[Drawer] = []


def set_progress_drawer(drawer: Drawer | None) -> None:
    """Install how bars are drawn (None: the plain default)."""
    _drawer.clear()
    if drawer is not None:
        _drawer.append(drawer)


def progress_bar(what: str, total: int) -> AbstractContextManager[Progress]:
    """A bar for ``total`` items of ``what``: the installed drawer's, else a plain stderr line."""
    return _drawer[0](what, total) if _drawer else _plain_bar(what, total)


@contextmanager
def _plain_bar(what: str, total: int) -> Iterator[Progress]:
    shown = sys.stderr.isatty()

    def tell(done: int, _total: int) -> None:
        if shown:
            sys.stderr.write(f"\r{what}: {done}/{total}")
            sys.stderr.flush()

    try:
        yield tell
    finally:
        if shown:
            sys.stderr.write("\r" + " " * (len(what) + 2 * len(str(total)) + 3) + "\r")
            sys.stderr.flush()
