"""The HTTP parser's own refusals in the server's shape: a request uvicorn cannot read (a repeated
or missing ``Host``, ``Content-Length: -1``, a malformed request line) is answered before any route
or the guard sees it. uvicorn's answer was plain text ("Invalid HTTP request received.") without
the security headers; here it is the JSON error every other refusal has, with the same headers.
"""

from __future__ import annotations

import json
from typing import Any

import h11
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
    return {"http": JsonErrorsH11, "log_level": "warning"}
