"""The FastAPI app: one JSON endpoint and one page per analysis, the lesson, /health.

``create_app`` takes the served model's name, its precision and runtime and the served indexes;
nothing a request carries can name a file: a request names registered things only (the served
indexes by their served names, static models by their registry names). ``guard.Guard`` checks
Host, origin and size before any route runs; every error answer is ``{"error", "status"}``.
The model loads once (``load_contextual`` keeps one instance per name, precision and runtime) and
is shared by the worker threads; every analysis runs on that instance (on ONNX Runtime, the pages
that need attention weights answer with one error line where the model has none: torch, or an
fp32 ONNX model's checked attention graph, give them).
"""

import asyncio
import io
from dataclasses import dataclass, field
from html import escape as html_escape
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from contextlens.core.contextual_models import load_contextual
from contextlens.core.resources import DEFAULT_CONTEXTUAL
from contextlens.reports.figure_registry import interactive_figures, static_figure
from contextlens.web import deferred, files, lesson, tables, two_models, views
from contextlens.web import html as pages
from contextlens.web.guard import HEADERS, Guard
from contextlens.web.page import Page, Served
from contextlens.web.pages import LESSON, PAGES
from contextlens.web.serving import Busy, WorkerPool, error_status, validation_message, without_paths

SECURITY_HEADERS = {name.decode(): value.decode() for name, value in HEADERS}


def error_json(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status, headers=headers)


def create_app(
    model: str = DEFAULT_CONTEXTUAL,
    indexes: dict[str, str] | None = None,
    workers: int = 2,
    queue: int = 64,
    precision: str = "fp32",
    runtime: str = "torch",
    host: str = "127.0.0.1",
    corpora: dict[str, str] | None = None,
    device: str = "cpu",
):
    """The web face for ``model`` at ``precision`` on ``runtime`` on ``device``; ``indexes`` maps a served name to
    an index folder, ``corpora`` a served name to a corpus extraction folder;
    ``host`` is the bound address (a request's ``Host`` must name it or loopback)."""
    loaded = load_contextual(model, precision, runtime, device)
    layers = loaded.num_layers  # the weights loaded just above, once, before the server starts
    heads = getattr(loaded, "num_heads", None)
    label = loaded.backend.name_with(model)
    # no /docs: Swagger UI loads its script from a CDN; the schema itself is at /openapi.json
    app = FastAPI(title="contextlens", version="1", docs_url=None, redoc_url=None)
    pool = WorkerPool(workers, queue)
    served = Served(dict(indexes or {}), dict(corpora or {}), model=model)
    app.state.model, app.state.pool, app.state.indexes = model, pool, served.indexes
    app.state.loaded = loaded

    # the paths whose bare GET only shows a form (a record's first visit "form" runs nothing without a
    # query); every other GET but the cheap files is refused cross-site
    forms = frozenset(f"/{page.name}" for page in PAGES.values() if page.first_visit == "form")
    app.add_middleware(Guard, bound=host, forms=forms)

    _errors(app)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Answers at once, from the event loop, whatever the workers are doing (while ``serve``
        prepares the app, web/preparing.py answers 503 with ``"ready": false`` instead)."""
        return {
            "status": "ok", "ready": True, "model": model, "precision": precision,
            "runtime": loaded.runtime,  # as resolved (runtime="auto" is torch or onnx)
            "device": loaded.backend.device,  # likewise (device="auto" is cpu or cuda:N)
            "busy": pool.pending, "workers": pool.workers,
        }  # fmt: skip

    _files(app)

    @app.get("/", include_in_schema=False)
    async def index() -> HTMLResponse:
        items = "".join(f'<li><a href="/{n}">{n}</a>: {p.blurb or p.title}</li>' for n, p in PAGES.items())
        body = f'<p>Start with <a href="/{LESSON}">the lesson</a>, or open one analysis:</p><ul>{items}</ul>'
        return HTMLResponse(pages.frame("contextlens", body, label))

    server = Server(pool, loaded, served, label, layers, heads)
    for page in PAGES.values():
        _routes(app, page, server)
    _deferred_results(app, server)
    lesson.routes(app, pool, loaded, label, server.waiting)
    app.router.on_shutdown.append(pool.shutdown)
    return app


def _errors(app: FastAPI) -> None:
    """Every error answer in the one shape ``{"error", "status"}``, one line, no server path."""

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_json(422, without_paths(validation_message(exc)))

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:  # 404, 405, a body that does not parse
        return error_json(exc.status_code, without_paths(str(exc.detail))[:300], exc.headers)

    @app.exception_handler(Exception)
    async def _bug(_: Request, exc: Exception) -> JSONResponse:
        # answered by Starlette's outermost middleware, outside the guard: its headers are added here
        return error_json(*error_status(exc), headers=SECURITY_HEADERS)


def _files(app: FastAPI) -> None:
    """The cheap files every page loads (web/files.py; guard.FREE lets any origin GET them)."""
    for path, file in files.FILES.items():
        app.get(path, include_in_schema=False)(_file_route(file))


def _file_route(file: files.File):
    async def serve_file() -> Response:
        return Response(file.content(), media_type=file.media_type, headers={"Cache-Control": file.cache_control})

    return serve_file


@dataclass(frozen=True)
class Server:
    """What every page's routes share: the pool, the served model and what else is served, the
    model's label and its top layer and head count (for the sliders)."""

    pool: WorkerPool
    loaded: Any
    served: Served
    label: str
    layers: int
    heads: int | None
    waiting: deferred.Waiting = field(default_factory=deferred.Waiting)

    async def compute(self, request: type, run, data: dict[str, Any]):
        req = request.model_validate(data)  # ValidationError -> 422 naming the limit
        return await self.pool.run(lambda: run(req, self.loaded, self.served))


def _routes(app: FastAPI, page: Page, server: Server) -> None:
    """A record's routes: its API (``POST /api/<name>``, ``/<name>.json``, ``/<name>.png``), its
    further endpoints and its page."""
    if page.api:
        _api(app, page.name, page.title, f"{page.title}: {page.document()}.", page.request, page.run, server)
        _as_json(app, page, server)
    for endpoint in page.endpoints:
        _api(app, endpoint.name, endpoint.summary, endpoint.doc, endpoint.request, endpoint.run, server)
    if page.figures is not None and page.figures.png is not None:
        _as_png(app, page, server)
    _html_page(app, page, server)


def _api(app: FastAPI, name: str, summary: str, doc: str, request: type, run, server: Server) -> None:
    async def api(body):
        try:
            result = await server.compute(request, run, body.model_dump())
        except (Exception, Busy) as exc:  # noqa: BLE001 - every failure becomes one JSON line
            return error_json(*error_status(exc))
        return JSONResponse(result.to_dict())

    api.__annotations__ = {"body": request}
    api.__doc__ = doc
    app.post(f"/api/{name}", name=f"api_{name}", summary=summary)(api)


def _as_json(app: FastAPI, page: Page, server: Server) -> None:
    async def as_json(request: Request) -> Response:
        try:
            data = pages.query_to_request(page.request, request.query_params)
            result = await server.compute(page.request, page.run, data)
        except Exception as exc:  # noqa: BLE001
            return error_json(*error_status(exc))
        return JSONResponse(result.to_dict())

    app.get(f"/{page.name}.json", include_in_schema=False)(as_json)


def _as_png(app: FastAPI, page: Page, server: Server) -> None:
    async def as_png(request: Request) -> Response:
        try:
            data = pages.query_to_request(page.request, request.query_params)
            result = await server.compute(page.request, page.run, data)
            png = await server.pool.run(lambda: png_bytes(static_figure(result)))
        except Exception as exc:  # noqa: BLE001
            return error_json(*error_status(exc))
        return Response(png, media_type="image/png")

    app.get(f"/{page.name}.png", include_in_schema=False)(as_png)


def _html_page(app: FastAPI, page: Page, server: Server) -> None:
    async def html_page(request: Request) -> HTMLResponse:  # a query longer than guard.MAX_QUERY is refused there
        query = request.query_params
        choices = page.choices_for(server.served)
        note = page.none_served if not all(choices.values()) else ""
        if query:
            values = pages.query_to_request(page.request, query)
            for name, names in choices.items():  # a served field left out: its first served name
                if names:
                    values.setdefault(name, names[0])
        else:  # first visit: a filled-in example, run or not as the record says
            values = page.first_values(server.served)
        if not query and page.first_visit == "form":
            body = note + pages.form(page, values, None, choices, server.layers, server.heads)
            return HTMLResponse(pages.frame(page.title, body, server.label, page.what))
        status, error, block = 200, None, ""

        def rerun(layer: int):  # the same request at another layer (rank: each layer is its own forward)
            return page.run(page.request.model_validate({**values, "layer": layer}), server.loaded, server.served)

        async def work() -> str:
            req = page.request.model_validate(values)
            result = await server.pool.run(lambda: page.run(req, server.loaded, server.served))
            return await server.pool.run(lambda: result_html(page, values, result, rerun, server.layers, req, query))

        task = asyncio.ensure_future(work())
        wait = deferred.SHOW_PAGE_AFTER_S if deferred.in_a_browser(request.headers) else None
        done, _ = await asyncio.wait({task}, timeout=wait)
        if not done:  # long work: the page now, its status line, the result fetched by page.js
            block = deferred.status_block(server.waiting.put(task))
        else:
            try:
                block = task.result()
            except Exception as exc:  # noqa: BLE001 - shown beside the input, never a trace
                status, error = error_status(exc)
        body = note + pages.form(page, values, error, choices, server.layers, server.heads) + block
        return HTMLResponse(pages.frame(page.title, body, server.label, page.what), status_code=status)

    app.get(f"/{page.name}", include_in_schema=False)(html_page)


def _deferred_results(app: FastAPI, server: Server) -> None:
    """``GET /result/<token>``: the result of a page answered before it (web/deferred.py), once."""

    @app.get("/result/{token}", include_in_schema=False)
    async def result(token: str) -> HTMLResponse:
        task = server.waiting.take(token)
        if task is None:
            return HTMLResponse('<p class="error">this result was fetched already or forgotten: reload the page</p>',
                                status_code=404)  # fmt: skip
        try:
            return HTMLResponse(await task)
        except Exception as exc:  # noqa: BLE001 - one line, never a trace
            status, message = error_status(exc)
            return HTMLResponse(f'<p class="error">error: {html_escape(message)}</p>', status_code=status)


def result_html(
    page: Page, values: dict[str, Any], result, rerun=None, layers: int | None = None, req=None, query=None
) -> str:
    """The result under the form: the page's own view (``render``), or every view its sliders may
    show (web/views.py), or its figures; and the numbers beside them (web/tables.py)."""
    link = pages.request_to_query(page.name, values)
    if type(result).__name__ == "TwoModels":  # model_b: each answer as the page shows one, then the pair's

        def answer_view(answer) -> str:
            divs = "".join(f'<div class="figure">{f}</div>' for f in figure_divs(page, answer))
            return divs + tables.numbers(page, answer)

        view = two_models.pair_view(result, answer_view, png_bytes(static_figure(result)))
        return pages.result_block(page, link, view)
    if page.render is not None:
        return pages.result_block(page, link, page.render(result, req, query or {}))
    if page.controls is not None:
        shown = views.page_views(page, result, rerun, layers)
        slots = views.views_script(shown) + views.figure_slots(shown)
        return pages.result_block(page, link, slots + '<p class="dim" id="view-note" aria-live="polite"></p>')
    figures = "".join(f'<div class="figure">{f}</div>' for f in figure_divs(page, result))
    content = figures + tables.numbers(page, result)
    return pages.result_block(page, link, content, None if figures else result.to_dict())


def figure_divs(page: Page, result) -> list[str]:
    if page.figures is None or page.figures.plotly is None:
        return []
    from contextlens.reports.interactive import figure_div

    return [figure_div(f) for f in interactive_figures(result)]


def png_bytes(fig) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)
    return buf.getvalue()


__all__ = ["create_app", "ValidationError"]
