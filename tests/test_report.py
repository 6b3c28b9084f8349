"""The lesson report: demo writes one self-contained HTML file whose every figure renders offline."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from plotly.offline import get_plotlyjs
from typer.testing import CliRunner

from contextlens.cli import app
from contextlens.reports.interactive import remote_resources
from tests.helpers import BROWSER_WAIT_MS, abort_requests_leaving, figure_count

FIN, RIVER = "The [bank] called about my account.", "The river [bank] flooded last night."


def without_plotly_library(document: str) -> str:
    """The page minus the inlined plotly.js bundle, whose source quotes URLs it never loads here
    (map tiles, licence links, the svg namespace)."""
    lib = get_plotlyjs()
    assert document.count(lib) == 1, "plotly.js must be inlined exactly once"
    return document.replace(lib, "")


def render_dom(browser, page: Path, figures: int) -> str:
    """The DOM after headless Chromium (the session's one, offline) ran the page's scripts; a
    request that leaves the file fails the test."""
    context = browser.new_context(offline=True)
    leaks = abort_requests_leaving(context, lambda url: urlsplit(url).scheme in ("file", "data", "blob", "about"))
    tab = context.new_page()
    try:
        tab.goto(page.as_uri())
        with contextlib.suppress(PlaywrightTimeout):  # then the counts below say what was drawn
            drawn = "n => document.querySelectorAll('.plot-container.plotly .main-svg').length >= 2 * n"
            tab.wait_for_function(drawn, arg=figures, timeout=BROWSER_WAIT_MS)
        dom = tab.content()
    finally:
        context.close()
    assert leaks == [], f"the page made requests: {leaks}"
    return dom


def test_remote_resource_check_can_fail():
    assert remote_resources('<script src="https://cdn.plot.ly/plotly.min.js"></script>')
    assert remote_resources("<style>@import url(https://fonts.example/x.css);</style>")
    assert remote_resources('<link rel="stylesheet" href="//cdn.example/x.css">')
    assert not remote_resources('<script>var a = "https://only.a.string";</script><a href="#top">top</a>')


def test_demo_report_renders_every_figure_offline(demo_run, browser):
    out, folder = demo_run  # the session's one demo run (tests/conftest.py)
    assert out.returncode == 0, out.stderr
    found = re.search(r"\((\d+)\s+interactive\s+figures", out.stdout)  # rich wraps a long path anywhere
    assert found, out.stdout
    n_figures = int(found.group(1))
    page = folder / "report.html"
    document = page.read_text()
    for section in (
        "Worked example",
        "Polysemy explorer",
        "ranking",
        "Attention",
        "Sense probe",
        "Trace",
        "Is the embedding table still there",
        "What a contextual vector costs",
        "Which layers see the sentences alike? CKA",
        "Which layer knows what? Layer probes",
        "The static methods: word2vec, GloVe, fastText",
    ):
        assert section in document
    assert document.count("<section>") == 11
    assert n_figures == figure_count(document) >= 14  # the cost and CKA sections add one figure each
    assert "contextlens cka --model minilm --other mpnet" in document and "contextlens eval layers" in document
    slower = re.search(r"forward pass: ([\d,]+)× slower", document)
    assert slower and int(slower.group(1).replace(",", "")) > 10, "a forward pass must cost more than a lookup"
    cka = re.search(r"CKA of layer 0 with layer (\d+) (\d\.\d+), of adjacent layers at least (\d\.\d+)", document)
    assert cka and int(cka.group(1)) >= 6 and 0 < float(cka.group(2)) < float(cka.group(3)) <= 1
    assert remote_resources(document) == []
    rest = without_plotly_library(document)
    assert "http://" not in rest and "https://" not in rest
    for png in ("bank-two-sentences.png", "cost.png", "cka.png"):
        assert (folder / png).stat().st_size > 0
    dom = render_dom(browser, page, n_figures)
    assert dom.count('class="plot-container plotly"') == n_figures
    assert dom.count('class="main-svg"') >= 2 * n_figures  # each rendered plot draws at least two svg layers


def test_compare_html_is_self_contained(tmp_path, browser):
    page = tmp_path / "compare.html"
    out = CliRunner().invoke(app, ["compare", FIN, RIVER, "-m", "minilm", "--html", str(page)])
    assert out.exit_code == 0, out.output
    document = page.read_text()
    assert figure_count(document) == 1 and remote_resources(document) == []
    rest = without_plotly_library(document)
    assert "http://" not in rest and "https://" not in rest
    assert render_dom(browser, page, 1).count('class="plot-container plotly"') == 1
