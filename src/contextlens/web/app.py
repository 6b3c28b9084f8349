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

import io
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from contextlens.core.contextual_models import load_contextual
from contextlens.reports.figure_registry import interactive_figures, static_figure
from contextlens.web import html as pages
from contextlens.web import lesson, model_view, sense_map, tables, views
from contextlens.web.guard import HEADERS, Guard
from contextlens.web.runs import PAGES, Page
from contextlens.web.serving import Busy, WorkerPool, error_status, validation_message, without_paths


@lru_cache(maxsize=1)
def plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


STATIC = Path(__file__).with_name("static")


@lru_cache(maxsize=1)
def page_js() -> str:
    return (STATIC / "page.js").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def fit_js() -> str:
    """The narrow-screen fitting of a figure, shared with the reports (reports/fit.js)."""
    from contextlens.reports.plot_style import FIT_JS

    return FIT_JS.read_text(encoding="utf-8")


SECURITY_HEADERS = {name.decode(): value.decode() for name, value in HEADERS}


def error_json(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status, headers=headers)


def create_app(
    model: str = "mpnet",
    indexes: dict[str, str] | None = None,
    workers: int = 2,
    queue: int = 64,
    precision: str = "fp32",
    runtime: str = "torch",
    host: str = "127.0.0.1",
    corpora: dict[str, str] | None = None,
):
    """The web face for ``model`` at ``precision`` on ``runtime``; ``indexes`` maps a served name to
    an index folder, ``corpora`` a served name to a corpus extraction folder;
    ``host`` is the bound address (a request's ``Host`` must name it or loopback)."""
    loaded = load_contextual(model, precision, runtime)
    layers = loaded.num_layers  # the weights loaded just above, once, before the server starts
    heads = getattr(loaded, "num_heads", None)
    label = model if loaded.backend.is_reference else f"{model} ({loaded.backend.label})"
    # no /docs: Swagger UI loads its script from a CDN; the schema itself is at /openapi.json
    app = FastAPI(title="contextlens", version="1", docs_url=None, redoc_url=None)
    pool = WorkerPool(workers, queue)
    served = dict(indexes or {})
    app.state.model, app.state.pool, app.state.indexes = model, pool, served
    app.state.loaded = loaded

    # the paths whose bare GET only shows a form (html_page and sense_map.page run nothing without a
    # query); every other GET but the cheap files is refused cross-site
    forms = frozenset({*(f"/{name}" for name in PAGES), "/sense-map"})
    app.add_middleware(Guard, bound=host, forms=forms)

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

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """Answers at once, from the event loop, whatever the workers are doing."""
        return {
            "status": "ok",
            "model": model,
            "precision": precision,
            "runtime": loaded.runtime,  # as resolved (runtime="auto" is torch or onnx)
            "busy": pool.pending,
            "workers": pool.workers,
        }

    @app.get("/static/plotly.js", include_in_schema=False)
    async def plotly() -> Response:
        return Response(plotly_js(), media_type="text/javascript", headers={"Cache-Control": "max-age=86400"})

    @app.get("/static/page.js", include_in_schema=False)
    async def script() -> Response:
        return Response(page_js(), media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    @app.get("/static/fit.js", include_in_schema=False)
    async def fit() -> Response:
        return Response(fit_js(), media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return Response(favicon_ico(), media_type="image/x-icon", headers={"Cache-Control": "max-age=86400"})

    @app.get("/", include_in_schema=False)
    async def index() -> HTMLResponse:
        items = "".join(f'<li><a href="/{n}">{n}</a>: {p.title}</li>' for n, p in PAGES.items())
        items += '<li><a href="/model-view">model-view</a>: every attention head of every layer at once</li>'
        items += '<li><a href="/sense-map">sense-map</a>: one word across a served corpus, coloured by sense</li>'
        body = f'<p>Start with <a href="/lesson">the lesson</a>, or open one analysis:</p><ul>{items}</ul>'
        return HTMLResponse(pages.frame("contextlens", body, label))

    async def compute(page: Page, data: dict[str, Any]):
        req = page.request.model_validate(data)  # ValidationError -> 422 naming the limit
        return await pool.run(lambda: page.run(req, loaded, served))

    for page in PAGES.values():
        _routes(app, page, compute, label, served, layers, heads)
    lesson.routes(app, pool, loaded, label)
    model_view.routes(app, pool, loaded, label)
    sense_map.routes(app, pool, loaded, label, dict(corpora or {}))
    app.router.on_shutdown.append(pool.shutdown)
    return app


def _routes(
    app: FastAPI, page: Page, compute, model: str, served: dict[str, str], layers: int, heads: int | None
) -> None:
    async def api(body):
        try:
            result = await compute(page, body.model_dump())
        except (Exception, Busy) as exc:  # noqa: BLE001 - every failure becomes one JSON line
            return error_json(*error_status(exc))
        return JSONResponse(result.to_dict())

    api.__annotations__ = {"body": page.request}
    api.__doc__ = f"{page.title}: the document `contextlens {page.name} --json` prints for the same inputs."
    app.post(f"/api/{page.name}", name=f"api_{page.name}", summary=page.title)(api)

    async def as_json(request: Request) -> Response:
        try:
            result = await compute(page, pages.query_to_request(page.request, request.query_params))
        except Exception as exc:  # noqa: BLE001
            return error_json(*error_status(exc))
        return JSONResponse(result.to_dict())

    app.get(f"/{page.name}.json", include_in_schema=False)(as_json)

    if page.figures is not None and page.figures.png is not None:

        async def as_png(request: Request) -> Response:
            try:
                result = await compute(page, pages.query_to_request(page.request, request.query_params))
                data = await app.state.pool.run(lambda: png_bytes(static_figure(result)))
            except Exception as exc:  # noqa: BLE001
                return error_json(*error_status(exc))
            return Response(data, media_type="image/png")

        app.get(f"/{page.name}.png", include_in_schema=False)(as_png)

    async def html_page(request: Request) -> HTMLResponse:  # a query longer than guard.MAX_QUERY is refused there
        query = request.query_params
        values = pages.query_to_request(page.request, query)
        extra = {"index": sorted(served)} if page.name == "search" else None
        note = (
            '<p class="error">No index is served: build one with '
            "<code>contextlens index build DOCS --out FOLDER</code> and start "
            "<code>contextlens serve --index NAME=FOLDER</code>.</p>"
            if page.name == "search" and not served
            else ""
        )
        if not query:  # first visit: a filled-in example, not run yet
            example = dict(pages.EXAMPLES.get(page.name, {}))
            if page.name == "search" and served:
                example["index"] = sorted(served)[0]
            body = note + pages.form(page.name, example, None, extra, layers, heads)
            return HTMLResponse(pages.frame(page.title, body, model, pages.WHAT.get(page.name, "")))
        status, error, block = 200, None, ""

        def rerun(layer: int):  # the same request at another layer (rank: each layer is its own forward)
            req = page.request.model_validate({**values, "layer": layer})
            return page.run(req, app.state.loaded, served)

        try:
            result = await compute(page, values)
            block = await app.state.pool.run(lambda: result_html(page, values, result, rerun, layers))
        except Exception as exc:  # noqa: BLE001 - shown beside the input, never a trace
            status, error = error_status(exc)
        body = note + pages.form(page.name, values, error, extra, layers, heads) + block
        return HTMLResponse(pages.frame(page.title, body, model, pages.WHAT.get(page.name, "")), status_code=status)

    app.get(f"/{page.name}", include_in_schema=False)(html_page)


def result_html(page: Page, values: dict[str, Any], result, rerun=None, layers: int | None = None) -> str:
    """The result under the form: every view the sliders may show (web/views.py) or the figures,
    and the numbers beside them (web/tables.py)."""
    query = pages.request_to_query(page.name, values)
    if views.has_views(page.name):
        shown = views.page_views(page.name, result, rerun, layers)
        slots = views.views_script(shown) + views.figure_slots(shown)
        return pages.result_block(page.name, query, [], None, views=slots)
    numbers = tables.numbers(page.name, result)
    return pages.result_block(page.name, query, figure_divs(page, result), result.to_dict(), numbers)


@lru_cache(maxsize=1)
def favicon_ico() -> bytes:
    """A 32x32 lens drawn here (no file, no network): a PNG inside an ICO container."""
    import struct
    import zlib

    size = 32
    rows = []
    for y in range(size):
        row = bytearray([0])
        for x in range(size):
            d = ((x - 13.5) ** 2 + (y - 13.5) ** 2) ** 0.5
            handle = x > 20 and y > 20 and abs(x - y) < 3
            ring = 7.5 <= d <= 11.5
            r, g, b, a = (29, 78, 216, 255) if ring or handle else ((219, 234, 254, 255) if d < 7.5 else (0, 0, 0, 0))
            row += bytes([r, g, b, a])
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b"")
    header = struct.pack("<HHH", 0, 1, 1) + struct.pack("<BBBBHHII", size, size, 0, 0, 1, 32, len(png), 22)
    return header + png


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
