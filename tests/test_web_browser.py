"""The pages in a real browser: Debian's headless Chromium driven by Playwright, served on 127.0.0.1.

Every request the page makes is routed: anything not on the local server is aborted and recorded,
and the test asserts none was attempted (the page works with the network off).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import (
    BROWSER_WAIT_MS,
    CHROMIUM,
    FIT_PROBLEMS,
    TABLE_PROBLEMS,
    KeptTab,
    abort_requests_leaving,
    fresh_page,
    kept_server_tabs,
    kept_tabs,
    served_in_thread,
    width_kinds,
)

SHOTS = os.environ.get("CONTEXTLENS_WEB_SCREENSHOTS")  # folder: also write docs screenshots
pytestmark = pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")

BANK = ["I sat on the river [bank].", "I opened a [bank] account."]


@pytest.fixture(scope="module")
def server(minilm):
    from contextlens.web.app import create_app

    spec = os.environ.get("CONTEXTLENS_WEB_INDEX")  # NAME=FOLDER: serve an index (for the search screenshot)
    served = dict([spec.split("=", 1)]) if spec else {}
    with served_in_thread(create_app("minilm", served)) as url:
        yield url


WIDTHS = {390: {"is_mobile": True, "has_touch": True, "height": 844}, 1280: {"height": 900}}


@pytest.fixture(scope="module")
def tabs(browser, server):
    """``tabs(width)``: the module's one kept tab for the server's pages at 390 px (a phone) or 1280
    px (helpers.KeptTab: a new tab per test cost Chromium a renderer and plotly.js compiled again)."""
    with kept_server_tabs(browser, server, width_kinds(WIDTHS)) as tab:
        yield tab


@pytest.fixture()
def page(tabs):
    """The kept 1280 px tab, its session forgotten (helpers.fresh_page): no request of the test
    may leave localhost."""
    with fresh_page(tabs(1280)) as pg:
        yield pg


def test_type_sentences_submit_and_a_plot_appears_then_the_url_reproduces_it(page, server):
    page.goto(f"{server}/compare")
    page.fill("#f-s", "\n".join(BANK))
    page.click("#go")
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=BROWSER_WAIT_MS)
    assert "s=" in page.url and "%5Bbank%5D" in page.url
    url = page.url
    page.goto("about:blank")
    page.goto(url)  # the link alone reproduces the page: same inputs, a plot again
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=BROWSER_WAIT_MS)
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
    page.check("#quiz-1 input[name=a1][value='2']")
    page.click("#check-1")
    page.wait_for_selector("#quiz-1 #verdict")
    assert page.text_content("#quiz-1 #verdict") == "Right."
    page.wait_for_selector(
        "#quiz-1 .plotly-graph-div .main-svg", timeout=BROWSER_WAIT_MS
    )  # explained with a live figure, drawn once shown (fit.js held it back while hidden)
    page.wait_for_function("() => document.querySelector('#quiz-1 .modebar-btn[aria-label]')")
    labels = page.eval_on_selector_all("#quiz-1 .modebar-btn", "bs => bs.map(b => b.getAttribute('aria-label'))")
    assert labels and None not in labels  # its buttons say what they do, as the figures drawn at load
    page.check("#quiz-3 input[name=a3][value='1']")
    page.click("#check-3")
    page.wait_for_selector("#quiz-3 #verdict")  # checked in the page (POST /api/quiz), no reload
    assert (
        page.text_content("#quiz-3 #verdict")
        == "Not quite: the answer is “No: each model has its own representation space”."
    )
    # its figure is also the lesson's first one: both must be drawn, not only the first of equal ids
    page.wait_for_selector("#quiz-3 .plotly-graph-div .main-svg", timeout=BROWSER_WAIT_MS)
    assert len(page.query_selector_all(".plotly-graph-div .main-svg")) >= 4


def test_without_scripts_the_quiz_form_marks_and_scores_every_answer(browser, server):
    """JavaScript off: pick three answers, press "Score my answers"; the server's page marks each and
    shows the score, and the picks stay checked."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, java_script_enabled=False)
    pg = context.new_page()
    pg.goto(f"{server}/lesson")
    pg.check("#quiz-1 input[name=a1][value='2']")
    pg.check("#quiz-2 input[name=a2][value='1']")
    pg.check("#quiz-3 input[name=a3][value='3']")
    pg.click("#quiz-submit")
    pg.wait_for_selector("#quiz-3 #verdict")
    assert pg.text_content("#quiz-score") == "score: 2 right of 3 answered (5 questions)"
    assert [pg.text_content(f"#quiz-{q} #verdict") for q in (1, 3)] == ["Right.", "Right."]
    assert pg.text_content("#quiz-2 #verdict").startswith("Not quite")
    assert pg.is_checked("#quiz-2 input[name=a2][value='1']") and pg.query_selector("#quiz-4 #verdict") is None
    pg.check("#quiz-4 input[name=a4][value='2']")
    pg.click("#check-4")  # one question's Check sends the earlier answers too: nothing forgotten
    pg.wait_for_selector("#quiz-4 #verdict")
    assert pg.text_content("#quiz-score") == "score: 3 right of 4 answered (5 questions)"
    context.close()


SHOT_PAGES = {
    "lesson": "/lesson",
    "quiz": "/lesson?a1=2&a3=1#quiz-3",
    "compare": "/compare?s=I+sat+on+the+river+[bank].&s=I+opened+a+[bank]+account.&s=The+[bank]+approved+the+loan.",
    "same-sense": "/same-sense?s=I+sat+on+the+river+[bank].&s=I+opened+a+[bank]+account.&quick=on",
    "explore": "/explore?words=bank+bat+light&permutations=200",
    "attention": "/attention?s=The+[bank]+approved+the+loan.&s=The+river+[bank]+flooded.&layer=6&head=3",
    "probe": "/probe?s=She+sat+on+the+river+[bank].&s=He+robbed+the+[bank].&anchors=shore+money",
    "trace": "/trace?sentence=The+river+[bank]+flooded.",
    "neighbors": "/neighbors?word=bank",
    "rank": "/rank?top=5",
    "search": "/search?index=docs&query=money+and+loans&k=5",
    "error": "/compare?s=The+[bank+called.&s=The+river+[bank]+flooded.",
}
SERVED_INDEX = os.environ.get("CONTEXTLENS_WEB_INDEX")
SHOT_PATHS = {name: "/search" if name == "search" and not SERVED_INDEX else path for name, path in SHOT_PAGES.items()}
SHOT_NAMES = {path: name for name, path in SHOT_PATHS.items()}


@pytest.fixture(scope="module")
def visit(tabs, server):
    """``visit(path, width)``: what one visit of the server's page at that width recorded
    (``_visit``), made once per module: the tests that read the same page at the same width
    (screenshots, fit, navigation links, modebar clicks, ...) assert on the one visit's record."""
    seen: dict[tuple[str, int], dict] = {}

    def record(path: str, width: int) -> dict:
        if (path, width) not in seen:
            seen[path, width] = _visit(tabs(width), server, path, width)
        return seen[path, width]

    return record


TWO_FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


def _visit(tab: KeptTab, server: str, path: str, width: int) -> dict:
    """Open ``path`` in the kept tab at ``width`` (a fresh session), let it settle, and record every
    read-only check any test makes of that page there; then, on the pages and at the width where a
    test does so, narrow and widen it again, and click every button of every figure's modebar."""
    pg = tab.page
    mark = tab.fresh()
    answer = pg.goto(server + path)
    tab.settle()
    if pg.query_selector(".js-plotly-plot"):
        pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=BROWSER_WAIT_MS)
    if path == SHOT_PAGES["probe"]:
        pg.wait_for_selector(".js-plotly-plot .barlayer .point path", timeout=BROWSER_WAIT_MS)
    if path == SHOT_PAGES["explore"]:
        pg.wait_for_selector("#numbers table", timeout=BROWSER_WAIT_MS)
    # two animation frames: what the page drew at load is laid out and painted (fit.js fits a phone's
    # figures before their first draw, so no resize is pending; a page that still resized its figures
    # later would fail the fit and width checks below, not pass them)
    pg.evaluate(TWO_FRAMES)
    got: dict = {"status": answer.status, "loaded": tab.since(mark)}  # what the loading did
    got["viewport_meta"] = pg.evaluate("document.querySelector('meta[name=viewport]') !== null")
    got["inner_width"] = pg.evaluate("window.innerWidth")
    got["scroll_width"] = pg.evaluate("document.documentElement.scrollWidth")
    got["too_wide"] = pg.evaluate(TOO_WIDE)
    got["fit"] = pg.evaluate(FIT_PROBLEMS)
    got["tables"] = pg.evaluate(TABLE_PROBLEMS, "table") if pg.query_selector("table") else []
    got["drawn"] = pg.evaluate("document.querySelectorAll('.js-plotly-plot .main-svg').length")
    got["titles"] = pg.eval_on_selector_all(".modebar-btn", "bs => bs.map(b => b.getAttribute('data-title'))")
    got["labels"] = pg.eval_on_selector_all(".modebar-btn", "bs => bs.map(b => b.getAttribute('aria-label'))")
    # the page drawn into an image: the window's part always (a full page only for the docs: its
    # resize to the page's height redraws every figure, and nobody looked at it in a tmp folder)
    got["shot"] = pg.screenshot()
    if SHOTS and path in SHOT_NAMES:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(Path(SHOTS) / f"web-{SHOT_NAMES[path]}-{width}.png"), full_page=True)
    if path == "/":
        got["links"] = pg.eval_on_selector_all("nav a", "as => as.map(a => a.getAttribute('href'))")
    if path == SHOT_PAGES["compare"]:
        got["texts"] = {k: pg.text_content(k) for k in ("#what", "#tokenization", "#most-divergent", "#numbers")}
        pg.hover(".plotly-graph-div .main-svg")  # hovering shows the buttons that remain
        got["hovered_titles"] = pg.eval_on_selector_all(
            ".modebar-btn", "bs => bs.map(b => b.getAttribute('data-title'))"
        )
    if path == SHOT_PAGES["explore"]:
        got["cells"] = pg.evaluate(CELL_TEXTS, "#numbers table")
        if width == 390:
            got["cell_table"] = pg.evaluate(TABLE_PROBLEMS, "#numbers table")
            got["head_display"] = pg.eval_on_selector("#numbers tr.head", "r => getComputedStyle(r).display")
            got["cell_widths"] = pg.eval_on_selector_all(
                "#numbers tr:not(.head) td", "tds => tds.map(t => t.offsetWidth)"
            )
    if path == SHOT_PAGES["probe"]:
        got["note_overlaps"] = pg.evaluate(PROBE_NOTE_OVERLAPS)
    if path == SHOT_PAGES["trace"] and width == 390:
        got["domains"] = pg.evaluate(
            "(() => { const l = document.querySelector('.js-plotly-plot').layout;"
            " return [l.xaxis.domain, l.xaxis2.domain, l.yaxis.domain, l.yaxis3.domain]; })()"
        )
    if width == 1280 and path in NARROWED:  # a desktop window made narrow, then wide again
        first = pg.evaluate(FIGURE_LAYOUTS)
        narrowed = {}
        for size in (390, 1280):
            pg.set_viewport_size({"width": size, "height": 900})
            pg.wait_for_function(f"() => innerWidth === {size}")
            pg.wait_for_timeout(1000)  # the refit waits for the window to settle (150 ms), then plotly redraws
            narrowed[size] = (pg.evaluate(TOO_WIDE), pg.evaluate(FIT_PROBLEMS) if size == 390 else [])
        got["narrowed"] = narrowed
        got["layouts_again_as_first"] = pg.evaluate(FIGURE_LAYOUTS) == first
    if width == 1280 and path in (SHOT_PAGES[name] for name in MODEBAR_PAGES):
        got["clicks"] = _click_every_modebar_button(pg)
    got["all"] = tab.since(mark)  # loading, and narrowing and clicks where made
    return got


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_screenshots_of_every_page_at_phone_and_desktop_width(visit, width):
    """Every page at 390 px (a phone, mobile emulation: the viewport meta is what makes it lay out
    at 390 rather than 980) and at 1280 px, drawn into an image; nothing wider than the window, no
    request leaves. With CONTEXTLENS_WEB_SCREENSHOTS=folder full-page shots are written there (docs/figures)."""
    for name, path in SHOT_PATHS.items():
        seen = visit(path, width)
        assert seen["viewport_meta"], name
        assert seen["inner_width"] == width, name
        assert seen["scroll_width"] <= width + 1, f"{name} at {width} px lays out {seen['scroll_width']} px wide"
        assert seen["shot"][:8] == b"\x89PNG\r\n\x1a\n" and len(seen["shot"]) > 1000, name
        assert seen["all"]["leaks"] == [], (name, seen["all"]["leaks"])


def test_the_layer_slider_redraws_the_explorer_at_that_layer(page, server):
    page.goto(f"{server}/explore?words=bank&permutations=20")
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=BROWSER_WAIT_MS)
    assert page.get_attribute("#f-layer", "max") == "6"  # minilm: hidden states 0..6
    page.evaluate("window.notReloaded = true")
    page.fill("#f-layer", "2")  # a range input: fill sets the value and fires input: drawn in the page
    page.wait_for_function("() => document.querySelector('#view-fig-0').textContent.includes('cosine at layer 2')")
    assert "layer=2" in page.url and page.evaluate("window.notReloaded === true")


def test_the_pages_draw_under_their_content_security_policy(page, server):
    """The CSP and frame headers are on the page, and nothing on it breaks them (plotly draws)."""
    messages: list[str] = []
    page.on("console", lambda m: messages.append(m.text))
    response = page.goto(f"{server}/attention?s=The+[bank]+approved+the+loan.&layer=2&head=1")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=BROWSER_WAIT_MS)
    page.fill("#f-layer", "3")  # the slider's handler (page.js) redraws under the policy too
    page.wait_for_function("() => document.querySelector('#view-fig-2').textContent.includes('Layer 3, head 1')")
    assert "layer=3" in page.url
    assert [m for m in messages if "Content Security Policy" in m] == []


def test_no_modebar_button_can_send_a_figure_off_the_machine(visit):
    """Offline means one click cannot leak either: plotly.js's "Share chart..." button (an upload to
    Plotly's cloud) is not on any figure, and hovering shows the buttons that remain."""
    seen = visit(SHOT_PAGES["compare"], 1280)
    titles = seen["hovered_titles"]
    assert titles, "the modebar is drawn"
    assert not [t for t in titles if t and ("Share" in t or "Chart Studio" in t or "Cloud" in t)], titles
    assert seen["all"]["leaks"] == []


def _no_reload_marker(page) -> None:
    page.evaluate("window.notReloaded = true")


def test_keyboard_moves_the_slider_four_steps_with_no_reload_and_no_5xx(page, server):
    statuses: list[int] = []
    page.on("response", lambda r: statuses.append(r.status))
    page.goto(f"{server}/explore?words=bank+bat&permutations=50")
    page.wait_for_selector("#view-fig-0 .main-svg", timeout=BROWSER_WAIT_MS)
    _no_reload_marker(page)
    requests_before = len(statuses)
    page.focus("#f-layer")
    for step in range(4):  # 6 -> 2, one arrow key each
        page.keyboard.press("ArrowLeft")
        expected = 5 - step
        page.wait_for_function(
            f"() => document.querySelector('#view-fig-0').textContent.includes('cosine at layer {expected}')"
        )
        assert page.evaluate("document.activeElement.id") == "f-layer"  # focus stays where it was
    assert page.evaluate("window.notReloaded === true")  # the same document: no reload
    assert "layer=2" in page.url  # the URL still reproduces the view
    assert page.text_content("output[for=f-layer]") == "2"
    assert "layer 2, ranked by spread" in page.text_content("#view-numbers")
    assert len(statuses) == requests_before  # nothing fetched per step
    assert [s for s in statuses if s >= 500] == []
    url = page.url
    page.goto(url)  # the replaced URL opens the same view
    page.wait_for_selector("#view-fig-0 .main-svg", timeout=BROWSER_WAIT_MS)
    assert page.input_value("#f-layer") == "2" and "cosine at layer 2" in page.text_content("#view-fig-0")


def test_the_head_picker_redraws_the_token_map_in_the_page(page, server):
    page.goto(f"{server}/attention?s=The+[bank]+approved+the+loan.&layer=4&head=0")
    page.wait_for_selector("#view-fig-2 .main-svg", timeout=BROWSER_WAIT_MS)
    _no_reload_marker(page)
    page.focus("#f-head")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.querySelector('#view-fig-2').textContent.includes('Layer 4, head 1')")
    assert "head=1" in page.url and page.evaluate("window.notReloaded === true")
    assert "layer 4, head 1" in page.text_content("#view-numbers")
    # rollout and axis titles are on the page, and the target row is outlined
    assert "Attention rollout" in page.text_content("#view-fig-1")
    assert "from (attending token)" in page.text_content("#view-fig-2")
    assert page.evaluate("document.querySelectorAll('#view-fig-2 .shapelayer path').length") >= 1


BAT = [
    "animal | A [bat] flew out of the cave at dusk.",
    "animal | The [bat] hung upside down from the branch.",
    "animal | A fruit [bat] ate the ripe figs.",
    "sport | He swung the cricket [bat] hard.",
    "sport | She bought a new wooden [bat] for the match.",
    "sport | The [bat] cracked when it hit the ball.",
]


def _cell(page, word: str, column: str) -> str:
    return page.evaluate(
        """([word, column]) => {
            const t = document.querySelector('#view-numbers table');
            const head = [...t.querySelectorAll('tr:first-child th')].map(h => h.textContent);
            const row = [...t.querySelectorAll('tr')].find(r => r.children[1] && r.children[1].textContent === word);
            return row.children[head.indexOf(column)].textContent;
        }""",
        [word, column],
    )


def test_mini_project_1_own_sentences_on_the_explorer(page, server):
    """Mini-project 1 on the page: three sentences for each of two senses of one word, typed into
    the explorer, and the gap and p read from the page's table equal the API's."""
    page.goto(f"{server}/explore")
    page.fill("#f-words", "")
    page.fill("#f-s", "\n".join(BAT))
    page.fill("#f-permutations", "200")
    page.click("#go")
    page.wait_for_selector("#view-fig-0 .main-svg", timeout=BROWSER_WAIT_MS)
    assert page.query_selector("#error") is None
    gap, p, senses = _cell(page, "bat", "gap"), _cell(page, "bat", "p"), _cell(page, "bat", "senses")
    api = page.request.post(f"{server}/api/explore", data={"sentences": BAT, "permutations": 200}).json()
    (word,) = api["words"]
    assert (gap, p, senses) == (f"{word['gap']:+.3f}", f"{word['p_value']:.4f}", "2")
    assert api["source"] == "your sentences"
    page.fill("#f-s", "animal | A [bat flew.")  # a bad line: the message names the field and the line
    page.click("#go")
    error = page.text_content("#error")
    assert error.startswith("error: `sentences` line 1: unbalanced markers") and "--" not in error


PAIRS = [
    "cup mug", "car bus", "dog cat", "king queen", "happy glad", "river stream", "money cash", "bank shore",
    "light lamp", "big large", "fast quick", "cold ice", "bread butter", "doctor nurse", "teacher school",
    "sun moon", "tree forest", "book novel", "phone call", "hot warm",
]  # fmt: skip


def test_mini_project_2_twenty_word_pairs_on_the_rank_page(page, server):
    page.goto(f"{server}/rank")
    page.fill("#f-pairs", "\n".join(PAIRS))
    page.click("#go")
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=BROWSER_WAIT_MS)
    tau = page.text_content("#tau")
    api = page.request.post(f"{server}/api/rank", data={"pairs": PAIRS}).json()
    assert len(api["pairs"]) == 20
    assert f"Kendall τ-b = {api['kendall_tau_b']:.4f}" in tau and f"{api['inversions']} of" in tau
    assert page.evaluate("document.querySelectorAll('#numbers table tr').length") == 21  # header + 20 pairs
    page.fill("#f-pairs", "cup mug tea")
    page.click("#go")
    assert page.text_content("#error").startswith("error: `pairs` line 1: 'cup mug tea' is not two words")


def test_every_page_says_what_it_shows_and_its_numbers_beside_the_figures(page, server, visit):
    texts = visit(SHOT_PAGES["compare"], 1280)["texts"]
    assert texts["#what"].startswith("The cosine between")
    assert "tokens:" in texts["#tokenization"]
    assert texts["#most-divergent"].startswith("most divergent layer:")
    assert "random words (mean)" in texts["#numbers"]
    page.goto(f"{server}/trace?sentence=The+river+[bank]+flooded.&top=4")
    numbers = page.text_content("#numbers")
    assert "1-3. tokens, ids and input rows" in numbers and "2924" in numbers  # bank's id in minilm's vocabulary
    assert "(top 4, head mean)" in numbers  # top changes what is shown


def test_the_quiz_shuffles_per_session_keeps_answers_and_scores(page, server):
    def orders() -> list[list[str]]:
        return [
            page.eval_on_selector_all(f"#quiz-{i} .options input", "xs => xs.map(x => x.value)") for i in range(1, 6)
        ]

    right = ["2", "2", "3", "2", "2"]  # lesson.QUIZ's right options, 1-based
    for seed in range(1, 6):
        page.goto(f"{server}/lesson?seed={seed}")
        places = [o.index(r) for o, r in zip(orders(), right, strict=True)]
        assert set(places) == {0, 1, 2} and max(places.count(k) for k in range(3)) <= 2, (seed, places)
    page.goto(f"{server}/lesson")
    first = orders()
    page.goto(f"{server}/lesson")
    assert orders() == first  # one shuffle per browser session (a session cookie)
    page.check("#quiz-1 input[name=a1][value='2']")
    page.click("#check-1")
    page.wait_for_selector("#quiz-1 #verdict")
    page.check("#quiz-2 input[name=a2][value='1']")
    page.click("#check-2")
    page.wait_for_function("() => document.querySelector('#quiz-score').textContent.includes('1 right of 2 answered')")
    page.reload()  # answers kept for the session
    page.wait_for_function("() => document.querySelector('#quiz-score').textContent.includes('1 right of 2 answered')")
    assert page.is_checked("#quiz-1 input[name=a1][value='2']") and page.text_content("#quiz-1 #verdict") == "Right."


def test_neighbors_runs_the_typed_word_and_refuses_a_word_with_an_analogy(page, server):
    page.goto(f"{server}/neighbors")
    page.fill("#f-word", "cat")
    page.click("#go")
    assert "cat" in page.text_content("#result") and page.query_selector("#error") is None
    page.fill("#f-analogy", "man:king::woman")
    page.click("#go")
    assert "not both" in page.text_content("#error")


def test_the_favicon_is_served_from_here(page, server, visit):
    response = page.request.get(f"{server}/favicon.ico")
    assert response.status == 200 and response.headers["content-type"] == "image/x-icon"
    assert response.body()[:4] == b"\x00\x00\x01\x00"  # an ICO
    assert visit("/compare", 1280)["loaded"]["failed"] == []  # no answer of 400 or more to the page's requests


# the centre in the window of a figure's modebar button (by its place in the bar), or null where
# another element lies on top of it there (plotly's notifier, below)
BUTTON_CENTRE = """(f, i) => {
  const b = f.querySelectorAll('.modebar-btn')[i], r = b.getBoundingClientRect();
  const x = r.left + r.width / 2, y = r.top + r.height / 2, top = document.elementFromPoint(x, y);
  return top && top.closest('.modebar-btn') === b ? [x, y] : null;
}"""
# Each Download click shows notes in plotly's notifier for about 4 s ("Preparing image", "Image
# download succeeded - NAME"), stacked down from the window's top right to 380 px and more: the next
# figures' buttons lay under them and were clicked the slow way (Playwright's element click waits
# them out: 0.13 CPU s a click against 0.03 for the mouse's). Each figure's top is scrolled below the
# notes with room for one more (the previous figure's "succeeded" may come after), and its
# Download button is clicked last, after the buttons its own notes would cover.
BELOW_THE_NOTIFIER = """f => {
  const n = document.querySelector('.plotly-notifier');
  window.scrollBy(0, f.getBoundingClientRect().top - (n ? n.getBoundingClientRect().bottom : 0) - 100);
  return [...f.querySelectorAll('.modebar-btn')].map(b => (b.getAttribute('data-title') || '').startsWith('Download'));
}"""


def _click_every_modebar_button(pg) -> int:
    """Hover each figure and click every button of its modebar; returns the clicks made. A click is
    the mouse's own, at the button's centre, where the button is the element on top just before the
    click (else Playwright's element click, which waits until it can be clicked)."""
    clicks = 0
    for k in range(len(pg.query_selector_all(".js-plotly-plot"))):
        fig = pg.query_selector_all(".js-plotly-plot")[k]
        if not fig.is_visible():
            continue
        downloads = fig.evaluate(BELOW_THE_NOTIFIER)
        fig.hover()
        for b in sorted(range(len(downloads)), key=lambda b: downloads[b]):  # Download last
            centre = fig.evaluate(BUTTON_CENTRE, b)
            if centre is not None:
                pg.mouse.click(*centre)
                clicks += 1
                continue
            fig.hover()
            button = fig.query_selector_all(".modebar-btn")[b]
            with contextlib.suppress(Exception):  # a download button starts a download: local too
                button.click(timeout=2_000)
                clicks += 1
    return clicks


MODEBAR_PAGES = ["lesson", "compare", "explore", "attention", "probe", "trace", "rank"]


def test_clicking_every_modebar_button_with_the_network_cut_sends_nothing_away(visit, server):
    """Nothing that can leave the machine: every modebar button of every figure on the pages is
    clicked with every non-local request aborted; none is attempted."""
    total = 0
    for name in MODEBAR_PAGES:
        seen = visit(SHOT_PAGES[name], 1280)
        titles, labels = seen["titles"], seen["labels"]
        assert seen["drawn"] > 0, name
        assert None not in labels, (name, labels)  # a keyboard user hears what each button does
        assert not [t for t in titles if t and ("Share" in t or "Studio" in t or "Cloud" in t)], (name, titles)
        popups = seen["all"]["popups"]
        assert seen["all"]["leaks"] == [] and [u for u in popups if not u.startswith(("about:", server))] == []
        total += seen["clicks"]
    assert total > 50, total


def test_clicking_every_modebar_button_of_an_html_report_offline(browser, tmp_path):
    """The same for a written report page (reports/interactive.page, the report's head): opened from
    file:// with every other request aborted."""
    from contextlens.cli import main as _  # noqa: F401 - the CLI, in-process
    from tests.helpers import run_cli

    out = tmp_path / "compare.html"
    done = run_cli(
        "compare", "I sat on the river [bank].", "I opened a [bank] account.", "-m", "minilm", "--html", str(out)
    )
    assert done.returncode == 0, done.stderr
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, accept_downloads=True)
    leaks = abort_requests_leaving(context, lambda url: url.startswith("file://"))
    pg = context.new_page()
    pg.goto(out.as_uri())
    pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=BROWSER_WAIT_MS)
    assert pg.evaluate("document.querySelector('meta[name=viewport]') !== null")
    assert pg.evaluate("document.documentElement.scrollWidth") <= 391
    assert _click_every_modebar_button(pg) >= 5
    context.close()
    assert leaks == []


@pytest.fixture(scope="module")
def file_tabs(browser):
    """``file_tabs(width)``: the module's kept tab for written reports (file://, every other request a
    leak) at 390 or 1280 px: a file:// page and the server's are different sites, and each switch
    between them in one tab starts a renderer, as a new tab does."""
    with kept_tabs(browser, lambda url: url.startswith("file://"), width_kinds(WIDTHS)) as tab:
        yield tab


@pytest.fixture(scope="module")
def demo_report(file_tabs, demo_run):
    """``demo_report(width)``: what one visit of the demo's HTML report (``contextlens demo``, every
    section's figures; file://, every other request a leak) recorded at 390 or 1280 px in the kept
    report tab: every check of the report at one width reads this one visit (it was opened four times)."""
    out, folder = demo_run
    assert out.returncode == 0, out.stderr
    seen: dict[int, dict] = {}

    def record(width: int) -> dict:
        if width not in seen:
            tab = file_tabs(width)
            mark = tab.fresh()
            pg = tab.page
            pg.goto((folder / "report.html").as_uri())
            pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=BROWSER_WAIT_MS)
            pg.wait_for_selector("section table")
            got = {"tables": pg.evaluate(REPORT_TABLES), "figures": len(pg.query_selector_all(".js-plotly-plot"))}
            got["scroll_width"] = pg.evaluate("document.documentElement.scrollWidth")
            if width == 390:
                got["fitted"] = pg.evaluate("document.querySelectorAll('.js-plotly-plot[data-fitted]').length")
                got["fit"] = pg.evaluate(FIT_PROBLEMS)
                got["table_problems"] = pg.evaluate(TABLE_PROBLEMS, "section table")
            else:
                got["clicks"] = _click_every_modebar_button(pg)
            got["all"] = tab.since(mark)
            seen[width] = got
        return seen[width]

    return record


def test_clicking_every_modebar_button_of_the_demo_report_offline(demo_report):
    """The whole HTML report (`contextlens demo`, every section's figures) opened from file:// with
    every other request aborted: every modebar button of every figure clicked, none attempted."""
    seen = demo_report(1280)
    assert seen["figures"] >= 14
    assert seen["clicks"] >= 5 * seen["figures"]
    assert seen["all"]["leaks"] == []


FIT_PAGES = ["lesson", "compare", "explore", "attention", "probe", "trace", "rank", "same-sense", "attention-long"]
LONG = "The+crane+was+looking+for+fish+by+the+river+[bank]+today."  # a panel title that must wrap on a phone
FIT_ONLY = {"attention-long": f"/attention?s={LONG}&s=The+[crane]+lifted+the+steel+beams+onto+the+roof.&layer=6"}


def test_on_a_phone_every_figure_fits_its_box_and_its_title_clears_the_toolbar(visit):
    """At 390 px the two-panel figures stack their panels and the wide ones shrink their labels
    (reports/fit.js), so no figure scrolls sideways, in the page or in its own box, and no table is
    wider than its box (the wide ones are cards); every title sits below the toolbar and inside the figure."""
    problems = {}
    for name in FIT_PAGES:
        seen = visit(FIT_ONLY.get(name) or SHOT_PAGES[name], 390)
        assert seen["drawn"] > 0, name
        assert seen["scroll_width"] <= 391, name
        if found := seen["fit"] + seen["tables"]:
            problems[name] = found
    # two panels stacked: the trace's second panel lies below the first, both at the full width
    domains = visit(SHOT_PAGES["trace"], 390)["domains"]
    assert problems == {}
    assert domains[0] == domains[1] == [0, 1] and domains[3][1] < domains[2][0]


def test_a_report_on_a_phone_stacks_its_panels_and_keeps_its_numbers(file_tabs, tmp_path):
    """The same fitting in a written report (reports/interactive.page inlines fit.js): the trace's
    two panels at 390 px fit the window and show the same data as at 1280 px."""
    from tests.helpers import run_cli

    out = tmp_path / "trace.html"
    done = run_cli("trace", "The river [bank] flooded.", "-m", "minilm", "--html", str(out))
    assert done.returncode == 0, done.stderr
    data = "JSON.stringify(document.querySelector('.js-plotly-plot').data.map(t => [t.x, t.y, t.z]))"
    seen = {}
    for width in (390, 1280):  # a phone (mobile, touch) and a desktop window, both 844 px high
        tab = file_tabs(width)
        pg = tab.page
        tab.fresh()
        pg.set_viewport_size({"width": width, "height": 844})
        pg.goto(out.as_uri())
        pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=BROWSER_WAIT_MS)
        seen[width] = pg.evaluate(data)
        if width == 390:
            assert pg.evaluate("document.documentElement.scrollWidth") <= 391
            assert pg.evaluate(FIT_PROBLEMS) == []
        pg.set_viewport_size({"width": width, "height": WIDTHS[width]["height"]})
    assert seen[390] == seen[1280]  # only the layout changed


def test_the_demo_report_on_a_phone_fits_every_figure(demo_report):
    """The whole HTML report at 390 px: every figure fitted by the inlined fit.js (no 720 px panels
    scrolling in their boxes, no title under the toolbar)."""
    seen = demo_report(390)
    assert seen["fitted"] >= 14
    assert seen["scroll_width"] <= 391
    assert seen["fit"] == []


PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
CELL_TEXTS = "sel => [...document.querySelectorAll(sel + ' td')].map(td => td.textContent)"


def test_on_a_phone_the_explorer_summary_is_cards_that_fit_and_say_the_same(visit):
    """The explorer's summary has ten columns (526 px in a 374 px box at 390 px, it scrolled): below
    640 px each word is a card of "label: value" lines that fits the window; its cells say what the
    1280 px table's cells say, each named by its column's header."""
    wide, phone = visit(SHOT_PAGES["explore"], 1280), visit(SHOT_PAGES["explore"], 390)
    assert phone["cell_table"] == []
    assert phone["head_display"] == "none"
    cells = phone["cell_widths"]
    assert cells and min(cells) == max(cells) <= 374  # one cell a line, the card's width
    assert phone["cells"] == wide["cells"] and len(phone["cells"]) == 3 * 10  # three words, ten columns


REPORT_TABLES = """() => [...document.querySelectorAll('section table')].map(t => ({
  cards: t.classList.contains('cards'), columns: t.rows[0].cells.length,
  display: getComputedStyle(t).display, head: getComputedStyle(t.rows[0]).display,
  lines: [...t.rows].slice(1).map(r => new Set([...r.cells].map(td => td.offsetTop)).size),
  named: [...t.querySelectorAll('td')].every(td =>
    getComputedStyle(td, '::before').content === JSON.stringify(td.dataset.label + ': ')),
  texts: [...t.querySelectorAll('td')].map(td => td.textContent)}))"""


def test_on_a_phone_the_demo_reports_wide_tables_are_cards_and_none_scrolls_sideways(demo_report):
    """The report's tables were their own scrolling boxes (display: block): at 390 px the cost table
    was 540 px and the static methods' 921 px in 374. Now a table of five columns or more is a card
    table there (each row a card of "label: value" lines, every cell named by its column's header), no
    table is wider than its box, and the cells say what they say at 1280 px, where every table is an
    ordinary one (its header row shown, each row's cells side by side on one line)."""
    phone = demo_report(390)
    assert phone["table_problems"] == []
    assert phone["scroll_width"] <= 391
    seen = {width: demo_report(width)["tables"] for width in (390, 1280)}
    wide, desk = seen[390], seen[1280]
    assert [t["texts"] for t in wide] == [t["texts"] for t in desk] and len(desk) == 5
    assert all(t["display"] == "table" and t["head"] == "table-row" and set(t["lines"]) == {1} for t in desk)
    cards = [t for t in wide if t["cards"]]
    assert [t["columns"] for t in cards] == [5, 9]  # the cost table and the static methods'
    assert all(t["cards"] == (t["columns"] >= 5) for t in wide)
    assert all(t["head"] == "none" and t["named"] and set(t["lines"]) == {t["columns"]} for t in cards)


PROBE_NOTE_OVERLAPS = """() => {
  const d = document.querySelector('.js-plotly-plot'), hit = (a, b) =>
    a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const notes = [...d.querySelectorAll('.annotation')].filter(a => a.textContent.startsWith('random words'));
  if (notes.length !== 1) return [`${notes.length} notes`];
  const note = notes[0].getBoundingClientRect(), out = [];
  d.querySelectorAll('.barlayer .point path, .barlayer text').forEach((b, i) => {
    if (hit(note, b.getBoundingClientRect())) out.push(`bar part ${i}: ${b.textContent || 'bar'}`);
  });
  return out;
}"""


def test_the_probe_charts_random_words_note_clears_its_bars(visit):
    """The note that names the grey band sat at the band's top, over the bars that rise above it (on a
    phone over most of them): it is above the plot now, at 390 px (wrapped) and at 1280 px."""
    for width in (390, 1280):
        seen = visit(SHOT_PAGES["probe"], width)
        assert seen["note_overlaps"] == [] and seen["fit"] == [], width


# elements wider than the window, or reaching past either side of it: "TAG#id.class (left..right px)";
# not plotly.js's own measuring svg, which it keeps at -10000 px, out of sight
TOO_WIDE = """() => [...document.querySelectorAll('body *')].flatMap(e => {
  const r = e.getBoundingClientRect(), name = e.className.baseVal ?? e.className;
  if (!r.width || (r.right <= innerWidth + 1 && r.left >= -1) || e.closest('#js-plotly-tester')) return [];
  return [`${e.tagName}${e.id ? '#' + e.id : ''}.${name} (${Math.round(r.left)}..${Math.round(r.right)} px)`];
})"""


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_every_navigation_link_with_no_parameters_opens_clean_at_both_widths(visit, width):
    """Every link of the navigation bar, opened bare as a learner's first click does: no answer
    (the page, its scripts, figures and favicon) of status 400 or more, no element wider than the
    window, no console error or uncaught exception. (The same-sense link answered 500 on every
    first visit, and no test opened every link.)"""
    links = visit("/", width)["links"]
    assert "/lesson" in links and "/model-view" in links and len(links) >= 10, links
    problems = {}
    for link in links:
        seen = visit(link, width)
        loaded = seen["loaded"]
        found = ([f"status {seen['status']}"] if seen["status"] >= 400 else []) + loaded["failed"] + loaded["errors"]
        found += [f"wider than the window: {w}" for w in seen["too_wide"]]
        if seen["scroll_width"] > width + 1:
            found.append(f"the page lays out {seen['scroll_width']} px wide")
        if found:
            problems[link] = found
    assert problems == {}


# the lesson's parts once they are in: each part's figures (drawn) and tables, and the quiz's questions
LESSON_PARTS = """() => ({
  parts: [...document.querySelectorAll('.lesson-part')].map(p => p.children.length),
  figures: document.querySelectorAll('.plotly-graph-div').length,
  drawn: document.querySelectorAll('.plotly-graph-div .main-svg').length,
  tables: document.querySelectorAll('.lesson-part table').length,
  questions: document.querySelectorAll('#quiz-form .question').length,
})"""
DONE = "() => (document.getElementById('work-status') || {}).textContent.startsWith('done in')"
SHOW_EVIDENCE = (
    "() => document.querySelectorAll('.evidence[hidden]').forEach(e => { e.hidden = false; contextlensFit.show(e); })"
)
EVERY_FIGURE_DRAWN = (
    "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.querySelector('.main-svg'))"
)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_the_lesson_sent_first_then_its_parts_opens_clean_at_both_widths(tabs, server, width, monkeypatch):
    """The lesson's page first (web/lesson.py: every section's text, the status line, an empty part per
    section and one for the quiz), its parts fetched from /result/<token> into their places: once the
    status line says "done", every part holds what the whole page holds there (its figures drawn, its
    tables, the quiz's questions); no answer of status 400 or more, no console error, nothing wider
    than the window, and at 390 px every figure fitted to its box (the parts come after fit.js ran)."""
    from contextlens.web import deferred, lesson

    monkeypatch.setattr(deferred, "SHOW_PAGE_AFTER_S", 0)  # every visit is sent first, as a model's first one
    tab = tabs(width)
    pg = tab.page
    mark = tab.fresh()
    answer = pg.goto(f"{server}/lesson")
    first = answer.text()
    assert answer.status < 400 and 'data-result="/result/' in first, first[:2000]
    assert '<div class="lesson-part" id="lesson-part-1"></div>' in first  # sent before its parts
    pg.wait_for_function(DONE, timeout=BROWSER_WAIT_MS)
    tab.settle()
    # the quiz's evidence, hidden until its question is answered, is drawn when shown (fit.js holds
    # it back): every box shown as an answer shows it, so every figure of the parts is drawn and checked
    pg.evaluate(SHOW_EVIDENCE)
    pg.wait_for_function(EVERY_FIGURE_DRAWN, timeout=BROWSER_WAIT_MS)
    pg.wait_for_timeout(300)  # plotly's resize to the figure's box (page.js) is asynchronous
    got = pg.evaluate(LESSON_PARTS)
    fit = pg.evaluate(FIT_PROBLEMS) if width == 390 else []
    wide = pg.evaluate(TOO_WIDE)
    scroll = pg.evaluate("document.documentElement.scrollWidth")
    whole = pg.request.get(f"{server}/lesson").text()  # not a browser's Accept: the whole page at once
    seen = tab.since(mark)
    failed, errors, leaks = seen["failed"], seen["errors"], seen["leaks"]
    assert 0 not in got["parts"] and len(got["parts"]) == len(lesson.SECTIONS) + 1, got  # and the quiz
    assert got["figures"] == whole.count('class="plotly-graph-div"') > 0 and got["drawn"] >= got["figures"], got
    assert got["tables"] == whole.count("<table") > 0 and got["questions"] == whole.count('class="question"') > 0
    assert failed == [] and errors == [] and leaks == []
    assert wide == [] and scroll <= width + 1 and fit == [], (wide, scroll, fit)


BATS_AND_CRANES = [
    *BAT,
    "bird | A [crane] waded through the marsh.",
    "bird | The [crane] flew south for the winter.",
    "machine | The [crane] lifted the steel beams.",
    "machine | A tall [crane] stood over the building site.",
]


def test_own_sentences_typed_beside_the_example_words_are_what_the_explorer_shows(page, server):
    """Issue 33 item 11, as a learner's first try: on /explore the example's words (bank bat) stay in
    their box while one's own sentences are typed; the page answers about the sentences (every word
    of them, as with the words box empty), not "no sentences for 'bank'"."""
    page.goto(f"{server}/explore")
    assert page.input_value("#f-words") == "bank bat"  # the example, left as it is
    page.fill("#f-s", "\n".join(BATS_AND_CRANES))
    page.fill("#f-permutations", "50")
    page.click("#go")
    page.wait_for_selector("#view-fig-0 .main-svg", timeout=BROWSER_WAIT_MS)
    assert page.query_selector("#error") is None
    rows = "#view-numbers table tr:not(.head)"
    shown = page.eval_on_selector_all(rows, "rs => rs.map(r => r.children[1].textContent)")
    api = page.request.post(f"{server}/api/explore", data={"sentences": BATS_AND_CRANES, "permutations": 50}).json()
    assert sorted(shown) == sorted(api["ranking"]) == ["bat", "crane"]
    assert f"{api['words'][0]['gap']:+.3f}" in page.text_content("#view-numbers")


FIGURE_LAYOUTS = "JSON.stringify([...document.querySelectorAll('.js-plotly-plot')].map(d => [d.layout, d.data.length]))"


NARROWED = ["/lesson", SHOT_PAGES["explore"]]


@pytest.mark.parametrize("path", NARROWED, ids=["lesson", "explore views"])
def test_a_page_narrowed_to_a_phone_after_it_was_drawn_refits_its_figures(visit, path):
    """A page drawn at 1280 px and then narrowed to 390 px (a desktop window made narrow, a tablet
    turned) kept its wide figures: their titles and panel titles reached past the window's edge. Now
    fit.js (and page.js for the slider pages' views) refits them from the figure as given; widened
    again, each figure is as it was first drawn."""
    seen = visit(path, 1280)
    assert seen["drawn"] > 0
    assert seen["narrowed"] == {390: ([], []), 1280: ([], [])}, seen["narrowed"]
    assert seen["layouts_again_as_first"]
