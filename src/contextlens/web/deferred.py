"""Long page work: the page first, with a status line, and the result when it is ready.

A page whose result takes longer than ``SHOW_PAGE_AFTER_S`` answers its form at once with a
status element (``#work-status``, updated each second by static/page.js) and the address of the
work still running (``GET /result/<token>``); the script fetches that and puts the result under
the form. Quick work is answered in the page as before (its status code too: a bad input is 400), and so is
every page asked for by a client that is not a browser (no ``text/html`` in its Accept: a script,
curl, a test client): it runs no page.js and wants the whole page.
"""

from __future__ import annotations

import asyncio
import html
import secrets
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

SHOW_PAGE_AFTER_S = 2.0  # under this a page waits for its result; over it the page comes first
MAX_WAITING = 64  # work begun and not yet fetched; the oldest are forgotten past this


def in_a_browser(headers: Mapping[str, str]) -> bool:
    """A browser's navigation (its Accept names text/html), which runs page.js to fetch the rest."""
    return "text/html" in headers.get("accept", "")


class Waiting:
    """The tasks of pages answered before their result: token -> task (one fetch each)."""

    def __init__(self) -> None:
        self._tasks: OrderedDict[str, asyncio.Task[Any]] = OrderedDict()

    def put(self, task: asyncio.Task[Any]) -> str:
        token = secrets.token_urlsafe(16)
        self._tasks[token] = task
        while len(self._tasks) > MAX_WAITING:
            self._tasks.popitem(last=False)
        return token

    def take(self, token: str) -> asyncio.Task[Any] | None:
        return self._tasks.pop(token, None)


def status_block(token: str) -> str:
    """Where the result will go, and the line that says the work is running."""
    return (
        f'<p id="work-status" role="status" aria-live="polite" data-result="/result/{html.escape(token)}">'
        "computing… (the result appears here when it is ready)</p>"
        '<div id="deferred-result"></div>'
    )
