"""`contextlens serve`: the web face on a local port. Parses options and starts the app, nothing else."""

from __future__ import annotations

import errno
import os
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

import typer

from contextlens.cli.common import (
    DEFAULT_MODEL,
    DeviceOpt,
    ModelOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    contextual_option,
    err_console,
)
from contextlens.cli.registry import app
from contextlens.errors import InputError

LOCAL = "127.0.0.1"
GRACE = 1  # seconds in-flight requests get after SIGTERM or the first Ctrl-C, then they are cancelled


def parse_indexes(specs: list[str]) -> dict[str, str]:
    """``NAME=FOLDER`` pairs; each index (FAISS or pgvector, as its manifest says) is loaded and
    verified now (checksums included; a pgvector index's table in its database), so a damaged one
    fails at start and the page never opens a path a user types."""
    from contextlens.analyses.search.folders import load_folder

    # a missing, broken or damaged index fails in its load, with its own message
    return _named_folders(specs, "--index", "FOLDER", "docs=./my-index", "index", load_folder)


def parse_corpora(specs: list[str]) -> dict[str, str]:
    """``NAME=DIR`` pairs of finished extraction folders (``corpus extract``), each checked now
    against its manifest, shards and vectors included (a zero-byte or missing shard fails at
    start): a page names a corpus by NAME only (a plain name: it goes into the page's URLs) and
    never opens a path a user types."""
    import re

    from contextlens.analyses.corpus.folder_check import checked_folder

    for spec in specs:
        name, sep, _ = spec.partition("=")
        if sep and name.strip() and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name.strip()):
            raise InputError(
                f"--corpus name {name.strip()!r} is not a plain name; use letters, digits, '.', '_' and '-' "
                "(e.g. --corpus wiki=./bank-extraction)"
            )
    # not an extraction, unfinished, or not what its manifest says: its own one-line message
    return _named_folders(specs, "--corpus", "DIR", "wiki=./bank-extraction", "corpus", checked_folder)


def _named_folders(
    specs: list[str], flag: str, placeholder: str, example: str, what: str, check: Callable[[str], object]
) -> dict[str, str]:
    """``NAME=FOLDER`` pairs of one option, each name once, each folder passed through ``check``."""
    served: dict[str, str] = {}
    for spec in specs:
        name, sep, folder = spec.partition("=")
        if not sep or not name.strip() or not folder.strip():
            raise InputError(f"{flag} {spec!r} is not NAME={placeholder} (e.g. {flag} {example})")
        if name.strip() in served:
            raise InputError(f"{flag} name {name.strip()!r} is given twice; give each served {what} its own name")
        check(folder.strip())
        served[name.strip()] = folder.strip()
    return served


def check_address(host: str, port: int) -> None:
    """Fail now, in one line, where uvicorn would print its own ``ERROR:`` line: a host that does not
    resolve or is not this machine's, or a port in use."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        raise InputError(f"--host {host!r} is not an address to listen on ({exc}); use {LOCAL} or 0.0.0.0") from exc
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                message = f"port {port} on {host} is in use (another server?); pick another with --port"
                raise InputError(message) from exc
            raise InputError(f"cannot listen on {host}:{port} ({exc.strerror}); use --host {LOCAL}") from exc


def exit_now(interrupted: bool) -> None:
    """Leave at once: a worker thread still inside an analysis would otherwise hold the interpreter's exit."""
    if interrupted:
        sys.stderr.write("interrupted\n")
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(130 if interrupted else 0)


IndexOpt = Annotated[
    list[str] | None, typer.Option("--index", help="Serve an index built with 'index build': NAME=FOLDER.")
]
CorpusOpt = Annotated[
    list[str] | None,
    typer.Option("--corpus", help="Serve a 'corpus extract' folder for the sense map: NAME=DIR."),
]


@app.command("serve")
def serve_cmd(
    port: Annotated[int, typer.Option("--port", help="Port to listen on.", min=1, max=65535)] = 8765,
    host: Annotated[str, typer.Option("--host", help="Address to bind (default: this machine only).")] = LOCAL,
    model: ModelOpt = DEFAULT_MODEL,
    index: IndexOpt = None,
    corpus: CorpusOpt = None,
    workers: Annotated[int, typer.Option("--workers", help="Analyses run at once.", min=1, max=16)] = 2,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "auto",
    device: DeviceOpt = "auto",
    threads: ThreadsOpt = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the lesson in the default browser.")] = False,
) -> None:
    """A local web page: the lesson and every analysis, offline, with a JSON API under /api."""
    from contextlens.cli.common import check_model, model_choice
    from contextlens.web.preparing import Preparing

    check_address(host, port)
    check_model(model, precision, runtime, device=device)  # a bad model/precision/runtime fails before the port opens
    device = model_choice(model, precision, runtime, device=device).backend.device  # a GPU that is not there too
    served = parse_indexes(list(index or []))
    corpora = parse_corpora(list(corpus or []))
    if host not in (LOCAL, "localhost", "::1"):
        err_console.print(
            f"[yellow]warning: serving on {host}: other machines can reach this page; "
            f"use --host {LOCAL} to keep it local[/yellow]"
        )
    url = f"http://{'localhost' if host in (LOCAL, '0.0.0.0', '::') else host}:{port}/lesson"

    def make(say: Callable[[str], None]):
        return prepared_app(Options(model, precision, runtime, threads, workers, host, device), served, corpora, say)

    def announce() -> None:
        line = f"contextlens serving {model} on {url} (Ctrl-C stops; the page says when it is ready)"
        err_console.print(line, soft_wrap=True)
        if open_browser:
            import threading
            import webbrowser

            threading.Timer(1.0, webbrowser.open, args=(url,)).start()

    def say(step: str) -> None:
        err_console.print(f"preparing: {step}…", soft_wrap=True)

    web_app = Preparing(make, bound=host, say=say, announce=announce, when_ready=say_ready)
    _serve(web_app, host, port)


@dataclass(frozen=True)
class Options:
    """What the served app is made of, besides what it serves."""

    model: str
    precision: str
    runtime: str
    threads: int | None
    workers: int
    host: str
    device: str = "cpu"  # resolved before the port opened: cpu or cuda:N


def prepared_app(options: Options, served: dict[str, str], corpora: dict[str, str], say: Callable[[str], None]):
    """The first-use work, after the socket listens (web/preparing.py): the model loaded (its ONNX
    graph exported and checked, the first time), the built-in index made where none is named, the app."""
    from contextlens.web.app import create_app

    say(f"loading {options.model} ({options.precision})")
    loaded = contextual_option(
        options.model, options.precision, options.threads, options.runtime, device=options.device
    )
    if not served:  # kind (c) of the lesson needs an index to search: a small built-in one
        from contextlens.analyses.search import builtin_index

        say(f"indexing {builtin_index.WHAT} with {options.model} (once per model)")
        served = {builtin_index.NAME: str(builtin_index.lee_index(loaded))}
        err_console.print(
            f"search: the built-in index '{builtin_index.NAME}', {builtin_index.WHAT} "
            "(--index NAME=FOLDER serves your own instead)", soft_wrap=True,
        )  # fmt: skip
    say("starting the pages")
    app = create_app(options.model, served, workers=options.workers, precision=options.precision,
                     runtime=loaded.runtime, host=options.host, corpora=corpora,
                     device=loaded.backend.device)  # fmt: skip
    return app


def say_ready(app) -> None:
    """The line that says the pages answer (once the app is in place: web/preparing.py)."""
    model, backend = app.state.model, app.state.loaded.backend
    served_as = model if backend.is_reference else f"{model} at {backend.label}"
    err_console.print(f"ready: {served_as} (the pages answer now)", soft_wrap=True)


def _serve(web_app, host: str, port: int) -> None:
    """Serve until stopped; a failed preparation is its own one-line error (exit 2 for a bad input)."""
    from contextlens.web.http_server import serve_app

    server = None
    try:
        server = serve_app(web_app, host, port, GRACE)
    finally:
        ctrl_c = sys.exc_info()[0] is KeyboardInterrupt or (server is not None and server.interrupted)
        if web_app.preparing or (web_app.ready and web_app.app.state.pool.pending):
            exit_now(ctrl_c)  # a thread still loading or analysing would hold the exit
    if ctrl_c:
        raise KeyboardInterrupt  # "interrupted", exit 130, as every command stopped by Ctrl-C
    if web_app.error is not None:
        raise web_app.error
    if not server.started:
        raise InputError(f"the server could not start on {host}:{port}; see the lines above")
