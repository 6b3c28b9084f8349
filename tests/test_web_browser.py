"""The pages in a real browser: Debian's headless Chromium driven by Playwright, served on 127.0.0.1.

Every request the page makes is routed: anything not on the local server is aborted and recorded,
and the test asserts none was attempted (the page works with the network off).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.helpers import CHROMIUM

SHOTS = os.environ.get("CONTEXTLENS_WEB_SCREENSHOTS")  # folder: also write docs screenshots
pytestmark = pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")

BANK = ["I sat on the river [bank].", "I opened a [bank] account."]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(minilm):
    import uvicorn

    from contextlens.web.app import create_app

    port = _free_port()
    spec = os.environ.get("CONTEXTLENS_WEB_INDEX")  # NAME=FOLDER: serve an index (for the search screenshot)
    served = dict([spec.split("=", 1)]) if spec else {}
    config = uvicorn.Config(create_app("minilm", served), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    for _ in range(200):
        if srv.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


@pytest.fixture()
def page(browser, server):
    """A fresh page whose every non-local request is aborted and remembered in ``page.leaks``."""
    local = urlsplit(server).netloc
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    leaks: list[str] = []

    def route(r):
        if urlsplit(r.request.url).netloc == local:
            r.continue_()
        else:
            leaks.append(r.request.url)
            r.abort()

    pg.route("**/*", route)
    pg.leaks = leaks  # type: ignore[attr-defined]
    yield pg
    assert leaks == [], f"requests left localhost: {leaks}"
    context.close()


def test_type_sentences_submit_and_a_plot_appears_then_the_url_reproduces_it(page, server):
    page.goto(f"{server}/compare")
    page.fill("#f-s", "\n".join(BANK))
    page.click("#go")
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=30_000)
    assert "s=" in page.url and "%5Bbank%5D" in page.url
    url = page.url
    page.goto("about:blank")
    page.goto(url)  # the link alone reproduces the page: same inputs, a plot again
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=30_000)
    assert page.input_value("#f-s").splitlines() == BANK
    assert page.get_attribute("#json-link", "href").startswith("/compare.json?")


def test_a_bad_marker_shows_the_cli_message_beside_the_input(page, server):
    page.goto(f"{server}/compare")
    page.fill("#f-s", "The [bank called.\n" + BANK[1])
    page.click("#go")
    error = page.text_content("#error")
    assert error.startswith("error: unbalanced markers in 'The [bank called.'")
    assert page.query_selector(".plotly-graph-div") is None and "Traceback" not in page.content()


def test_the_quiz_accepts_a_right_answer_and_rejects_a_wrong_one(page, server):
    page.goto(f"{server}/lesson")
    page.check("#quiz-1 input[value='2']")
    page.click("#check-1")
    assert page.text_content("#quiz-1 #verdict") == "Right."
    page.wait_for_selector("#quiz-1 .plotly-graph-div .main-svg", timeout=30_000)  # explained with a live figure
    page.check("#quiz-3 input[value='1']")
    page.click("#check-3")
    assert page.text_content("#quiz-3 #verdict").startswith("Not quite: the answer is option 3")
    # its figure is also the lesson's first one: both must be drawn, not only the first of equal ids
    page.wait_for_selector("#quiz-3 .plotly-graph-div .main-svg", timeout=30_000)
    assert len(page.query_selector_all(".plotly-graph-div .main-svg")) >= 4


SHOT_PAGES = {
    "lesson": "/lesson",
    "quiz": "/lesson?q=3&a=1#quiz-3",
    "compare": "/compare?s=I+sat+on+the+river+[bank].&s=I+opened+a+[bank]+account.&s=The+[bank]+approved+the+loan.",
    "explore": "/explore?words=bank+bat+light&permutations=200",
    "attention": "/attention?s=The+[bank]+approved+the+loan.&s=The+river+[bank]+flooded.&layer=6&head=3",
    "probe": "/probe?s=She+sat+on+the+river+[bank].&s=He+robbed+the+[bank].&anchors=shore+money",
    "trace": "/trace?sentence=The+river+[bank]+flooded.",
    "neighbors": "/neighbors?analogy=man:king::woman",
    "rank": "/rank?top=5",
    "search": "/search?index=docs&query=money+and+loans&k=5",
    "error": "/compare?s=The+[bank+called.&s=The+river+[bank]+flooded.",
}


@pytest.mark.skipif(not SHOTS, reason="set CONTEXTLENS_WEB_SCREENSHOTS=folder to write the docs screenshots")
def test_screenshots_of_every_page(page, server):
    out = Path(SHOTS)
    out.mkdir(parents=True, exist_ok=True)
    for name, path in SHOT_PAGES.items():
        page.goto(server + path)
        page.wait_for_load_state("networkidle")
        page.screenshot(path=str(out / f"web-{name}.png"), full_page=name not in ("lesson", "quiz", "explore", "trace"))


def test_the_layer_slider_redraws_the_explorer_at_that_layer(page, server):
    page.goto(f"{server}/explore?words=bank&permutations=20")
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=30_000)
    assert page.get_attribute("#f-layer", "max") == "6"  # minilm: hidden states 0..6
    with page.expect_navigation():
        page.fill("#f-layer", "2")  # a range input: fill sets the value and fires change, which submits
    assert "layer=2" in page.url
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=30_000)
    assert "cosine at layer 2" in page.content()


def test_the_pages_draw_under_their_content_security_policy(page, server):
    """The CSP and frame headers are on the page, and nothing on it breaks them (plotly draws)."""
    messages: list[str] = []
    page.on("console", lambda m: messages.append(m.text))
    response = page.goto(f"{server}/attention?s=The+[bank]+approved+the+loan.&layer=2&head=1")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=30_000)
    with page.expect_navigation():
        page.fill("#f-layer", "3")  # the slider's inline handler still submits
    assert "layer=3" in page.url
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=30_000)
    assert [m for m in messages if "Content Security Policy" in m] == []


def test_no_modebar_button_can_send_a_figure_off_the_machine(page, server):
    """Offline means one click cannot leak either: plotly.js's "Share chart..." button (an upload to
    Plotly's cloud) is not on any figure, and hovering shows the buttons that remain."""
    page.goto(f"{server}/compare?s=" + "&s=".join(BANK))
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=30_000)
    page.hover(".plotly-graph-div .main-svg")
    titles = page.eval_on_selector_all(".modebar-btn", "bs => bs.map(b => b.getAttribute('data-title'))")
    assert titles, "the modebar is drawn"
    assert not [t for t in titles if t and ("Share" in t or "Chart Studio" in t or "Cloud" in t)], titles
    assert page.leaks == []
