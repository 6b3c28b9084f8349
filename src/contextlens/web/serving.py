"""Serving concerns, apart from the pages: the bounded worker pool and the one-line error documents.

Analyses are CPU-bound and hold the GIL only in parts; they run in a small thread pool so the event
loop (and ``/health``) stays free while a long request runs. Requests beyond the queue bound are
refused at once with 503 rather than piling up. The busy count is the work the threads still hold:
it comes down when a call ends, however it ends, and a request abandoned while queued never runs.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pydantic import ValidationError

from contextlens.errors import ContextlensError, ParameterError

log = logging.getLogger("contextlens.web")
T = TypeVar("T")
MAX_ERRORS = 5  # validation errors named in one message; the rest are counted
MAX_PART = 160  # characters of one field name or message in an error line
# an absolute path of two or more parts (not the tail of a URL or of a relative path)
ABSOLUTE_PATH = re.compile(r"(?<![\w:/.~-])/(?:[^\s/'\"`,;:()]+/)+([^\s/'\"`,;:()]*)")


class Busy(Exception):
    """More requests are waiting than the queue bound allows."""


class WorkerPool:
    """A fixed number of worker threads and a bound on the requests waiting for one."""

    def __init__(self, workers: int = 2, queue: int = 64) -> None:
        _check_count("workers", workers, 1, "threads that run analyses")
        _check_count("queue", queue, 0, "requests that may wait for a thread")
        self.workers, self.queue = workers, queue
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="contextlens-web")
        self._pending = 0
        self._lock = threading.Lock()

    def _release(self) -> None:
        with self._lock:
            self._pending -= 1

    async def run(self, fn: Callable[[], T]) -> T:
        with self._lock:
            if self._pending >= self.workers + self.queue:
                raise Busy(f"server busy: {self._pending} requests in progress (limit {self.workers + self.queue})")
            self._pending += 1

        def call() -> T:
            try:
                return fn()
            except StopIteration as exc:  # an asyncio future cannot take StopIteration: it would hang
                raise RuntimeError(f"StopIteration escaped a request: {exc!r}") from exc
            finally:
                self._release()

        try:
            future = self._executor.submit(call)
        except BaseException:  # the executor is shut down: call never runs
            self._release()
            raise
        # cancelled before it ran (its request went away, or shutdown): call never runs, so release here
        future.add_done_callback(lambda f: f.cancelled() and self._release())
        return await asyncio.wrap_future(future)

    @property
    def pending(self) -> int:
        return self._pending

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def _check_count(name: str, value: object, least: int, what: str) -> None:
    """ParameterError, one line, unless ``value`` is a whole number of at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ParameterError(name, f"must be a whole number of at least {least} ({what}), got {value!r}")


def _short(text: str) -> str:
    return text if len(text) <= MAX_PART else text[: MAX_PART - 1] + "…"


def validation_message(exc: ValidationError | Any) -> str:
    """Pydantic's errors as one short line naming each field and its limit (the first few of many)."""
    errors = exc.errors()
    parts = []
    for err in errors[:MAX_ERRORS]:
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "request"
        parts.append(f"{_short(loc)}: {_short(str(err.get('msg', 'invalid')))}")
    if len(errors) > MAX_ERRORS:
        parts.append(f"and {len(errors) - MAX_ERRORS} more errors")
    return "; ".join(parts)


def without_paths(message: str) -> str:
    """A message for a web client: absolute server paths shortened to their last part."""
    return ABSOLUTE_PATH.sub(lambda m: f"…/{m.group(1)}", message)


def error_status(exc: BaseException) -> tuple[int, str]:
    """HTTP status and one-line message for anything an analysis raised. Bugs never show a trace."""
    if isinstance(exc, ContextlensError):
        return 400, without_paths(str(exc))
    if isinstance(exc, ValidationError):
        return 422, without_paths(validation_message(exc))
    if isinstance(exc, Busy):
        return 503, str(exc)
    log.exception("internal error", exc_info=exc)
    return 500, "internal error (a bug: the server log has the details)"
