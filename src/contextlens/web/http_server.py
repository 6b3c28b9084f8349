"""How uvicorn serves the app: its parser's refusals in the server's shape, and a stop that is said.

A request uvicorn cannot read (a repeated or missing ``Host``, ``Content-Length: -1``, a malformed
request line) is answered before any route or the guard sees it. uvicorn's answer was plain text
("Invalid HTTP request received.") without the security headers; here it is the JSON error every
other refusal has, with the same headers.

A Ctrl-C stops the server gracefully, and uvicorn then raises the signal again so that the process
ends as interrupted; inside ``asyncio.run`` that second SIGINT reached asyncio's own handler and
was lost, so ``serve`` ended with exit 0 and no line. :class:`SignalledServer` remembers the
signals it stopped on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import signal
import sys
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from contextlens.web.guard import HEADERS

UNREADABLE = (
    "the request is not valid HTTP/1.1 (a missing or repeated Host header, a negative or repeated "
    "Content-Length, or a malformed request line); send one Host header and a valid Content-Length"
)


class JsonErrorsH11(H11Protocol):
    """uvicorn's h11 protocol, with its 400 for an unreadable request in ``{"error", "status"}``."""

    def send_400_response(self, msg: str) -> None:
        body = json.dumps({"error": UNREADABLE, "status": 400}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            *HEADERS,
        ]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"), h11.Data(data=body),
                      h11.EndOfMessage()):  # fmt: skip
            self.transport.write(self.conn.send(event))
        self.transport.close()


def uvicorn_options() -> dict[str, Any]:
    """What every uvicorn this project starts is given (``serve``, the tests' servers)."""
    _say_cancelled_requests()
    return {"http": JsonErrorsH11, "log_level": "warning"}


class _CancelledRequests(logging.Filter):
    """uvicorn's "ERROR: Cancel N running task(s), timeout graceful shutdown exceeded" said as what
    happened to those requests (the guard answered each 503)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Cancel %s running task(s)"):
            return True
        count = record.args[0] if isinstance(record.args, tuple) and record.args else "the"
        sys.stderr.write(f"stopping: {count} request(s) still running were answered 503 (the server is quitting)\n")
        return False


def _say_cancelled_requests() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _CancelledRequests) for f in logger.filters):
        logger.addFilter(_CancelledRequests())


def serve_app(app: Any, host: str, port: int, grace: float) -> SignalledServer:
    """Serve ``app`` until a signal stops it (in-flight requests get ``grace`` seconds, then a 503);
    the server says which signals stopped it and whether it had started."""
    server = SignalledServer(
        uvicorn.Config(app, host=host, port=port, timeout_graceful_shutdown=grace, **uvicorn_options())
    )
    with contextlib.suppress(KeyboardInterrupt):  # the SIGINT uvicorn raises again: the caller says it
        server.run()
    return server


class SignalledServer(uvicorn.Server):
    """A uvicorn server that says whether a Ctrl-C (SIGINT) stopped it: :attr:`interrupted`."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.signals: list[int] = []

    async def startup(self, sockets: Any = None) -> None:
        """uvicorn's start; then, once the socket listens, the app's ``listening(server)`` where it has
        one (web/preparing.py: ``serve`` prints its address then, not after the first-use work)."""
        await super().startup(sockets=sockets)
        listening = getattr(self.config.app, "listening", None)
        if self.started and callable(listening):
            listening(self)

    def handle_exit(self, sig: int, frame: Any) -> None:
        self.signals.append(sig)
        super().handle_exit(sig, frame)

    @property
    def interrupted(self) -> bool:
        return signal.SIGINT in self.signals
