"""The web face's doors: a request names registered things only, the server answers only to its own
names and origin, bodies are bounded, every error is ``{"error", "status"}`` with no server path, and
every answer carries nosniff, a CSP and frame-ancestors. User strings reach figures escaped."""

from __future__ import annotations

import asyncio
import json
import pickle
import threading

import pytest
from fastapi.testclient import TestClient

from contextlens.web.app import create_app
from contextlens.web.guard import HEADERS, MAX_BODY

BANK = ["I sat on the river [bank].", "I opened a [bank] account."]
LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def app(minilm):
    return create_app("minilm", {"docs": "/nonexistent/abs/index-folder"})


@pytest.fixture(scope="module")
def client(app) -> TestClient:
    return TestClient(app, base_url=LOCAL)


class _Boom:
    """Unpickling this creates ``path``: proof that a request made the server unpickle a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


@pytest.fixture()
def hostile_files(tmp_path):
    marker = tmp_path / "unpickled-marker"
    pkl = tmp_path / "evil.kv"
    pkl.write_bytes(pickle.dumps(_Boom(str(marker))))
    glove = tmp_path / "glove.txt"
    glove.write_text("SECRETTOKEN 0.1 0.2\nbank 0.3 0.4\n")
    names = [str(pkl), f"gensim:{pkl}", f"glove:{glove}", str(glove), f"word2vec:{glove}", f"fasttext:{glove}",
             "/etc/passwd", "../../etc/passwd", "~/.bashrc", "mpnet"]  # fmt: skip
    return marker, names


STATIC_BODIES = {
    "compare": {"sentences": BANK},
    "probe": {"sentences": BANK, "anchors": ["shore"]},
    "neighbors": {"word": "bank"},
    "rank": {"top": 3},
}


def _refused_without_leak(response, tmp_path) -> None:
    assert response.status_code == 400, response.text
    doc = response.json()
    assert set(doc) == {"error", "status"} and doc["status"] == 400
    assert "glove-50d" in doc["error"] and "SECRETTOKEN" not in doc["error"] and "root:" not in doc["error"]
    assert str(tmp_path) not in doc["error"]


@pytest.mark.parametrize("name", sorted(STATIC_BODIES))
def test_static_names_a_registered_model_only_never_a_file(client, hostile_files, tmp_path, name):
    marker, names = hostile_files
    for static in names:
        _refused_without_leak(client.post(f"/api/{name}", json={**STATIC_BODIES[name], "static": static}), tmp_path)
    assert not marker.exists(), "a request made the server unpickle a file"


def test_the_static_query_parameter_of_pages_json_and_png_is_refused_too(client, hostile_files, tmp_path):
    marker, names = hostile_files
    query = [("s", BANK[0]), ("s", BANK[1])]
    for static in names[:4]:
        for suffix in (".json", ".png"):
            _refused_without_leak(client.get(f"/compare{suffix}", params=[*query, ("static", static)]), tmp_path)
        page = client.get("/neighbors", params=[("word", "bank"), ("static", static)])
        error = page.text.split('id="error"', 1)[1].split("</div>", 1)[0]  # the form echoes the input itself
        assert page.status_code == 400 and "glove-50d" in error and "SECRETTOKEN" not in page.text
        assert str(tmp_path) not in error
    assert not marker.exists()
    assert client.post("/api/neighbors", json={"word": "bank", "static": "glove-50d", "top": 2}).status_code == 200


def test_the_host_header_must_name_this_server(client):
    for host in ("evil.example", "evil.example:8765", "127.0.0.1.nip.io", "localhost.evil.example"):
        response = client.get("/health", headers={"host": host})
        assert response.status_code == 400 and set(response.json()) == {"error", "status"}, host
        assert "Host" in response.json()["error"]
    for host in ("localhost:8765", "127.0.0.1", "[::1]:9000", "LOCALHOST"):
        assert client.get("/health", headers={"host": host}).status_code == 200, host


def test_a_cross_origin_request_never_makes_the_server_compute(client, app, monkeypatch):
    from contextlens.analyses.lesson import divergence

    calls = []
    real = divergence.compare
    monkeypatch.setattr(divergence, "compare", lambda *a, **k: calls.append(1) or real(*a, **k))
    query = [("s", BANK[0]), ("s", BANK[1])]
    foreign = [{"origin": "https://evil.example"}, {"origin": "null"}, {"sec-fetch-site": "cross-site"},
               {"sec-fetch-site": "same-site"}, {"origin": "http://localhost:3000"}]  # fmt: skip
    for headers in foreign:
        for response in (
            client.post("/api/compare", json={"sentences": BANK}, headers=headers),
            client.get("/compare.png", params=query, headers=headers),  # an <img src> on another site
            client.get("/compare.json", params=query, headers=headers),
            client.get("/compare", params=query, headers=headers),
            client.get("/rank.json", headers=headers),  # all defaults: would run a model
            client.get("/lesson", headers=headers),
        ):
            assert response.status_code == 403, (headers, response.request.url)
            assert set(response.json()) == {"error", "status"} and "cross-origin" in response.json()["error"]
    assert calls == []
    assert client.get("/health", headers=foreign[2]).status_code == 200  # cheap: free from anywhere
    assert client.get("/compare", headers=foreign[2]).status_code == 200  # the empty form runs nothing
    same = {"origin": LOCAL, "sec-fetch-site": "same-origin"}
    assert client.post("/api/compare", json={"sentences": BANK}, headers=same).status_code == 200
    assert client.get("/compare.json", params=query, headers={"sec-fetch-site": "none"}).status_code == 200
    assert calls == [1, 1]


def test_every_route_that_computes_is_refused_cross_site_query_or_not(client, app, monkeypatch):
    """Walk every route the app has: a cross-site request either is refused (403) or runs nothing
    (no work reaches the pool). ``/model-view`` with no query used to run attention for any page."""
    from fastapi.routing import APIRoute
    from starlette.routing import Route

    ran: list[str] = []
    real = app.state.pool.run
    monkeypatch.setattr(app.state.pool, "run", lambda fn, *a, **k: ran.append("run") or real(fn, *a, **k))
    cross = {"sec-fetch-site": "cross-site"}
    walked = []
    for route in app.routes:
        if not isinstance(route, APIRoute | Route) or "{" in route.path:
            continue
        for method in sorted(route.methods or ()):
            for query in ("", "?sentence=The+river+%5Bbank%5D.&word=bank"):
                if method == "HEAD" and "GET" in route.methods:
                    continue  # the GET's own door
                ran.clear()
                response = client.request(method, route.path + query, headers=cross, json=None)
                walked.append((method, route.path + query))
                if response.status_code == 403:
                    assert "cross-origin" in response.json()["error"], route.path
                else:  # a free file or an empty form: shown (every page's example form renders), nothing run
                    assert method in ("GET", "HEAD") and ran == [], (method, route.path, query, response.status_code)
                    assert response.status_code == 200, (method, route.path, query, response.text[:200])
    paths = {path for _, path in walked}
    assert {"/model-view", "/lesson", "/sense-map", "/compare.json", "/api/compare"} <= paths
    assert client.get("/model-view", headers=cross).status_code == 403
    assert client.get("/model-view", headers={"sec-fetch-site": "same-origin"}).status_code == 200  # its own page


def test_every_answer_carries_the_security_headers(client):
    for response in (
        client.get("/compare"),
        client.get("/health"),
        client.get("/no-such-page"),
        client.post("/api/compare", content=b"x" * (MAX_BODY + 1), headers={"content-type": "application/json"}),
        client.get("/health", headers={"host": "evil.example"}),
    ):
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY"
        csp = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp


def test_a_large_body_is_413_in_the_error_shape_before_it_is_parsed(client):
    big = json.dumps({"sentences": ["x" * 100_000]}).encode()
    response = client.post("/api/compare", content=big, headers={"content-type": "application/json"})
    assert response.status_code == 413 and response.json() == {
        "error": f"the request body is larger than {MAX_BODY // 1024} KiB", "status": 413}  # fmt: skip

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(20):
            yield b" " * 8192

    chunked = client.post("/api/compare", content=chunks(), headers={"content-type": "application/json"})
    assert chunked.status_code == 413 and chunked.json()["status"] == 413
    long_url = client.get("/compare.json", params={"s": "x" * 30_000})
    assert long_url.status_code == 413 and set(long_url.json()) == {"error", "status"}


def test_many_unknown_keys_give_a_short_message(client):
    from contextlens.web.runs import CompareRequest
    from contextlens.web.serving import validation_message

    with pytest.raises(Exception) as many:
        CompareRequest.model_validate({"sentences": BANK, **{f"k{i}": 1 for i in range(200_000)}})
    message = validation_message(many.value)
    assert len(message) < 1000 and "199995 more errors" in message
    body = {"sentences": BANK, **{f"key{i}": 1 for i in range(5000)}}  # under the body limit
    response = client.post("/api/compare", json=body)
    assert response.status_code == 422 and len(response.text) < 1000
    one_long = client.post("/api/compare", json={"sentences": BANK, "k" * 50_000: 1})
    assert one_long.status_code == 422 and len(one_long.text) < 1000


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("get", "/no-such-page", {}, 404),
        ("get", "/api/compare", {}, 405),
        ("post", "/api/compare", {"content": b"{not json", "headers": {"content-type": "application/json"}}, 422),
        ("post", "/api/compare", {"content": b"sentences=x", "headers": {"content-type": "text/plain"}}, 422),
        ("post", "/api/compare", {"content": b"[1, 2]", "headers": {"content-type": "application/json"}}, 422),
        ("post", "/api/compare", {"content": b"{}", "headers": {"content-length": "abc"}}, 400),
    ],
)
def test_every_error_answer_has_the_error_shape(client, method, path, kwargs, status):
    response = getattr(client, method)(path, **kwargs)
    assert response.status_code == status and response.headers["content-type"] == "application/json"
    doc = response.json()
    assert set(doc) == {"error", "status"} and doc["status"] == status and "\n" not in doc["error"]


def test_a_bug_is_a_500_in_the_error_shape_and_the_busy_count_comes_down(client, app, monkeypatch):
    from contextlens.analyses.lesson import trace

    def stop(*_a, **_k):
        raise StopIteration  # raised into an asyncio future this used to hang the request for ever

    monkeypatch.setattr(trace, "trace", stop)
    for _ in range(3):
        response = client.post("/api/trace", json={"sentence": BANK[0]})
        assert response.status_code == 500 and set(response.json()) == {"error", "status"}
    assert client.get("/health").json()["busy"] == 0


def test_error_messages_carry_no_absolute_server_path(client):
    response = client.post("/api/search", json={"index": "docs", "query": "money"})
    assert response.status_code == 400 and "/nonexistent/abs" not in response.json()["error"]
    assert "index-folder" in response.json()["error"]  # the last part still says which


def test_the_pool_releases_on_error_and_skips_work_whose_request_left():
    from contextlens.web.serving import WorkerPool

    pool = WorkerPool(workers=1, queue=4)
    gate, ran = threading.Event(), []

    def boom():
        raise ValueError("bad")

    async def scenario():
        for _ in range(10):
            with pytest.raises(ValueError):
                await pool.run(boom)
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(pool.run(lambda: next(iter(()))), 5)  # StopIteration: no hang
        blocker = asyncio.ensure_future(pool.run(gate.wait))
        await asyncio.sleep(0.05)
        queued = asyncio.ensure_future(pool.run(lambda: ran.append(1)))
        await asyncio.sleep(0.05)
        queued.cancel()  # its client went away while it waited for the thread
        await asyncio.sleep(0.05)
        assert pool.pending == 1  # only the running one
        gate.set()
        await blocker
        await asyncio.sleep(0.1)

    asyncio.run(scenario())
    assert pool.pending == 0 and ran == []
    pool.shutdown()


EVIL = '<a href="https://x.example" target=_blank>bank</a>'


def test_user_strings_reach_figures_escaped_in_the_page_and_the_notebook(client, minilm):
    from contextlens import notebook
    from contextlens.analyses.lesson.divergence import compare
    from contextlens.core.occurrences import parse_marked
    from contextlens.reports import interactive

    result = compare([parse_marked(f"The [{EVIL}] is here."), parse_marked(f"A [{EVIL}] was there.")], minilm, None)
    (fig,) = interactive.divergence_figures(result)
    assert "<" not in fig.layout.title.text and "&lt;a href" in fig.layout.title.text
    figures = notebook.to_html(result).split("</script>", 1)[1]  # after plotly.js itself
    assert "plotly-graph-div" in figures and "<a href" not in figures and "\\u003ca href" not in figures
    page = client.get(
        "/compare", params=[("s", f"The [{EVIL}] is here."), ("s", f"A [{EVIL}] was there."), ("static", "none")]
    )
    assert page.status_code == 200 and "plotly-graph-div" in page.text
    assert "\\u003ca href" not in page.text and '<a href="https://x.example"' not in page.text


def test_an_unhandled_error_still_carries_the_security_headers(minilm):
    """A 500 from outside every route's own handling is answered by Starlette's outermost
    middleware, which the guard does not wrap: the headers must be on it too."""
    from contextlens.web.guard import HEADERS

    bare = create_app("minilm", {})

    @bare.get("/boom")
    async def boom() -> None:
        raise RuntimeError("a bug")

    response = TestClient(bare, base_url=LOCAL, raise_server_exceptions=False).get("/boom")
    assert response.status_code == 500 and set(response.json()) == {"error", "status"}
    for name, value in HEADERS:
        assert response.headers.get(name.decode()) == value.decode(), name


def test_a_request_the_http_parser_refuses_gets_the_error_shape_and_the_headers(minilm):
    """A repeated or missing Host, or Content-Length -1, is refused by uvicorn's parser before the
    guard: it answered plain text ("Invalid HTTP request received.") without the security headers."""
    import socket

    from tests.helpers import served_in_thread

    requests = [
        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET /health HTTP/1.1\r\n\r\n",
        b"POST /api/compare HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n",
        b"NOT A REQUEST LINE\r\n\r\n",
    ]
    with served_in_thread(create_app("minilm")) as url:
        port = int(url.rsplit(":", 1)[1])
        for raw in requests:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
                conn.sendall(raw)
                answer = b""
                while chunk := conn.recv(65536):
                    answer += chunk
            head, _, body = answer.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
            assert lines[0].startswith("HTTP/1.1 400"), (raw, lines[0])
            assert headers["content-type"] == "application/json", raw
            assert json.loads(body) == {"error": json.loads(body)["error"], "status": 400}
            assert "Host header" in json.loads(body)["error"]
            for name, value in HEADERS:
                assert headers[name.decode()] == value.decode(), (raw, name)
