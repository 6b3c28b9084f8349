"""`contextlens serve`: the web face on a local port. Parses options and starts the app, nothing else."""

from __future__ import annotations

from typing import Annotated

import typer

from contextlens.cli import app
from contextlens.cli.common import (
    DEFAULT_MODEL,
    ModelOpt,
    PrecisionOpt,
    RuntimeOpt,
    ThreadsOpt,
    contextual_option,
    err_console,
)
from contextlens.errors import InputError

LOCAL = "127.0.0.1"


def parse_indexes(specs: list[str]) -> dict[str, str]:
    """``NAME=FOLDER`` pairs; the folders are checked now, so the page never opens a path a user types."""
    from contextlens.analyses.search.index import read_manifest

    served: dict[str, str] = {}
    for spec in specs:
        name, sep, folder = spec.partition("=")
        if not sep or not name.strip() or not folder.strip():
            raise InputError(f"--index {spec!r} is not NAME=FOLDER (e.g. --index docs=./my-index)")
        read_manifest(folder.strip())  # a missing or broken index fails here, with its own message
        served[name.strip()] = folder.strip()
    return served


@app.command("serve")
def serve_cmd(
    port: Annotated[int, typer.Option("--port", help="Port to listen on.", min=1, max=65535)] = 8765,
    host: Annotated[str, typer.Option("--host", help="Address to bind (default: this machine only).")] = LOCAL,
    model: ModelOpt = DEFAULT_MODEL,
    index: Annotated[
        list[str] | None, typer.Option("--index", help="Serve an index built with 'index build': NAME=FOLDER.")
    ] = None,
    workers: Annotated[int, typer.Option("--workers", help="Analyses run at once.", min=1, max=16)] = 2,
    precision: PrecisionOpt = "fp32",
    runtime: RuntimeOpt = "torch",
    threads: ThreadsOpt = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the lesson in the default browser.")] = False,
) -> None:
    """A local web page: the lesson and every analysis, offline, with a JSON API under /api."""
    import uvicorn

    from contextlens.web.app import create_app

    served = parse_indexes(list(index or []))
    loaded = contextual_option(model, precision, threads, runtime)  # a bad model/precision/runtime fails here
    if host not in (LOCAL, "localhost", "::1"):
        err_console.print(
            f"[yellow]warning: serving on {host}: other machines can reach this page; "
            f"use --host {LOCAL} to keep it local[/yellow]"
        )
    url = f"http://{'localhost' if host in (LOCAL, '0.0.0.0', '::') else host}:{port}/lesson"
    served_as = model if loaded.backend == "fp32" else f"{model} at {loaded.backend}"
    err_console.print(f"contextlens serving {served_as} on {url} (Ctrl-C stops)")
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    web_app = create_app(model, served, workers=workers, precision=precision, runtime=runtime)
    uvicorn.run(web_app, host=host, port=port, log_level="warning")
