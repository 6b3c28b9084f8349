"""Serving concerns, apart from the pages: the bounded worker pool and the one-line error documents.

Analyses are CPU-bound and hold the GIL only in parts; they run in a small thread pool so the event
loop (and ``/health``) stays free while a long request runs. Requests beyond the queue bound are
refused at once with 503 rather than piling up.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pydantic import ValidationError

from contextlens.errors import ContextlensError

log = logging.getLogger("contextlens.web")
T = TypeVar("T")


class Busy(Exception):
    """More requests are waiting than the queue bound allows."""


class WorkerPool:
    """A fixed number of worker threads and a bound on the requests waiting for one."""

    def __init__(self, workers: int = 2, queue: int = 64) -> None:
        self.workers, self.queue = workers, queue
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="contextlens-web")
        self._pending = 0
        self._lock = threading.Lock()

    async def run(self, fn: Callable[[], T]) -> T:
        with self._lock:
            if self._pending >= self.workers + self.queue:
                raise Busy(f"server busy: {self._pending} requests in progress (limit {self.workers + self.queue})")
            self._pending += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        finally:
            with self._lock:
                self._pending -= 1

    @property
    def pending(self) -> int:
        return self._pending

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def validation_message(exc: ValidationError | Any) -> str:
    """Pydantic's errors as one line naming each field and its limit."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "request"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def error_status(exc: BaseException) -> tuple[int, str]:
    """HTTP status and one-line message for anything an analysis raised. Bugs never show a trace."""
    if isinstance(exc, ContextlensError):
        return 400, str(exc)
    if isinstance(exc, ValidationError):
        return 422, validation_message(exc)
    if isinstance(exc, Busy):
        return 503, str(exc)
    log.exception("internal error", exc_info=exc)
    return 500, "internal error (a bug: the server log has the details)"
