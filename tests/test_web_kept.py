"""What the web computed once is kept, and long page work shows the page first with a status line
(issue 33 item 9): the sense map's second load does not recompute, a re-extracted folder does, and
a page whose work outlasts deferred.SHOW_PAGE_AFTER_S answers its form and a #work-status at once."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.helpers import BROWSER_WAIT_MS, CHROMIUM, served_in_thread

needs_chromium = pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")

SENTENCES = [
    "We walked along the river bank at dawn.", "The river bank was muddy after the rain.",
    "Fish swam near the grassy bank of the stream.", "The bank raised its interest rates.",
    "She opened an account at the bank.", "The bank approved the loan on Monday.",
]  # fmt: skip


BROWSER = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}  # what a browser's navigation sends


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, minilm) -> Path:
    from contextlens.analyses.corpus.extract import extract_corpus

    tmp = tmp_path_factory.mktemp("kept")
    (tmp / "c.txt").write_text("\n".join(SENTENCES) + "\n")
    extract_corpus(str(tmp / "c.txt"), ["bank"], tmp / "x", model="minilm", layers=[0, 6], chunk_chars=120)
    return tmp / "x"


@pytest.fixture()
def counted(monkeypatch) -> list[str]:
    """Every computation of a sense map, by word."""
    from contextlens.analyses.corpus import sense_map as maps

    calls: list[str] = []
    real = maps.sense_map

    def counting(folder, word, *args, **kwargs):
        calls.append(word)
        return real(folder, word, *args, **kwargs)

    monkeypatch.setattr(maps, "sense_map", counting)
    return calls


def test_the_sense_map_is_kept_across_reloads(minilm, corpus, counted):
    from contextlens.web.app import create_app

    with TestClient(create_app("minilm", corpora={"demo": str(corpus)}), base_url="http://127.0.0.1") as client:
        first = client.post("/api/sense-map", json={"corpus": "demo", "word": "bank"})
        assert first.status_code == 200, first.text
        assert counted == ["bank"]
        again = client.post("/api/sense-map", json={"corpus": "demo", "word": "bank"})
        page = client.get("/sense-map", params={"corpus": "demo", "word": "bank"})
        assert page.status_code == 200 and 'id="sense-map"' in page.text
        assert again.json() == first.json() and counted == ["bank"]  # answered from what was kept
        other = client.post("/api/sense-map", json={"corpus": "demo", "word": "bank", "k": "2"})
        assert other.status_code == 200 and counted == ["bank", "bank"]  # another request is its own
        manifest = corpus / "manifest.json"
        stat = manifest.stat()
        os.utime(manifest, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # the folder rewritten
        client.post("/api/sense-map", json={"corpus": "demo", "word": "bank"})
        assert counted == ["bank", "bank", "bank"]


def test_long_page_work_shows_the_page_first_with_a_status_line(minilm, monkeypatch):
    from contextlens.web import deferred
    from contextlens.web.app import create_app

    monkeypatch.setattr(deferred, "SHOW_PAGE_AFTER_S", 0.0)  # every page's work counts as long
    params = {"sentences": ["I sat on the river [bank].", "I opened a [bank] account."]}
    with TestClient(create_app("minilm"), base_url="http://127.0.0.1") as client:
        whole = client.get("/compare", params=params)  # not a browser: the whole page, as before
        assert "plotly-graph-div" in whole.text and 'id="work-status"' not in whole.text
        page = client.get("/compare", params=params, headers=BROWSER)
        assert page.status_code == 200
        assert 'id="work-status"' in page.text and 'role="status"' in page.text
        assert "plotly-graph-div" not in page.text  # the figure comes after
        address = re.search(r'data-result="(/result/[^"]+)"', page.text).group(1)
        result = client.get(address)
        assert result.status_code == 200 and "plotly-graph-div" in result.text
        assert client.get(address).status_code == 404  # fetched once
        bad = client.get("/compare", params={"sentences": ["no target here", "nor here"]}, headers=BROWSER)
        address = re.search(r'data-result="(/result/[^"]+)"', bad.text).group(1)
        failed = client.get(address)
        assert failed.status_code in (400, 422) and 'class="error"' in failed.text and "Traceback" not in failed.text


def test_quick_page_work_is_answered_in_the_page(minilm, monkeypatch):
    from contextlens.web import deferred
    from contextlens.web.app import create_app

    monkeypatch.setattr(deferred, "SHOW_PAGE_AFTER_S", 60.0)  # quick: well under the threshold on any machine
    params = {"sentences": ["I sat on the river [bank].", "I opened a [bank] account."]}
    with TestClient(create_app("minilm"), base_url="http://127.0.0.1") as client:
        page = client.get("/compare", params=params, headers=BROWSER)
    assert page.status_code == 200 and "plotly-graph-div" in page.text and 'id="work-status"' not in page.text


@needs_chromium
def test_a_browser_sees_the_status_line_then_the_figure(minilm, browser, monkeypatch):
    from contextlens.web import deferred
    from contextlens.web.app import create_app

    monkeypatch.setattr(deferred, "SHOW_PAGE_AFTER_S", 0.0)
    with served_in_thread(create_app("minilm")) as url:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        try:
            page.goto(f"{url}/compare?s=I+sat+on+the+river+[bank].&s=I+opened+a+[bank]+account.")
            assert page.query_selector("#work-status") is not None  # the page came before its result
            page.wait_for_selector("#deferred-result .main-svg", timeout=BROWSER_WAIT_MS)  # its scripts ran
            assert page.text_content("#work-status").startswith("done in")
            assert page.query_selector("#deferred-result #numbers") is not None
        finally:
            context.close()


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _filled(page: str, result: str) -> str:
    """The deferred lesson as static/page.js leaves it (each data-slot's content in the part of its
    id), less the status line, and every figure id the same, for comparing with the direct page."""
    for slot, content in re.findall(r'<div data-slot="([^"]+)">(.*?)</div>(?=<div data-slot=|$)', result, re.S):
        page = page.replace(f'<div class="lesson-part" id="{slot}"></div>', content)
    page = re.sub(r'<p id="work-status".*?</p><div id="deferred-result"></div>', "", page, flags=re.S)
    return UUID.sub("ID", page)


def test_the_lesson_comes_first_then_its_figures_the_same_as_the_direct_page(minilm, monkeypatch):
    """/lesson's first visit on mpnet was 27 s of blank page: now its text and a status line come
    first, and the figures and quiz fetched after are the page a script-less client gets whole."""
    from contextlens.web import deferred, lesson
    from contextlens.web.app import create_app

    lesson._result.cache_clear()
    lesson._live_figure.cache_clear()
    monkeypatch.setattr(deferred, "SHOW_PAGE_AFTER_S", 0.0)  # every visit's work counts as long
    with TestClient(create_app("minilm"), base_url="http://127.0.0.1") as client:
        first = client.get("/lesson", params={"seed": "7"}, headers=BROWSER)
        assert first.status_code == 200 and 'id="work-status"' in first.text
        assert "plotly-graph-div" not in first.text and "<h2>1. One row per word" in first.text  # the text, now
        assert first.text.count('class="lesson-part"') == len(lesson.SECTIONS) + 1  # each section's, the quiz's
        result = client.get(re.search(r'data-result="(/result/[^"]+)"', first.text).group(1))
        assert result.status_code == 200 and "plotly-graph-div" in result.text and 'id="quiz-form"' in result.text
        computed = lesson._result.cache_info().misses
        whole = client.get("/lesson", params={"seed": "7"})  # not a browser: the whole page
        assert 'id="work-status"' not in whole.text
        assert _filled(first.text, result.text) == UUID.sub("ID", whole.text)
        assert lesson._result.cache_info().misses == computed  # the second visit computed nothing again
        monkeypatch.setattr(deferred, "SHOW_PAGE_AFTER_S", 30.0)
        again = client.get("/lesson", params={"seed": "7"}, headers=BROWSER)  # kept: in the page at once
        assert 'id="work-status"' not in again.text and "plotly-graph-div" in again.text
