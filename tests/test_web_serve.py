"""`contextlens serve` option handling: local by default, a warning for another host, bad --index refused."""

from __future__ import annotations

import pytest

from contextlens.cli import main


@pytest.fixture()
def started(monkeypatch) -> dict:
    """The server's run replaced: the command's parsing and checks run, no port opens."""
    from types import SimpleNamespace

    from contextlens.cli import serve
    from contextlens.web import http_server

    calls: dict = {}

    def fake(app, host, port, grace):  # a server that listens prepares the app (web/preparing.py): made here
        calls.update(app=app.wait(), host=host, port=port)
        return SimpleNamespace(interrupted=False, started=True)

    monkeypatch.setattr(http_server, "serve_app", fake)
    monkeypatch.setattr(serve, "check_address", lambda host, port: None)  # the default port may be taken here
    return calls


def _run(args: list[str]) -> int:
    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_binds_localhost_by_default_and_warns_for_another_host(minilm, started, capsys):
    assert _run(["serve", "-m", "minilm"]) == 0
    assert started["host"] == "127.0.0.1" and started["port"] == 8765
    assert "warning" not in capsys.readouterr().err
    assert _run(["serve", "-m", "minilm", "--host", "0.0.0.0", "--port", "9000"]) == 0
    err = capsys.readouterr().err
    assert started["host"] == "0.0.0.0" and "warning: serving on 0.0.0.0" in err
    assert started["app"].state.model == "minilm"


@pytest.mark.parametrize("spec", ["no-equals-sign", "docs=/nonexistent/index-folder"])
def test_a_bad_index_is_one_line_and_exit_2(started, capsys, spec):
    assert _run(["serve", "-m", "minilm", "--index", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "app" not in started


def test_an_unknown_model_fails_before_the_port_opens(started, capsys):
    assert _run(["serve", "-m", "no-such-model-xyz"]) == 2
    assert capsys.readouterr().err.startswith("error: ") and "app" not in started


def test_the_pool_refuses_beyond_its_bound_and_the_refusal_is_a_503():
    import asyncio
    import threading

    from contextlens.web.serving import Busy, WorkerPool, error_status

    release = threading.Event()
    pool = WorkerPool(workers=1, queue=0)

    async def scenario():
        running = asyncio.ensure_future(pool.run(release.wait))
        await asyncio.sleep(0.05)
        with pytest.raises(Busy) as refused:
            await pool.run(lambda: None)
        release.set()
        await running
        assert await pool.run(lambda: 42) == 42  # free again once the long one is done
        return refused.value

    busy = asyncio.run(scenario())
    assert error_status(busy)[0] == 503 and "limit 1" in str(busy)
    pool.shutdown()


@pytest.fixture(scope="module")
def index_folder(minilm, tmp_path_factory):
    from contextlens.analyses.search.encoders import TextEncoder
    from contextlens.analyses.search.index import Document, VectorIndex

    docs = [Document(str(i), t) for i, t in enumerate(["The bank approved the loan.", "The river flooded."])]
    return VectorIndex.build(docs, TextEncoder(minilm, "sentence")).save(tmp_path_factory.mktemp("ix") / "ix")


def test_the_same_index_name_twice_is_refused(started, capsys, index_folder):
    assert _run(["serve", "-m", "minilm", "--index", f"docs={index_folder}", "--index", f"docs={index_folder}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "given twice" in err and "app" not in started
    assert _run(["serve", "-m", "minilm", "--index", f"a={index_folder}", "--index", f"b={index_folder}"]) == 0
    assert started["app"].state.indexes == {"a": str(index_folder), "b": str(index_folder)}


def test_a_damaged_index_is_refused_at_start(started, capsys, index_folder, tmp_path):
    import shutil

    from contextlens.analyses.search.index import INDEX_FILE
    from contextlens.analyses.search.index_files import current_folder

    broken = tmp_path / "broken"
    shutil.copytree(index_folder, broken, symlinks=True)
    target = current_folder(broken) / INDEX_FILE
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte: the manifest is fine, the vectors are not
    target.write_bytes(bytes(data))
    assert _run(["serve", "-m", "minilm", "--index", f"docs={broken}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "checksum" in err and "app" not in started


def test_a_port_in_use_or_a_bad_host_is_one_line_and_exit_2(capsys):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert _run(["serve", "-m", "minilm", "--port", str(port)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and f"port {port}" in err and "in use" in err
    for host in ("no-such-host.invalid", "300.1.2.3", "bad host name", "10.255.255.1"):
        assert _run(["serve", "-m", "minilm", "--host", host, "--port", str(port)]) == 2, host
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and "ERROR" not in err, (host, err)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"workers": 0}, "workers must be a whole number of at least 1"),
     ({"workers": -2}, "workers must be"), ({"workers": True}, "workers must be"),
     ({"queue": -1}, "queue must be a whole number of at least 0")],
)  # fmt: skip
def test_a_pool_of_no_workers_is_a_typed_one_line_error(kwargs, message):
    """From the Python API, ``WorkerPool(0)`` was ThreadPoolExecutor's plain ValueError; now a
    ParameterError naming the parameter, before any thread starts."""
    from contextlens.errors import ParameterError
    from contextlens.web.serving import WorkerPool

    with pytest.raises(ParameterError) as err:
        WorkerPool(**kwargs)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    assert err.value.parameter == next(iter(kwargs))
    pool = WorkerPool(workers=1, queue=0)  # the smallest pool there is
    assert (pool.workers, pool.queue) == (1, 0)
    pool.shutdown()


def test_with_no_index_named_serve_searches_a_built_in_one_and_says_so(minilm, started, capsys):
    """The lesson's "(c) on search" led to "No index is served" unless serve had --index: with none
    named it serves the Lee corpus's 50 news documents, indexed once per model in the cache."""
    from fastapi.testclient import TestClient

    from contextlens.analyses.search import builtin_index
    from contextlens.data.lee import load_lee

    assert _run(["serve", "-m", "minilm"]) == 0
    assert "search: the built-in index 'lee'" in capsys.readouterr().err
    assert set(started["app"].state.indexes) == {builtin_index.NAME}
    client = TestClient(started["app"], base_url="http://127.0.0.1")
    hits = client.post("/api/search", json={"index": "lee", "query": "a bank cuts jobs", "k": 3}).json()["hits"]
    assert len(hits) == 3 and all(h["text"] in load_lee().documents for h in hits)
    page = client.get("/search").text
    assert "No index is served" not in page and "<option selected>lee</option>" in page


def test_an_index_named_replaces_the_built_in_one(started, index_folder):
    assert _run(["serve", "-m", "minilm", "--index", f"docs={index_folder}"]) == 0
    assert set(started["app"].state.indexes) == {"docs"}


BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


def test_while_preparing_the_server_answers_and_says_what_it_prepares(minilm):
    """Issue 33 item 9: the server listens before its first-use work ends; until the app is made,
    /health is 503 with "ready": false and the step, a page is a status line that asks again, an API
    call a 503 error document, the favicon and the scripts the files the app serves (the favicon
    was a 503); then every request reaches the app."""
    import json
    import threading
    import urllib.error
    import urllib.request

    from contextlens.web.app import create_app
    from contextlens.web.files import FILES
    from contextlens.web.preparing import Preparing
    from tests.helpers import served_in_thread

    release, steps = threading.Event(), []

    def make(say):
        say("indexing the test corpus")
        release.wait(60)
        return create_app("minilm")

    def get(url, headers=None, data=None, raw=False):
        sent = {**(headers or {}), "Content-Type": "application/json"}
        request = urllib.request.Request(url, data=data, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                status, got, body = r.status, r.headers, r.read()
        except urllib.error.HTTPError as exc:
            status, got, body = exc.code, exc.headers, exc.read()
        return status, {k.lower(): v for k, v in got.items()}, body if raw else body.decode()

    app = Preparing(make, say=steps.append)
    with served_in_thread(app) as base:
        for _ in range(100):  # the thread has said its step
            if steps:
                break
            threading.Event().wait(0.05)
        status, _, body = get(f"{base}/health")
        assert status == 503 and json.loads(body) == {"status": "preparing", "ready": False,
                                                      "preparing": "indexing the test corpus"}  # fmt: skip
        status, headers, page = get(f"{base}/lesson", BROWSER)
        assert status == 503 and 'id="work-status"' in page and "indexing the test corpus" in page
        assert 'http-equiv="refresh"' in page and headers["retry-after"] == "2"
        assert "content-security-policy" in headers  # behind the guard: its headers
        status, _, body = get(f"{base}/api/compare", data=json.dumps({"sentences": ["a [bank]"]}).encode())
        assert status == 503 and "preparing (indexing the test corpus)" in json.loads(body)["error"]
        assert get(f"{base}/health", {"Host": "evil.example"})[0] == 400  # the guard's Host check holds now too
        # the favicon (a browser asks for it with the waiting page) and the scripts: served, not a 503
        early = {path: get(base + path, raw=True) for path in FILES}
        assert {path: status for path, (status, _, _) in early.items()} == dict.fromkeys(FILES, 200)
        assert "content-security-policy" in early["/favicon.ico"][1]
        release.set()
        app.wait(120)
        status, _, body = get(f"{base}/health")
        assert status == 200 and json.loads(body)["ready"] is True and json.loads(body)["model"] == "minilm"
        for path, (_, headers, body) in early.items():  # the same file, type and caching as the made app's
            status, later, again = get(base + path, raw=True)
            assert status == 200 and again == body and len(body) > 0, path
            assert [later[h] for h in ("content-type", "cache-control")] == [
                headers[h] for h in ("content-type", "cache-control")], path  # fmt: skip
    assert steps == ["indexing the test corpus"]


def test_a_failed_preparation_is_kept_and_stops_the_server():
    from types import SimpleNamespace

    from contextlens.errors import InputError
    from contextlens.web.preparing import Preparing

    def make(say):
        raise InputError("the model folder is damaged")

    app = Preparing(make)
    server = SimpleNamespace(should_exit=False)
    app.listening(server)
    with pytest.raises(InputError, match="damaged"):
        app.wait(30)
    assert server.should_exit is True and app.error is not None and not app.ready


def test_serve_prints_its_address_when_it_listens_then_says_ready(minilm, tmp_path):
    """A real `serve`: its address line comes once the port answers, before the first-use work's
    "ready:" line, and the pages answer after it."""
    import json
    import os
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request

    from tests.helpers import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "contextlens", "serve", "-m", "minilm", "--port", str(port)],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    lines, answered = [], None
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not any(line.startswith("ready:") for line in lines):
            line = proc.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
            if "serving minilm on" in line:  # the port answers the moment the address is said
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as r:
                        answered = r.status
                except urllib.error.HTTPError as exc:
                    answered = exc.code
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as r:
            assert json.loads(r.read())["ready"] is True
    finally:
        proc.terminate()
        proc.wait(30)
    said = [i for i, line in enumerate(lines) if "serving minilm on" in line]
    ready = [i for i, line in enumerate(lines) if line.startswith("ready:")]
    assert said and ready and said[0] < ready[0] and answered in (200, 503), "".join(lines)
    assert any(line.startswith("preparing: loading minilm") for line in lines[said[0] : ready[0]]), "".join(lines)


def _processes_using(cache: str) -> list[int]:
    """The processes whose environment names ``cache`` as CONTEXTLENS_CACHE: the server and anything it
    started (an orphan too: its parent gone, it keeps the environment it was given)."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("CONTEXTLENS_CACHE") == cache and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"], ids=["SIGTERM", "Ctrl-C"])
def test_stopping_serve_while_it_prepares_ends_it_with_its_line_and_code_and_leaves_no_process(tmp_path, sig):
    """A cold `serve` (a fresh empty cache: minilm's ONNX export and check and the built-in index are
    still to do) stopped while /health says "ready": false ends as a ready one does: SIGTERM as
    terminated by it, Ctrl-C with "interrupted" and 130; no traceback, no "ready:" line, and nothing it
    started is left running (a thread inside the model load held the exit once)."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import threading
    import urllib.error
    import urllib.request

    from tests.helpers import HANG_SECONDS, free_port

    port, cache = free_port(), str(tmp_path / "empty-cache")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "CONTEXTLENS_CACHE": cache}
    proc = subprocess.Popen(
        [sys.executable, "-m", "contextlens", "serve", "-m", "minilm", "--port", str(port)],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    lines: list[str] = []
    guard = threading.Timer(HANG_SECONDS, proc.kill)  # a hang guard on the reads below, no deadline
    guard.start()
    try:
        while not lines or not lines[-1].startswith("preparing:"):  # the first step has begun
            lines.append(proc.stderr.readline())
            assert lines[-1], "".join(lines)
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=HANG_SECONDS)
            health = {"ready": True}
        except urllib.error.HTTPError as exc:
            health = json.loads(exc.read())
        assert health["ready"] is False, (health, lines)  # still preparing when stopped
        assert proc.pid in _processes_using(cache)
        proc.send_signal(getattr(signal, sig))
        _, rest = proc.communicate(timeout=HANG_SECONDS)  # a hang guard, no deadline
        lines += rest.splitlines(keepends=True)
        code = proc.returncode
    finally:
        guard.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = "".join(lines)
    assert "Traceback" not in text and not any(line.startswith("ready:") for line in lines), text
    if sig == "SIGINT":
        assert code == 130 and lines[-1].rstrip() == "interrupted", text
    else:
        assert code == -signal.SIGTERM and "interrupted" not in text, text
    assert _processes_using(cache) == []
