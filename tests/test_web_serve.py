"""`contextlens serve` option handling: local by default, a warning for another host, bad --index refused."""

from __future__ import annotations

import pytest

from contextlens.cli import main


@pytest.fixture()
def started(monkeypatch) -> dict:
    """uvicorn.run replaced: the command's parsing and checks run, no port opens."""
    import uvicorn

    calls: dict = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, host, port, **kw: calls.update(app=app, host=host, port=port))
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
