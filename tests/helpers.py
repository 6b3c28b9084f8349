"""Run the real `contextlens` CLI: in-process (models stay loaded between calls), or in a
subprocess for the few smoke tests that check the installed entry point end to end."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# Debian's Chromium headless shell (scripts/install-system-deps.sh), driven by Playwright: the
# same Blink as the `chromium` package without the desktop browser around it (the browser test file
# alone, benchmarks/tree_cpu.py: 118.3 CPU s against 132.3 with /usr/bin/chromium). A machine
# that has only the full browser runs the tests on it.
CHROMIUM = (
    os.environ.get("CONTEXTLENS_CHROMIUM")
    or shutil.which("chromium-headless-shell")
    or shutil.which("chromium")
    or "/usr/bin/chromium-headless-shell"
)

# A wait in a test guards against a hang; it is no deadline. On a loaded machine (CI beside other
# work: load 8-16 on 2 cores) a model load, a server's start or a page's first figure takes many
# times what it takes on a quiet one, so every wait is this long and a hang still ends the test.
HANG_SECONDS = 900
BROWSER_WAIT_MS = HANG_SECONDS * 1000 // 3

# Static models made here, shared by every test file that needs one (conftest's made_statics: made
# once, kept in the test cache between runs; the suffix changes when the fixture's recipe does).
MADE_STATICS = {"word2vec": "test-w2v-lee-v1", "fasttext": "test-ft-lee-v1", "distilled": "test-m2v-minilm-v1"}
W2V, FT, M2V = MADE_STATICS["word2vec"], MADE_STATICS["fasttext"], MADE_STATICS["distilled"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`contextlens ARGS` in this process through :func:`contextlens.cli.main`, the entry point's
    own error handling included: the exit code, stdout and stderr a subprocess would give (an
    unexpected exception becomes its traceback on stderr and exit code 1, as in a subprocess)."""
    from contextlens.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except Exception:  # noqa: BLE001 - what a crashing subprocess would show
            traceback.print_exc()
            code = 1
    return subprocess.CompletedProcess(["contextlens", *args], code, out.getvalue(), err.getvalue())


def run_cli_subprocess(
    *args: str, timeout: int = HANG_SECONDS, env: dict[str, str] | None = None, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m contextlens ARGS` in a fresh process: real stdout, stderr and exit code (in
    ``env`` and ``cwd`` when given, else this process's)."""
    env = {**(os.environ if env is None else env), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "contextlens", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )


def warm_test_cache() -> None:
    """Fill the slowest entries of a cold test cache, as the tests that first need them would:
    WordNet's usage examples and their counts, the quick Lee benchmark's encodings, minilm's
    ONNX export (the ``minilm_onnx`` fixture's; a test process that needs it first exports its
    own, and the first complete folder is kept). Run by tests/conftest.py in a process of its own
    while the suite starts (cold caches only)."""
    from contextlens.analyses.benchmarks.retrieval import evaluate_lee
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.wordnet import usage_example_stats

    usage_example_stats()  # builds the examples first
    evaluate_lee("minilm", quick=True)
    load_contextual("minilm", "fp32", "onnx").onnx_forward()


def link_test_cache(shared: Path, dest: Path, *parts: str) -> None:
    """Hard-link the shared test cache's ``parts`` (folders under ``shared``, conftest's
    ``shared_test_cache``; e.g. ``wordnet``, ``onnx/minilm-*``) into the empty cache ``dest``: a test
    that needs its own cache then reads what the suite already made (a WordNet scan, an ONNX export)
    instead of making it again. The cache's writes are atomic (a new file renamed into place), so a
    write in ``dest`` never reaches the shared file. Never ``nltk_data``: NLTK 3.10 refuses to open a
    file with a second hard link, so a link made while another worker's reader is open breaks that
    reader (seen: the sense map's WordNet lookups failed on another worker)."""
    for part in parts:
        if part.split("/")[0] == "nltk_data":
            raise ValueError("nltk_data cannot be linked: NLTK refuses multiply-linked files")
        for source in sorted(shared.glob(part)):
            target = dest / source.relative_to(shared)
            if source.is_dir() and not target.exists():
                shutil.copytree(source, target, copy_function=os.link)


def assert_plain_json(obj: object, where: str = "result") -> None:
    """Fail unless ``obj`` is made of plain JSON types only (no numpy scalars or arrays, no NaN)."""
    import json
    import math

    if isinstance(obj, dict):
        for key, value in obj.items():
            assert type(key) is str, f"{where}: key {key!r} is {type(key).__name__}, not str"
            assert_plain_json(value, f"{where}.{key}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            assert_plain_json(value, f"{where}[{i}]")
    else:
        assert obj is None or type(obj) in (str, int, float, bool), f"{where} is {type(obj).__name__}"
        assert not (type(obj) is float and not math.isfinite(obj)), f"{where} is {obj}"
    json.dumps(obj, allow_nan=False)


# Problems with how the page's figures fit the window: a figure wider than its box (it would scroll
# sideways), a box other than a table's that scrolls sideways, a title under the toolbar (modebar)
# or cut at the figure's right edge, an annotation (a panel's title, a label) cut at the figure's
# edge or lying on a trace's text label (a bar's count).
FIT_PROBLEMS = """() => {
  const out = [], hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  document.querySelectorAll('.js-plotly-plot').forEach((d, k) => {
    if (!d.clientWidth) return;  // hidden (a quiz answer's evidence before it is answered)
    const box = d.getBoundingClientRect(), svg = d.querySelector('.main-svg');
    const drawn = svg ? svg.getBoundingClientRect().width : 0, room = d.parentElement.clientWidth;
    if (drawn > room + 1) out.push(`figure ${k}: ${Math.round(drawn)} px in a ${room} px box`);
    const bar = d.querySelector('.modebar'), title = d.querySelector('.gtitle');
    if (bar && title && hit(bar.getBoundingClientRect(), title.getBoundingClientRect()))
      out.push(`figure ${k}: its title runs under the toolbar`);
    if (title && title.getBoundingClientRect().right > box.right + 1) out.push(`figure ${k}: its title is cut`);
    const labels = [...d.querySelectorAll('.textpoint text, .bartext')].map(t => t.getBoundingClientRect());
    d.querySelectorAll('.annotation').forEach(a => {  // subplot titles and labels such as "this pair"
      const r = a.getBoundingClientRect(), name = JSON.stringify(a.textContent);
      if (!r.width) return;
      if (r.left < box.left - 1 || r.right > box.right + 1) out.push(`figure ${k}: annotation ${name} is cut`);
      if (labels.some(l => l.width && hit(l, r))) out.push(`figure ${k}: annotation ${name} lies on a text label`);
    });
  });
  document.querySelectorAll('body *').forEach(e => {
    const scrolls = !['visible', 'hidden'].includes(getComputedStyle(e).overflowX);
    const table = e.querySelector('table') || ['PRE', 'TABLE'].includes(e.tagName);  // may scroll in its box
    const sideways = scrolls && e.scrollWidth > e.clientWidth + 1 && !table;
    if (sideways) out.push(`${e.tagName}.${e.className} scrolls sideways`);
  });
  return out;
}"""


# Problems with how the tables ``selector`` finds fit the window: one wider than its box or the window
# (it would scroll sideways inside its box), one that is its own box and scrolls sideways (the HTML
# report's tables were, display: block), or, in a card table (``table.cards``: a phone shows each
# row as "label: value" lines), a cell not named by its column's header.
TABLE_PROBLEMS = """selector => {
  const out = [], tables = [...document.querySelectorAll(selector)];
  if (!tables.length) return [`no table ${selector}`];
  tables.forEach((t, k) => {
    const box = t.parentElement, width = t.getBoundingClientRect().width, room = Math.min(box.clientWidth, innerWidth);
    const name = t.id || `table ${k}`, own = getComputedStyle(t).overflowX !== 'visible';
    if (width > room + 1) out.push(`${name}: ${Math.round(width)} px in a ${room} px box`);
    if (box.scrollWidth > box.clientWidth + 1) out.push(`${name}: its box scrolls sideways`);
    if (own && t.scrollWidth > t.clientWidth + 1) out.push(`${name}: scrolls sideways inside itself`);
    if (!t.classList.contains('cards')) return;
    const head = [...t.querySelectorAll('tr.head th')].map(h => h.textContent);
    t.querySelectorAll('tr:not(.head)').forEach((r, i) => [...r.children].forEach((td, j) => {
      if (td.dataset.label !== head[j]) out.push(`${name} row ${i} cell ${j}: labelled ${td.dataset.label}`);
    }));
  });
  return out;
}"""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served_in_thread(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on a free local port in a daemon thread, for as long as the block
    runs: its base URL."""
    import uvicorn

    port = free_port()
    from contextlens.web.http_server import uvicorn_options

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **uvicorn_options()))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def abort_requests_leaving(target: Any, allowed: Callable[[str], bool]) -> list[str]:
    """Every request of ``target`` (a Playwright page or browser context) whose URL ``allowed``
    refuses is kept in the list returned, which the test then asserts empty (nothing a page loads
    may leave the machine); the ``browser`` fixture's Chromium aborts it (its proxy is a local port
    that refuses every connection; loopback goes direct), as with the network off. Recorded from
    the ``request`` event, not by routing each request through Playwright: routing disables the
    browser's cache (plotly.js fetched and compiled again on every page) and costs a round trip to
    this process per request, about a sixth of the browser tests' CPU (issue 30). ``data:``,
    ``blob:`` and ``about:`` URLs never touch the network and were never routed: not counted."""
    leaks: list[str] = []

    def seen(request: Any) -> None:
        url = request.url
        if not url.startswith(("data:", "blob:", "about:")) and not allowed(url):
            leaks.append(url)

    target.on("request", seen)
    return leaks


# a page's deferred result (web/static/page.js's setupDeferred) is in (its status line lost its
# data-result) or failed (the status line says "error")
DEFERRED_SETTLED = (
    "() => !document.querySelector('#work-status[data-result]') || document.getElementById('work-status').className"
    " === 'error'"
)


class KeptTab:
    """One browser tab kept open for a whole test module, at one viewport, which every test of that
    width navigates instead of opening its own: a new tab (or context) costs Chromium a renderer
    process and plotly.js parsed and compiled again, about 3.7 CPU s per first page load against
    1.3 for the next page in a kept tab (issue 30). What a test could see of an earlier one is
    cleared before it starts (``fresh``): the cookies (the quiz's session) and the page's
    sessionStorage (the quiz's answers), and a resized window is put back, so a test starts as in
    a new tab (only the browser's cache is kept: plotly.js is not fetched again).

    Every request, answer, console error, uncaught exception and popup of the tab is recorded as it
    happens; ``since(mark)`` gives those of one test or one page visit, ``mark()`` taken at its start.
    A request is a leak when ``allowed`` (the local server's address, or file:// for a written
    report's tab) refuses its URL; the ``browser`` fixture's Chromium aborts every non-loopback
    request anyway."""

    def __init__(self, browser: Any, allowed: Callable[[str], bool], home: str = "", **context: Any) -> None:
        self.context = browser.new_context(**context)
        self.page = self.context.new_page()
        self.home = home  # a page of the server's origin, whose sessionStorage ``fresh`` clears
        self.viewport = context.get("viewport")
        self.leaks = abort_requests_leaving(self.context, allowed)
        self.failed: list[str] = []  # answers of status 400 or more: "STATUS URL"
        self.errors: list[str] = []  # console errors and uncaught exceptions
        self.popups: list[str] = []
        self.open_requests: set[Any] = set()  # sent and not yet answered or failed (``settle``)
        self.page.on("request", lambda r: self.open_requests.add(r))
        self.page.on("requestfinished", lambda r: self.open_requests.discard(r))
        self.page.on("requestfailed", lambda r: self.open_requests.discard(r))
        self.page.on("response", self._answered)
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.context.on("page", lambda p: self.popups.append(p.url))

    def _answered(self, response: Any) -> None:
        if response.status >= 400:
            self.failed.append(f"{response.status} {response.url}")

    def settle(self) -> None:
        """Wait until the page has loaded, its deferred result (web/deferred.py) is in or has failed,
        and no request of the tab is open: what ``wait_for_load_state("networkidle")`` waited for,
        without the 500 ms of quiet it also waits after the last request (a page visit of the
        browser tests idled that long, about 40 visits a run)."""
        self.page.wait_for_load_state("load")
        self.page.wait_for_function(DEFERRED_SETTLED, timeout=BROWSER_WAIT_MS)
        deadline = time.monotonic() + BROWSER_WAIT_MS / 1000
        while self.open_requests:
            assert time.monotonic() < deadline, f"requests still open: {[r.url for r in self.open_requests]}"
            self.page.wait_for_timeout(20)  # events are delivered while Playwright waits

    def fresh(self) -> tuple[int, ...]:
        """Forget the last test's session (cookies, the server origin's sessionStorage) and put back
        the tab's viewport if a test resized it; returns ``mark()``."""
        if self.viewport and self.page.viewport_size != self.viewport:
            self.page.set_viewport_size(self.viewport)
        if self.home:
            if urlsplit(self.page.url).netloc != urlsplit(self.home).netloc:
                self.page.goto(self.home)
            self.page.evaluate("sessionStorage.clear()")
        self.context.clear_cookies()
        return self.mark()

    def mark(self) -> tuple[int, ...]:
        return len(self.leaks), len(self.failed), len(self.errors), len(self.popups)

    def since(self, mark: tuple[int, ...]) -> dict[str, list[Any]]:
        lists = (self.leaks, self.failed, self.errors, self.popups)
        names = ("leaks", "failed", "errors", "popups")
        return {name: list(seen[start:]) for name, seen, start in zip(names, lists, mark, strict=True)}


@contextlib.contextmanager
def kept_tabs(
    browser: Any, allowed: Callable[[str], bool], kinds: dict[Any, dict[str, Any]], home: str = ""
) -> Iterator[Callable[[Any], KeptTab]]:
    """``tab(kind)``: a test module's one :class:`KeptTab` per kind of window (``kinds``: each kind's
    context settings: viewport, mobile, touch), made when first asked for and closed at the end; a
    request to an address ``allowed`` refuses is a leak."""
    made: dict[Any, KeptTab] = {}

    def tab(kind: Any) -> KeptTab:
        if kind not in made:
            made[kind] = KeptTab(browser, allowed, home, **kinds[kind])
        return made[kind]

    try:
        yield tab
    finally:
        for kept in made.values():
            kept.context.close()


def kept_server_tabs(
    browser: Any, server: str, kinds: dict[Any, dict[str, Any]]
) -> contextlib.AbstractContextManager[Callable[[Any], KeptTab]]:
    """:func:`kept_tabs` on ``server``'s pages: a request that leaves the server's address is a leak."""
    local = urlsplit(server).netloc
    return kept_tabs(browser, lambda url: urlsplit(url).netloc == local, kinds, f"{server}/favicon.ico")


def width_kinds(widths: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Browser context settings per window width, from ``{width: {"height": H, **more}}``."""
    kinds = {}
    for width, settings in widths.items():
        extra = dict(settings)
        kinds[width] = {"viewport": {"width": width, "height": extra.pop("height")}, **extra}
    return kinds


@contextlib.contextmanager
def fresh_page(tab: KeptTab) -> Iterator[Any]:
    """The kept tab's page for one test, its session forgotten (:meth:`KeptTab.fresh`); a request of
    the test that leaves the server fails it."""
    mark = tab.fresh()
    yield tab.page
    leaks = tab.since(mark)["leaks"]
    assert leaks == [], f"requests left localhost: {leaks}"


FIGURE_CALL = re.compile(r'Plotly\.newPlot\(\s*"')  # a figure's own call, its div's id first


def figure_count(page: str) -> int:
    """How many plotly figures a page draws: its ``Plotly.newPlot("<div id>", ...)`` calls. Not the
    bare name: fit.js, in every page's head, hooks ``Plotly.newPlot`` and so names it too."""
    return len(FIGURE_CALL.findall(page))
