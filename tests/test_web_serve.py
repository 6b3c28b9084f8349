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

    def fake(app, host, port, grace):
        calls.update(app=app, host=host, port=port)
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
