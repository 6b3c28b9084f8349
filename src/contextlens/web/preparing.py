"""The server while its first-use work runs: it listens at once and says what it is preparing.

A cold ``serve`` loaded the model (its ONNX export and check, the first time), indexed the built-in
search corpus, built the app, and only then listened and printed its address: a minute or more of
silence on a new machine. :class:`Preparing` is the ASGI app ``serve`` listens with from the
start: it makes the real app in a thread (``make(say)``; ``say`` names each step) and, until that
is done, answers every request itself, behind the same guard: ``/health`` is 503 with
``"ready": false`` and the step (a script that waits for 200 waits for the real app, as before); a
browser's page is a ``#work-status`` line naming the step that reloads itself every
``RELOAD_S`` seconds; the favicon and the pages' scripts (web/files.py) are served as the app serves
them (a browser asks for the favicon at once: it was a 503); any other request is the 503 error
document with ``Retry-After``. Once the
app is made, every request goes to it unchanged.

The work starts when the server starts (ASGI lifespan, as uvicorn and ``with TestClient`` send
it). A client that sends no lifespan (``TestClient(app)`` outside ``with``) makes the app on its
first request, which waits for it. A failure is kept (:attr:`error`) and ``on_failure`` is called
(``serve`` stops the server and reports the error as one line, exit 2 for a bad input).
"""

from __future__ import annotations

import asyncio
import html
import json
import threading
from collections.abc import Callable
from typing import Any

from contextlens.web.files import FILES
from contextlens.web.guard import Guard

RELOAD_S = 2  # how often a waiting page asks again


class Preparing:
    """An ASGI app that is ``make``'s app once made, and says what is being prepared until then."""

    def __init__(
        self,
        make: Callable[[Callable[[str], None]], Any],
        bound: str = "127.0.0.1",
        say: Callable[[str], None] | None = None,
        announce: Callable[[], None] | None = None,
        when_ready: Callable[[Any], None] | None = None,
    ) -> None:
        self._make, self._say, self._announce, self._when_ready = make, say, announce, when_ready
        self.app: Any = None
        self.error: BaseException | None = None
        self.step = "starting"
        self.on_failure: Callable[[], None] | None = None
        self._done = threading.Event()
        self._started = False
        self._lock = threading.Lock()
        self._guarded = Guard(self._answer_waiting, bound=bound)

    def listening(self, server: Any) -> None:
        """The socket listens (web/http_server.py calls this): say where; a failure now stops ``server``."""
        self.on_failure = lambda: setattr(server, "should_exit", True)
        if self._announce is not None:
            self._announce()
        if self.error is not None:
            self.on_failure()

    # --- the work ----------------------------------------------------------------------------

    def start(self) -> None:
        """Begin making the app in a thread (once)."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._prepare, name="contextlens-prepare", daemon=True).start()

    def wait(self, timeout: float | None = None) -> Any:
        """The made app, once made (started here if nobody started it); the error it raised, raised."""
        self.start()
        self._done.wait(timeout)
        if self.error is not None:
            raise self.error
        return self.app

    def step_done(self, step: str) -> None:
        """``make``'s ``say``: the step now running, kept for the pages and passed on."""
        self.step = step
        if self._say is not None:
            self._say(step)

    def _prepare(self) -> None:
        try:
            self.app = self._make(self.step_done)
            if self._when_ready is not None:  # after the app is in place: a request now reaches it
                self._when_ready(self.app)
        except BaseException as exc:  # noqa: BLE001 - kept and reported by the caller, as one line
            self.error = exc
            if self.on_failure is not None:
                self.on_failure()
        finally:
            self._done.set()

    @property
    def ready(self) -> bool:
        return self.app is not None

    @property
    def preparing(self) -> bool:
        """The work has started and not ended (a server stopped now leaves a thread inside it)."""
        return self._started and not self._done.is_set()

    @property
    def state(self) -> Any:
        """The made app's state (waits for it): what callers read of a FastAPI app."""
        return self.wait().state

    # --- ASGI --------------------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self.app is None and not self._started:  # no lifespan came: this request waits for the app
            await asyncio.to_thread(self.wait)
        if self.app is not None:
            await self.app(scope, receive, send)
            return
        await self._guarded(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        """Start the work at startup; at shutdown, stop the made app's workers (its own shutdown)."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                pool = getattr(getattr(self.app, "state", None), "pool", None)
                if pool is not None:
                    pool.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _answer_waiting(self, scope: dict[str, Any], receive, send) -> None:
        """What a request gets while the app is being made (behind the guard)."""
        if scope["type"] != "http":  # no websocket is served
            return
        step = self.step if self.error is None else f"failed: {self.error}"
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        file = FILES.get(scope["path"]) if scope["method"] == "GET" else None
        if file is not None:  # the favicon and the scripts: as the app serves them, not a 503
            await _send(send, 200, file.media_type, await asyncio.to_thread(file.content), file.cache_control)
            return
        if scope["path"] == "/health":
            body, kind = json.dumps({"status": "preparing", "ready": False, "preparing": step}), "application/json"
        elif scope["method"] == "GET" and "text/html" in headers.get("accept", ""):
            body, kind = waiting_page(step), "text/html; charset=utf-8"
        else:
            message = f"the server is preparing ({step}); try again in a few seconds"
            body, kind = json.dumps({"error": message, "status": 503}), "application/json"
        await _send(send, 503, kind, body.encode(), "no-store", retry=True)


async def _send(send, status: int, kind: str, data: bytes, cache: str, retry: bool = False) -> None:
    """One whole answer, behind the guard (its headers are added there)."""
    headers = [(b"content-type", kind.encode()), (b"content-length", str(len(data)).encode()),
               (b"cache-control", cache.encode())]  # fmt: skip
    if retry:
        headers.append((b"retry-after", str(RELOAD_S).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def waiting_page(step: str) -> str:
    """A page that names the step and asks again (no script: a meta refresh), in the site's colours."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="{RELOAD_S}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="/favicon.ico">'  # served while preparing too
        "<title>contextlens: preparing</title></head>"
        '<body style="font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem">'
        "<h1>contextlens is preparing</h1>"
        f'<p id="work-status" role="status" aria-live="polite">preparing: {html.escape(step)}…</p>'
        f"<p>This page opens by itself when the server is ready (it asks again every {RELOAD_S} s); a first "
        "start on a machine prepares the model once, later starts are quick.</p></body></html>"
    )
