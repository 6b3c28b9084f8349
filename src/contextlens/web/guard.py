"""The server's doors, checked before any route runs: who may ask, from where, and how much.

A page on another site (or a ``file://`` page) can make a browser send requests to this local port:
a plain ``<img src>`` GET, a form POST, or, through DNS rebinding, requests under a name of its own.
So every request must name this server in ``Host`` (a loopback name or the bound address); a request
that costs or changes anything must come from this origin (no foreign ``Origin``, no
``Sec-Fetch-Site: cross-site``/``same-site``). What costs is decided by an allow-list, not by the
look of a URL: any POST, and any GET but the cheap files (``FREE``) and the empty forms the app
names (``forms``: a page with no query shows its example unrun); so a route that runs a model on a
bare GET (``/model-view``, ``/lesson``) is refused cross-site without knowing it. A body is at most
``MAX_BODY`` bytes, refused before it is parsed; a query at most ``MAX_QUERY`` characters. Every
answer carries nosniff, a content security policy and frame-ancestors 'none'.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

MAX_BODY = 64 * 1024  # bytes of request body: the largest valid request is about 10 KiB
MAX_QUERY = 20_000  # characters of URL query
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD = frozenset({"", "0.0.0.0", "::"})
# cheap, whatever the query: any origin may GET them
FREE = frozenset({"/", "/health", "/static/plotly.js", "/static/page.js", "/static/fit.js", "/favicon.ico",
                  "/openapi.json"})  # fmt: skip
STOPPING = "the server stopped before this answer was ready (it was asked to quit); start it again and retry"
CSP = (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", CSP.encode()),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def host_names(bound: str) -> frozenset[str]:
    """The names a request may give in ``Host``: loopback names and the bound address; when bound to
    every interface, also this machine's name (IP literals are accepted then: they cannot be rebound)."""
    names = set(LOOPBACK)
    bound = bound.strip("[]").lower()
    if bound not in WILDCARD:
        names.add(bound)
    else:
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    return frozenset(names)


def host_of(header: str) -> str:
    """The name in a ``Host`` header, without the port: ``[::1]:8765`` -> ``::1``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    name = header.rsplit(":", 1)[0] if header.count(":") == 1 else header
    return name.rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def costly(method: str, path: str, query: bytes, forms: frozenset[str] = frozenset()) -> bool:
    """Whether a request may run a model or change anything: all but a GET of a ``FREE`` file, or a
    GET of one of the empty ``forms`` (a path that, with no query, only shows its form)."""
    if method not in ("GET", "HEAD"):
        return True
    if path in FREE:
        return False
    return bool(query) or path not in forms


class Guard:
    """ASGI middleware: refuses what the module docstring lists, adds the headers to every answer."""

    def __init__(self, app: ASGIApp, bound: str = "127.0.0.1", forms: frozenset[str] = frozenset()) -> None:
        self.app, self.bound, self.forms = app, bound, frozenset(forms)
        self.hosts = host_names(bound)

    async def __call__(self, scope: Scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        started: list[bool] = []

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.append(True)
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *(h for h in HEADERS if h[0] not in present)]
            await send(message)

        refusal = self.refusal(scope)
        body: list[Message] = []
        if refusal is None:
            refusal = await self._read_body(scope, receive, body)
        if refusal is not None:
            await _answer(send_with_headers, *refusal)
            return
        if body and body[-1]["type"] == "http.disconnect":  # the client left before its body ended
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(m.get("body", b"") for m in body), "more_body": False}
            return await receive()

        try:
            await self.app(scope, replay, send_with_headers)
        except asyncio.CancelledError:
            # the server is stopping (SIGTERM, Ctrl-C) and this request outlived the grace period:
            # uvicorn cancels it, which printed a traceback per request and answered a plain-text 500
            if not started:
                with contextlib.suppress(Exception):
                    await _answer(send_with_headers, 503, STOPPING)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """Status and message for a request refused on its headers alone, else None."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        name = host_of(host)
        wildcard = self.bound.strip("[]") in WILDCARD
        if name not in self.hosts and not (wildcard and _is_ip(name)):
            return 400, (
                f"this server answers only to {', '.join(sorted(self.hosts))} in the Host header "
                f"(got {host[:100]!r}); open it as http://localhost:PORT/"
            )
        if len(scope.get("query_string", b"")) > MAX_QUERY:
            return 413, f"the URL query is longer than {MAX_QUERY} characters; shorten the inputs"
        if costly(scope["method"], scope["path"], scope.get("query_string", b""), self.forms):
            site = headers.get("sec-fetch-site", "").lower()
            origin = headers.get("origin")
            served = f"{scope.get('scheme', 'http')}://{host.lower()}"
            if site in ("cross-site", "same-site") or (origin is not None and origin.lower() != served):
                return 403, (
                    "cross-origin request refused: this server runs analyses only for its own pages "
                    f"({served}); open the page there, or call the API without a browser"
                )
        try:
            if int(headers.get("content-length", "0")) > MAX_BODY:
                return 413, f"the request body is larger than {MAX_BODY // 1024} KiB"
        except ValueError:
            return 400, "the Content-Length header is not a number"
        return None

    async def _read_body(self, scope: Scope, receive, into: list[Message]) -> tuple[int, str] | None:
        """Read the whole body (at most ``MAX_BODY`` bytes) before the app sees it."""
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                into.append(message)
                return None
            into.append(message)
            size += len(message.get("body", b""))
            if size > MAX_BODY:
                return 413, f"the request body is larger than {MAX_BODY // 1024} KiB"
            if not message.get("more_body", False):
                return None


async def _answer(send, status: int, message: str) -> None:
    """One error document, the shape every error answer has."""
    body = json.dumps({"error": message, "status": status}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
