"""Shared fixtures: the real shipped models, loaded once per test session, fully offline.

Tests never read or write the user's cache (``~/.cache/contextlens`` or ``$CONTEXTLENS_CACHE``):
they use a test cache folder of their own, ``$CONTEXTLENS_TEST_CACHE`` or else
``<repo>/.pytest_cache/contextlens`` (git-ignored with pytest's own cache). It is kept between
runs because filling it costs the mpnet extraction, the GloVe conversion, the WordNet example
scan and the encoded benchmark sentences; ``pytest --cache-clear`` or deleting it starts cold.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One torch / OpenMP / BLAS thread (set before torch, numpy and faiss load; inherited by the
# subprocesses and Ray actors). The tests run small batches on 2 cores shared with the suite's own
# subprocesses, Ray actors and Chromium: a second OpenMP thread then waits for a core at every
# parallel region (a LayerNorm of 16 rows: 0.01 ms on one thread, 0.4-8 ms on two), which made the
# model-heavy test files 3x slower under load. OMP_NUM_THREADS=2 pytest ... runs them on two.
TEST_THREADS = int(os.environ.setdefault("OMP_NUM_THREADS", "1"))
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, str(TEST_THREADS))
TEST_CACHE = Path(
    os.environ.get("CONTEXTLENS_TEST_CACHE") or Path(__file__).resolve().parent.parent / ".pytest_cache" / "contextlens"
)
os.environ["CONTEXTLENS_CACHE"] = str(TEST_CACHE)
# the embedded PostgreSQL of a CLI subprocess stops when its last user leaves: no server outlives the tests
os.environ.setdefault("CONTEXTLENS_PG_IDLE_SECONDS", "0")

import pytest  # noqa: E402
import torch  # noqa: E402

from contextlens.core.contextual_models import ContextualModel, load_contextual  # noqa: E402
from contextlens.core.static_models import StaticModel, load_static  # noqa: E402

torch.set_num_threads(TEST_THREADS)  # also when torch was imported before this file set the variable


@pytest.fixture(scope="session", autouse=True)
def _test_threads():
    """The CLI sets torch's threads to the core count unless --threads is given; in the tests, to
    TEST_THREADS (a test of --threads asks for another count and sees it applied)."""
    from contextlens.cli import common

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(common, "default_threads", lambda: TEST_THREADS)
        yield


@pytest.fixture(scope="session")
def pg():
    """The embedded PostgreSQL + pgvector, started once for the session (shared by every test file that
    asks for it; CLI subprocesses reuse it) and stopped when the session ends."""
    from contextlens.analyses.search import pg_server

    with pg_server.embedded_server(idle=0) as conninfo:
        yield conninfo


@pytest.fixture(scope="session")
def minilm() -> ContextualModel:
    return load_contextual("minilm")


@pytest.fixture(scope="session")
def minilm_onnx() -> ContextualModel:
    """minilm on ONNX Runtime at fp32, its graph exported and checked now (once per test cache, ~5-20 s),
    so that no test pays the export inside a cache folder of its own."""
    model = load_contextual("minilm", "fp32", "onnx")
    model.onnx_forward()
    return model


@pytest.fixture(scope="session")
def mpnet() -> ContextualModel:
    return load_contextual("mpnet")


@pytest.fixture(scope="session")
def glove() -> StaticModel:
    return load_static("glove-50d")


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory):
    """`contextlens demo -m minilm` run once per test session (in-process): ``(result, folder)``;
    every test of the demo and its report reads this one run."""
    from tests.helpers import run_cli

    folder = tmp_path_factory.mktemp("demo") / "out"
    return run_cli("demo", "--model", "minilm", "--out", str(folder)), folder


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium driven by Playwright, launched once per test module that needs it (the
    report's and the web face's); each test opens its pages in a fresh context. Not once per
    session: Playwright's sync API leaves its event loop marked running in this thread, and a
    later test's asyncio.run() (test_web_serve) would refuse to start."""
    from tests.helpers import CHROMIUM

    if not shutil.which(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}; run scripts/install-system-deps.sh")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


# --- smoke tests in a real process, started early -----------------------------------------------

_SMOKE_RUNNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cli-subprocess")
_SMOKE: dict[str, Future[subprocess.CompletedProcess[str]]] = {}
_WARMER: list[subprocess.Popen[str]] = []  # the cold-cache warmer's process, once started
_WARMER_DONE: list[Future[tuple[int, str]]] = []
_WARMER_LOCK = threading.Lock()
_SESSION_OVER: list[bool] = []

# A cold test cache costs the first tests that need them ~20 s of single-threaded work (WordNet's
# usage examples, the Lee encodings; see helpers.warm_test_cache). When most of the suite runs,
# a process started after the smoke commands fills them on the idle core (atomic writes; a test
# that needs an entry before it is there computes it itself). Killed when the session ends.
WARM_FROM_ITEMS = 100


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cli_subprocess(*args): `contextlens ARGS` in a real process, started when collection ends; "
        "the test gets its result from the cli_subprocess fixture",
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the selected tests' real-process smoke commands now, one after another in a thread:
    each is an interpreter start plus a model load (~5 s) that runs on the core the
    single-threaded tests leave idle; its test collects the result when its turn comes. The
    environment and working folder are this moment's, not those of whatever test is running."""
    from tests.helpers import run_cli_subprocess

    if session.config.option.collectonly:
        return
    for item in session.items:
        mark = item.get_closest_marker("cli_subprocess")
        if mark is not None:
            env, cwd = dict(os.environ), os.getcwd()
            _SMOKE[item.nodeid] = _SMOKE_RUNNER.submit(run_cli_subprocess, *mark.args, env=env, cwd=cwd)
    if len(session.items) >= WARM_FROM_ITEMS and _cache_is_cold():
        _WARMER_DONE.append(_SMOKE_RUNNER.submit(_run_warmer, dict(os.environ)))


def _cache_is_cold() -> bool:
    from contextlens.core.wordnet import EXAMPLES_VERSION

    return not (TEST_CACHE / "wordnet" / f"usage-examples-v{EXAMPLES_VERSION}.json").is_file()


def _run_warmer(env: dict[str, str]) -> tuple[int, str]:
    code = "from tests.helpers import warm_test_cache; warm_test_cache()"
    root = Path(__file__).resolve().parent.parent
    with _WARMER_LOCK:
        if _SESSION_OVER:
            return 0, ""
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        _WARMER.append(proc)
    _, err = proc.communicate()
    return proc.returncode, err


@pytest.fixture()
def test_cache_warmed() -> None:
    """Wait for the cold-cache warmer (if one runs): for a test that damages a shared cache entry."""
    for done in _WARMER_DONE:
        done.result()


def pytest_sessionfinish(session: pytest.Session) -> None:
    with _WARMER_LOCK:
        _SESSION_OVER.append(True)
        for proc in _WARMER:
            if proc.poll() is None:
                proc.kill()  # its writes are atomic: a killed warmer leaves no half entry


def pytest_terminal_summary(terminalreporter) -> None:
    """A warmer that failed is said (the tests computed the entries themselves)."""
    for done in _WARMER_DONE:
        code, err = done.result()
        if code > 0:
            last = err.strip().splitlines()[-1:] or ["(no message)"]
            terminalreporter.write_line(f"cold-cache warmer failed with exit code {code}: {last[0]}")


@pytest.fixture()
def cli_subprocess(request: pytest.FixtureRequest) -> subprocess.CompletedProcess[str]:
    """The result of this test's ``@pytest.mark.cli_subprocess(*args)`` command (run now if it was
    not started with the session)."""
    from tests.helpers import run_cli_subprocess

    started = _SMOKE.pop(request.node.nodeid, None)
    if started is not None:
        return started.result()
    mark = request.node.get_closest_marker("cli_subprocess")
    assert mark is not None, "the cli_subprocess fixture needs @pytest.mark.cli_subprocess(*args)"
    return run_cli_subprocess(*mark.args)
