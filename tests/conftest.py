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
import signal
import socket
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
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
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    # a suite started with Ctrl-C ignored (nohup, a background job of a script) passes that on to
    # every command it starts: the Ctrl-C tests could not interrupt them (their commands exited 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)

import pytest  # noqa: E402
import torch  # noqa: E402

from contextlens.core.contextual_models import ContextualModel, load_contextual  # noqa: E402
from contextlens.core.static_models import StaticModel, load_static  # noqa: E402
from tests.file_scheduling import make_scheduler, record_durations  # noqa: E402

torch.set_num_threads(TEST_THREADS)  # also when torch was imported before this file set the variable


@pytest.fixture(scope="session", autouse=True)
def _test_threads():
    """The CLI sets torch's threads to the core count unless --threads is given; in the tests, to
    TEST_THREADS (a test of --threads asks for another count and sees it applied)."""
    from contextlens.cli import common

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(common, "default_threads", lambda: TEST_THREADS)
        yield


@pytest.fixture(autouse=True)
def _threads_put_back():
    """A command run in this process (helpers.run_cli) sets the process's threads as a real one
    would. The next test gets TEST_THREADS back: a float sum's last bits depend on the thread
    count, so an answer compared across two runs must not depend on which test ran before it on
    the worker (test_tune's `--threads`-less tune left 2, and test_cli_faces's API and CLI answers
    then differed by 2e-8), and a second thread waits for a core under load (above)."""
    yield
    if torch.get_num_threads() != TEST_THREADS:
        from contextlens.core.threads import set_threads

        set_threads(TEST_THREADS)


@pytest.fixture(scope="session")
def pg():
    """The embedded PostgreSQL + pgvector, started once for the session (shared by every test file that
    asks for it; CLI subprocesses reuse it) and stopped when the session ends."""
    from contextlens.analyses.search import pg_server

    with pg_server.embedded_server(idle=0) as conninfo:
        yield conninfo


# One Ray cluster per session, started apart as users start one (scripts/ray-cluster.sh: `ray start
# --head` and a second `ray start --address`, two nodes of 1 CPU on this machine), which retries a
# node that missed Ray's 30 s raylet deadline on a loaded machine and gives the health checks
# minutes; its `stop` ends every process of it (pytest_sessionfinish checks).
RAY_CLUSTER_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "ray-cluster.sh"
RAY_CLUSTER_SECONDS = 900
_RAY_TEMP_DIRS: list[str] = []  # the session clusters' temp dirs: a process naming one is ours


@dataclass(frozen=True)
class RayCluster:
    address: str  # the head's GCS, host:port
    folder: Path  # the script's folder: node logs, pids


def ray_cluster_command(action: str, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``scripts/ray-cluster.sh ACTION FOLDER ARGS`` with this interpreter's Ray."""
    env = dict(os.environ, RAY=str(Path(sys.executable).with_name("ray")), PYTHON=sys.executable)
    return subprocess.run(
        ["bash", str(RAY_CLUSTER_SCRIPT), action, str(folder), *args],
        capture_output=True, text=True, env=env, timeout=RAY_CLUSTER_SECONDS,
    )  # fmt: skip


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory):
    """A two-node Ray cluster, the test process joined to it; stopped when the module that uses it
    (test_corpus.py alone) is done: an idle one costs 3.5 CPU s a minute (its daemons, Ray Data's
    helpers and idle workers), and a session's worker goes on for minutes after that file."""
    ray = pytest.importorskip("ray")
    # issue 30: one cluster per test session. Module-scoped, it is stopped when test_corpus.py is done;
    # a second module asking for it would start a second one, so that is refused here
    assert not _RAY_TEMP_DIRS, "a second module uses ray_cluster: make the fixture session-scoped again"
    folder = tmp_path_factory.mktemp("ray-cluster")
    with pytest.MonkeyPatch.context() as env:  # this process is the driver of most of the cluster's jobs: a
        # worker they left idle (a read task's; ~2 CPU s to start one) waits 10 min for the next, not 1 s
        env.setenv("RAY_idle_worker_killing_time_threshold_ms", "600000")
        started = ray_cluster_command("start", folder, "2", "1")
    temp = folder / "temp"
    if temp.is_file():
        _RAY_TEMP_DIRS.append(temp.read_text().strip())
    try:
        assert started.returncode == 0, f"scripts/ray-cluster.sh start failed: {started.stderr}"
        cluster = RayCluster(started.stdout.strip().splitlines()[-1], folder)
        if ray.is_initialized():  # a local Ray that Ray Data started for an earlier test (read_blocks)
            ray.shutdown()
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        yield cluster
    finally:
        ray.shutdown()
        groups = [int(f.read_text()) for f in folder.glob("node-*.pid")]
        stopped = ray_cluster_command("stop", folder)
        assert stopped.returncode == 0, stopped.stderr
        # each node's process group, its renamed processes (ray::IDLE, ray::DashboardAgent) too, is gone
        assert not [g for g in groups if _group_alive(g)], "a Ray node's processes outlived the script's stop"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture(scope="session")
def shared_test_cache() -> Path:
    """The suite's test cache folder, for a test that runs in a cache of its own but links parts of
    this one into it (tests/helpers.link_test_cache)."""
    return TEST_CACHE


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
def made_statics(minilm) -> dict[str, str]:
    """``{"word2vec", "fasttext", "distilled"} -> name``: word2vec skip-gram and fastText trained on Lee
    (2 epochs, 32 dims) and a static model distilled from minilm's first 4,000 vocabulary tokens
    (64 dims), as `--static NAME` models in the test cache."""
    from contextlens.analyses.static import distill
    from contextlens.analyses.static.train import train_static
    from contextlens.core.static_store import made_dir
    from tests.helpers import MADE_STATICS

    small = {"epochs": 2, "min_count": 2, "dim": 32, "force": True}
    if made_dir(MADE_STATICS["word2vec"]) is None:
        train_static("lee", name=MADE_STATICS["word2vec"], **small)
    if made_dir(MADE_STATICS["fasttext"]) is None:
        train_static("lee", "fasttext", name=MADE_STATICS["fasttext"], buckets=5000, **small)
    if made_dir(MADE_STATICS["distilled"]) is None:
        with pytest.MonkeyPatch.context() as patch:
            full = distill.vocabulary_tokens
            patch.setattr(distill, "vocabulary_tokens", lambda tok: full(tok)[:4000])
            distill.distill_static(minilm, name=MADE_STATICS["distilled"], pca_dims=64, force=True)
    return dict(MADE_STATICS)


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

    # the network cut: every request but loopback's (which Chromium never proxies) goes to a proxy
    # port bound here and never listened on, so it is refused at once, as offline
    with socket.socket() as cut, sync_playwright() as p:
        cut.bind(("127.0.0.1", 0))
        proxy = f"--proxy-server=http://127.0.0.1:{cut.getsockname()[1]}"
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", proxy])
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
    from cpu_ledger import register

    register(config, _worker_id(config))
    record_durations(config, _worker_id(config))


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Each file (the PostgreSQL files together) on one worker, the longest first: tests/file_scheduling.py."""
    return make_scheduler(config, log)


def _worker_id(config: pytest.Config) -> str | None:
    """``gw0``, ``gw1``... in an xdist worker; None in a plain run or xdist's controller."""
    return getattr(config, "workerinput", {}).get("workerid")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the selected tests' real-process smoke commands now, one after another in a thread:
    each is an interpreter start plus a model load (~5 s) that runs on the core the
    single-threaded tests leave idle; its test collects the result when its turn comes. The
    environment and working folder are this moment's, not those of whatever test is running.
    In an xdist worker (which collects every test but runs its share) each runs when its test does,
    and only the first worker starts the cold-cache warmer."""
    from tests.helpers import run_cli_subprocess

    if session.config.option.collectonly:
        return
    worker = _worker_id(session.config)
    if worker is not None:
        if worker == "gw0" and len(session.items) >= WARM_FROM_ITEMS and _cache_is_cold():
            _WARMER_DONE.append(_SMOKE_RUNNER.submit(_run_warmer, dict(os.environ)))
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
    if not hasattr(session.config, "workerinput"):  # the main process, once every fixture is torn down
        left = _left_running(str(session.config._tmp_path_factory.getbasetemp()))
        if left:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            print(f"\n{len(left)} process(es) of the tests still running after the session:", *left, sep="\n  ")


LEFT_RUNNING_GRACE = 60  # seconds for an idle reaper (CONTEXTLENS_PG_IDLE_SECONDS=0) to stop its server
SERVICE_WORDS = ("ray", "raylet", "gcs_server", "postgres", "pg_ctl", "chrom", "reaper", "pg_server")


def _left_running(basetemp: str) -> list[str]:
    """Ray, PostgreSQL (and its reaper) or Chromium processes the tests started that are still alive:
    this process's descendants, and any process that works in the test cache or in this session's
    tmp folders, ``basetemp`` (the embedded server detaches from the command that started it; any
    pytest's tmp folder counted another run's servers, started beside this one, as left by this one)."""
    import time

    import psutil

    marks = (str(TEST_CACHE), f"{basetemp.rstrip('/')}/", *_RAY_TEMP_DIRS)
    me = psutil.Process()
    deadline = time.monotonic() + LEFT_RUNNING_GRACE
    while True:
        left = []
        mine = {p.pid for p in me.children(recursive=True)}
        for proc in psutil.process_iter(["pid", "cmdline"]):
            line = " ".join(proc.info["cmdline"] or [])
            ours = proc.info["pid"] in mine or any(m in line for m in marks)
            if ours and proc.info["pid"] != me.pid and any(w in line for w in SERVICE_WORDS):
                left.append(f"{proc.info['pid']}: {line[:200]}")
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(1)


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
