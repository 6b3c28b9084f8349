"""The new views in a real browser: the attention model view and the sense map over a served corpus.

Headless Chromium (Playwright) on a real server of minilm with a real extraction folder served as
``demo``; every request that leaves 127.0.0.1 is aborted and fails the test. The tests click what a
user clicks: a head's strip, a token button, a dot of the map, the slider's arrow keys.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.helpers import (
    BROWSER_WAIT_MS,
    CHROMIUM,
    FIT_PROBLEMS,
    TABLE_PROBLEMS,
    free_port,
    fresh_page,
    kept_server_tabs,
    run_cli,
    served_in_thread,
)

SHOTS = os.environ.get("CONTEXTLENS_WEB_SCREENSHOTS")  # folder: also write the docs screenshots
needs_chromium = pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")

RIVER = [
    "The river bank was muddy after the rain.",
    "We walked along the grassy bank of the stream.",
    "Fish hid under the bank where the water was deep.",
    "The canoe drifted toward the far bank.",
    "Reeds grew thick on the bank of the pond.",
    "The children sat on the bank and watched the ducks.",
]
MONEY = [
    "The bank raised its interest rates.",
    "She opened an account at the bank.",
    "The bank approved the loan on Monday.",
    "He robbed a bank in the city centre.",
    "The central bank cut rates again.",
    "My bank charges a fee for transfers.",
]
SENTENCE = "The river [bank] flooded."


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, minilm) -> Path:
    from contextlens.analyses.corpus.extract import extract_corpus

    tmp = tmp_path_factory.mktemp("sense-map")
    (tmp / "c.txt").write_text("\n".join(RIVER + MONEY) + "\n")
    extract_corpus(str(tmp / "c.txt"), ["bank"], tmp / "x", model="minilm", layers=[0, 2, 4, 6], chunk_chars=120)
    return tmp / "x"


# "bank" with nothing around it but stop words: the cluster these form has no distinctive word
BARE = ["It is the bank.", "This is our bank.", "That was his bank.", "Here is a bank.", "It was her bank.",
        "This is the bank."]  # fmt: skip


@pytest.fixture(scope="module")
def bare_corpus(tmp_path_factory, minilm) -> Path:
    from contextlens.analyses.corpus.extract import extract_corpus

    tmp = tmp_path_factory.mktemp("bare")
    (tmp / "c.txt").write_text("\n".join(RIVER + BARE) + "\n")
    extract_corpus(str(tmp / "c.txt"), ["bank"], tmp / "x", model="minilm", layers=[0, 2, 4, 6], chunk_chars=120)
    return tmp / "x"


@pytest.fixture(scope="module")
def server(minilm, corpus, bare_corpus):
    from contextlens.web.app import create_app

    with served_in_thread(create_app("minilm", corpora={"demo": str(corpus), "stopwords": str(bare_corpus)})) as url:
        yield url


@pytest.fixture()
def client(minilm, corpus):
    from fastapi.testclient import TestClient

    from contextlens.web.app import create_app

    return TestClient(create_app("minilm", corpora={"demo": str(corpus)}), base_url="http://127.0.0.1")


PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


@pytest.fixture(scope="module")
def tabs(browser, server):
    """``tabs("desk")`` (1280 x 900) or ``tabs("phone")`` (390 x 844, mobile, touch): the module's one
    kept tab of that kind (helpers.KeptTab: a new tab per test cost Chromium a renderer and plotly.js
    compiled again); every request that leaves 127.0.0.1 is recorded there."""
    kinds = {"desk": {"viewport": {"width": 1280, "height": 900}}, "phone": PHONE}
    with kept_server_tabs(browser, server, kinds) as tab:
        yield tab


@pytest.fixture()
def page(tabs):
    """The kept 1280 px tab, its session forgotten (helpers.fresh_page); a request of the test that
    leaves 127.0.0.1 fails it."""
    with fresh_page(tabs("desk")) as pg:
        yield pg


# --- the model view ---------------------------------------------------------------------------


def test_model_view_cells_are_the_apis_per_head_rows(client, minilm):
    page = client.get("/model-view", params={"sentence": SENTENCE})
    assert page.status_code == 200
    doc = client.post("/api/attention", json={"sentences": [SENTENCE]}).json()["sentences"][0]
    assert page.text.count('class="cell" id="cell-') == minilm.num_layers * minilm.num_heads == 72
    import re

    row = re.search(r'id="cell-3-5"[^>]*data-row="([^"]+)"', page.text).group(1)
    assert [float(v) for v in row.split(",")] == pytest.approx(doc["per_head"][2][5], abs=1e-4)
    assert "6 layers x 12 heads = 72 heads of minilm" in page.text
    top = re.search(r'<table id="model-view-top">.*?</table>', page.text).group(0)
    assert top.count("<tr>") == 7  # a header and one row per layer, the numbers beside the strips
    first = max(range(len(doc["tokens"])), key=lambda i: doc["head_mean"][0][i])
    assert f"<tr><td>1</td><td>{doc['tokens'][first]} {doc['head_mean'][0][first]:.2f}" in top
    assert 'class="tok target"' in page.text  # the target's token button is marked


def test_model_view_bad_marker_is_one_line_beside_the_input(client):
    page = client.get("/model-view", params={"sentence": "The river bank flooded."})
    assert page.status_code == 400 and "no [marked] target in" in page.text
    assert "Traceback" not in page.text and "--word" not in page.text  # the page's field is `word`


@needs_chromium
def test_model_view_click_a_token_then_a_cell_opens_that_heads_token_map(page, server):
    page.goto(f"{server}/model-view?sentence=The+river+[bank]+flooded.")
    assert len(page.query_selector_all("a.cell")) == 72
    page.click("#tokens .tok:text-is('river')")
    assert page.get_attribute("#model-view", "data-sel") == "2"  # [CLS] the river: its bar is lit in every head
    assert page.eval_on_selector("#cell-1-0 rect.t2", "r => getComputedStyle(r).fill") == "rgb(220, 38, 38)"
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / "web-model-view.png"), full_page=True)
    page.click("#cell-3-5")
    page.wait_for_selector(".plotly-graph-div .main-svg", timeout=BROWSER_WAIT_MS)
    url = urlsplit(page.url)
    query = parse_qs(url.query)
    assert url.path == "/attention" and query["layer"] == ["3"] and query["head"] == ["5"]
    assert query["s"] == [SENTENCE]


@needs_chromium
def test_model_view_on_a_phone_scales_every_head_to_the_width_and_keeps_hover(tabs, server):
    """At 390 px the 72 strips (76 px each, the grid 1,109 px in a 374 px box) scale to their cells
    (SVG viewBox): the grid fits, every strip lies inside the window, a strip under the pointer is its
    own link (outlined on hover, its title the tooltip) and a token click still lights its bars."""
    tab = tabs("phone")
    mark = tab.fresh()
    pg = tab.page
    pg.goto(f"{server}/model-view?sentence=The+river+[bank]+flooded.")
    assert pg.evaluate(TABLE_PROBLEMS, "#model-view") == []
    strips = pg.eval_on_selector_all(
        ".mv .strip", "ss => ss.map(s => { const r = s.getBoundingClientRect(); return [r.left, r.right, r.width]; })"
    )
    assert len(strips) == 72 + 2 * 6 and all(left >= 0 and right <= 390 and w >= 15 for left, right, w in strips)
    cell = pg.query_selector("#cell-3-5")
    cell.scroll_into_view_if_needed()  # below the fold at 844 px (the kind line and a longer nav above it)
    box = cell.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    assert pg.evaluate("([x, y]) => document.elementFromPoint(x, y).closest('a.cell').id", [x, y]) == "cell-3-5"
    pg.mouse.move(x, y)
    assert pg.eval_on_selector("#cell-3-5", "a => getComputedStyle(a).outlineStyle") == "solid"
    assert cell.get_attribute("title").startswith("layer 3, head 5: ")
    pg.click("#tokens .tok:text-is('river')")
    bar = pg.eval_on_selector("#cell-1-0 rect.t2", "r => [getComputedStyle(r).fill, r.getBoundingClientRect().width]")
    assert bar[0] == "rgb(220, 38, 38)" and bar[1] > 0
    assert tab.since(mark)["leaks"] == []


# --- the sense map ----------------------------------------------------------------------------


def test_sense_map_api_every_layer_with_senses_and_coordinates(client):
    doc = client.post("/api/sense-map", json={"corpus": "demo", "word": "bank"}).json()
    assert [entry["layer"] for entry in doc["layers"]] == [0, 2, 4, 6]
    assert len(doc["occurrences"]) == 12 and doc["model"] == "minilm"
    top = doc["layers"][-1]
    assert len(top["x"]) == len(top["y"]) == len(top["labels"]) == 12
    # minilm at layer 6 splits the river banks from the money banks
    assert top["k"] == 2 and len(set(top["labels"][:6])) == 1 and set(top["labels"][:6]) != set(top["labels"][6:])
    assert doc["occurrences"][0]["marked"] == "The river [bank] was muddy after the rain."


def test_a_corpus_is_named_never_a_path(client, corpus):
    for name in (str(corpus), "/etc", "../x"):
        answer = client.post("/api/sense-map", json={"corpus": name, "word": "bank"})
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert error.startswith("no corpus named ") and error.endswith("is served; served corpora: demo")
        assert str(corpus) not in error  # the folder's path is never echoed
    answer = client.post("/api/corpus-search", json={"corpus": "/tmp", "like": SENTENCE})
    assert answer.status_code == 400 and "served corpora: demo" in answer.json()["error"]
    missing = client.post("/api/sense-map", json={"corpus": "demo", "word": "cat"}).json()["error"]
    assert missing == "'cat' was not extracted in demo; its words: bank"  # the served name, not the folder
    assert client.post("/api/sense-map", json={"corpus": "demo", "word": "bank", "k": "x"}).status_code == 400


def test_corpus_search_endpoint_is_the_clis_document(client, corpus):
    from contextlens.analyses.corpus.occurrence_search import search_occurrences

    web = client.post("/api/corpus-search", json={"corpus": "demo", "like": SENTENCE, "layer": 4, "top": 5}).json()
    api = search_occurrences(corpus, SENTENCE, 4, 5).to_dict()
    assert [h["sentence"] for h in web["hits"]] == [h["sentence"] for h in api["hits"]]
    assert [h["cosine"] for h in web["hits"]] == pytest.approx([h["cosine"] for h in api["hits"]], abs=1e-6)
    assert web["folder"] == "demo" and api["folder"] == str(corpus)  # the web names the corpus, never its path
    for answer in (web, client.post("/api/sense-map", json={"corpus": "demo", "word": "bank"}).json()):
        text = str(answer)
        assert str(corpus) not in text and str(corpus.resolve()) not in text and str(corpus.parent) not in text


def test_a_shard_linked_out_of_the_served_folder_is_refused_not_opened(minilm, corpus, tmp_path):
    """A link named like a shard that points at a file outside the folder (the system's password
    hashes, in the report) was opened and only called "damaged"; now it is refused by name."""
    from fastapi.testclient import TestClient

    from contextlens.analyses.corpus.folder import shards
    from contextlens.web.app import create_app

    served = tmp_path / "served"
    shutil.copytree(corpus, served)
    secret = tmp_path / "secret.txt"
    secret.write_text("root:SECRETHASH:19000:0:99999:7:::\n")
    victim = shards(served)[0]
    victim.unlink()
    victim.symlink_to(secret)
    client = TestClient(create_app("minilm", corpora={"shared": str(served)}), base_url="http://127.0.0.1")
    for answer in (client.post("/api/corpus-search", json={"corpus": "shared", "like": SENTENCE}),
                   client.post("/api/sense-map", json={"corpus": "shared", "word": "bank"}),
                   client.get("/sense-map", params={"corpus": "shared", "word": "bank"})):  # fmt: skip
        assert answer.status_code == 400, answer.text[:300]
        assert "link to a file outside the folder" in answer.text and "SECRETHASH" not in answer.text
        assert str(tmp_path) not in answer.text
    cli = run_cli("corpus", "search", str(served), "--like", SENTENCE)
    assert cli.returncode == 2 and "link to a file outside the folder" in cli.stderr, cli.stderr
    assert len(cli.stderr.strip().splitlines()) == 1
    victim.unlink()
    victim.symlink_to(served / "manifest.json")  # a link inside the folder is the folder's own file
    assert shards(served)[0] == victim


def test_serve_refuses_a_corpus_that_is_not_an_extraction(tmp_path):
    result = run_cli("serve", "--port", str(free_port()), "--model", "minilm", "--corpus", f"x={tmp_path}")
    assert result.returncode == 2 and "is not a corpus extraction folder" in result.stderr
    assert "Traceback" not in result.stderr
    result = run_cli("serve", "--port", str(free_port()), "--corpus", "nofolder")
    assert result.returncode == 2 and "is not NAME=DIR" in result.stderr


@needs_chromium
def test_sense_map_slider_redraws_in_the_page_and_a_clicked_dot_lists_its_nearest(page, server):
    navigations: list[str] = []  # requests for a document: a reload would make one
    page.goto(f"{server}/sense-map?corpus=demo&word=bank")
    page.wait_for_selector("#sense-map .main-svg", timeout=BROWSER_WAIT_MS)
    page.on("request", lambda r: r.resource_type == "document" and navigations.append(r.url))
    page.evaluate("window.__same_page = true")
    assert page.text_content("#layer-out") == "layer 6"
    page.focus("#layer")
    for expected in ("layer 4", "layer 2", "layer 0", "layer 0"):
        page.keyboard.press("ArrowLeft")
        assert page.text_content("#layer-out") == expected
    assert "layer 0" in page.text_content("#sense-map .gtitle")
    assert page.evaluate("document.activeElement.id") == "layer" and navigations == []
    assert page.evaluate("window.__same_page") is True
    assert parse_qs(urlsplit(page.url).query)["layer"] == ["0"]  # the URL reproduces the view
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert page.text_content("#layer-out") == "layer 6" and navigations == []
    assert len(page.query_selector_all("#senses tr")) == 3  # a header and the two senses
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "web-sense-map.png"), full_page=True)
    # hover then click the first dot of the first sense: its sentence in the hover, then the nearest list
    box = page.query_selector_all("#sense-map .scatterlayer .trace .points path")[0].bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector("#sense-map .hoverlayer .hovertext", timeout=BROWSER_WAIT_MS)
    hover = page.text_content("#sense-map .hoverlayer .hovertext")
    assert "bank" in hover and any(hover.strip() in s or s.startswith(hover.strip()[:20]) for s in RIVER + MONEY)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector("#nearest-table", timeout=BROWSER_WAIT_MS)
    rows = page.query_selector_all("#nearest-table tr")[1:]
    assert len(rows) == 8
    first = rows[0].query_selector_all("td")
    assert first[0].text_content() == "1" and float(first[1].text_content()) == pytest.approx(1.0, abs=1e-3)
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "web-sense-map-nearest.png"), full_page=True)


@needs_chromium
def test_a_sense_with_no_distinctive_word_says_so_instead_of_a_blank_cell(page, server):
    """The six bare sentences ("It is the bank.") form a cluster of their own at layer 4 with no
    context word left once the target and stop words are out: the JSON keeps its empty list, the
    page says why none stands out (senses.NO_DISTINCTIVE_WORDS) rather than leave the cell blank."""
    from contextlens.analyses.corpus.senses import NO_DISTINCTIVE_WORDS

    answer = page.request.post(f"{server}/api/sense-map", data={"corpus": "stopwords", "word": "bank", "k": "2"})
    senses = {tuple(sorted(s["distinctive_words"])) for s in answer.json()["layers"][2]["senses"]}
    assert () in senses and len(senses) == 2  # layer 4: the bare cluster's list is empty, the other's not
    page.goto(f"{server}/sense-map?corpus=stopwords&word=bank&k=2&layer=4")
    page.wait_for_selector("#senses", timeout=BROWSER_WAIT_MS)
    cells = page.eval_on_selector_all("#senses tr td:nth-child(3)", "tds => tds.map(t => t.textContent)")
    assert len(cells) == 2 and "" not in cells and NO_DISTINCTIVE_WORDS in cells
    assert "canoe" in cells[1 - cells.index(NO_DISTINCTIVE_WORDS)]


def test_an_unlabelled_clusters_label_names_its_two_candidates():
    """Issue 36, item 2 on the page: below the margin a cluster has no synset, and the page says so
    with the two closest candidates, as `senses induce` does (one line, sense_labels.label_text)."""
    from contextlens.analyses.corpus.sense_labels import label_text

    candidates = [
        {"synset": "bank.n.01", "definition": "sloping land", "cosine": 0.41, "share": 0.5},
        {"synset": "bank.n.02", "definition": "a financial institution", "cosine": 0.405, "share": 0.5},
    ]
    line = label_text(None, candidates)
    assert line.startswith("unlabelled") and "bank.n.01 0.410 (sloping land)" in line and "bank.n.02 0.405" in line
    gloss = {"synset": "bank.n.01", "definition": "sloping land", "cosine": 0.41}
    assert label_text(gloss, candidates) == "bank.n.01: sloping land (0.410)"


@needs_chromium
def test_the_sense_tables_wordnet_cell_is_the_apis_label_candidates_and_all(page, server):
    answer = page.request.post(f"{server}/api/sense-map", data={"corpus": "demo", "word": "bank"}).json()
    from contextlens.analyses.corpus.sense_labels import label_text

    for layer in answer["layers"]:
        for s in layer["senses"]:
            assert s["label"] == label_text(s["gloss"], s["candidates"])
    for index, layer in enumerate(answer["layers"]):
        page.goto(f"{server}/sense-map?corpus=demo&word=bank&layer={layer['layer']}")
        page.wait_for_selector("#senses", timeout=BROWSER_WAIT_MS)
        cells = page.eval_on_selector_all("#senses tr td:nth-child(4)", "tds => tds.map(t => t.textContent)")
        assert cells == [s["label"] for s in layer["senses"]], (index, cells)
    unlabelled = [s["label"] for layer in answer["layers"] for s in layer["senses"] if s["gloss"] is None]
    print(f"{len(unlabelled)} unlabelled cluster(s) over the layers: {unlabelled}")


@needs_chromium
def test_the_sense_map_on_a_phone_fits_and_its_title_clears_the_toolbar(tabs, server):
    tab = tabs("phone")
    mark = tab.fresh()
    pg = tab.page
    pg.goto(f"{server}/sense-map?corpus=demo&word=bank")
    pg.wait_for_selector("#sense-map .main-svg", timeout=BROWSER_WAIT_MS)
    assert pg.evaluate("document.documentElement.scrollWidth") <= 391
    problems = pg.evaluate(FIT_PROBLEMS)
    senses = pg.evaluate(TABLE_PROBLEMS, "#senses")  # was 633 px in a 374 px box: cards now
    dot = pg.query_selector_all("#sense-map .scatterlayer .trace .points path")[0]
    dot.scroll_into_view_if_needed()
    box = dot.bounding_box()
    pg.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # its nearest occurrences
    pg.wait_for_selector("#nearest-table", timeout=BROWSER_WAIT_MS)
    nearest = pg.evaluate(TABLE_PROBLEMS, "#nearest-table")
    assert problems == [] and senses == [] and nearest == []
    assert tab.since(mark)["leaks"] == []


# --- the lesson's two new sections ------------------------------------------------------------


@needs_chromium
def test_the_lessons_kinds_and_cost_tables_show_and_fit_a_phone(tabs, server):
    texts = {}
    tab = tabs("desk")
    pg = tab.page
    for width in (1280, 390):  # a desktop window, then the same narrowed to 390 px before the page opens
        tab.fresh()
        pg.set_viewport_size({"width": width, "height": 900})
        pg.goto(f"{server}/lesson")
        # a slow lesson sends its text first and these tables after (web/deferred.py): wait for them (a
        # function: a bare expression is evaluated by eval() on each poll, which the page's CSP refuses)
        pg.wait_for_function(
            "() => document.querySelectorAll('#kinds tr').length > 0"
            " && document.querySelectorAll('#cost tr').length > 0",
            timeout=BROWSER_WAIT_MS,
        )
        kinds = pg.query_selector_all("#kinds tr")
        assert len(kinds) == 5  # a header and four kinds
        assert [c.text_content() for c in kinds[1].query_selector_all("td")][:4] == [
            "static word vector", "glove-50d", "one word type, any sentence", "50",
        ]  # fmt: skip
        assert len(pg.query_selector_all("#cost tr")) == 7
        # no table scrolls in its box (kinds was 975 px, cost 541, cost-measured 752 in 374): on a phone
        # each row is a card of "label: value" lines; the page itself is no wider than the window
        assert pg.evaluate(TABLE_PROBLEMS, "#kinds, #cost, #cost-measured") == []
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        texts[width] = pg.evaluate("[...document.querySelectorAll('#kinds td, #cost td')].map(t => t.textContent)")
        if SHOTS:
            Path(SHOTS).mkdir(parents=True, exist_ok=True)
            for name in ("kinds", "cost"):  # from the section's sentence to the end of its table, page coordinates
                top, bottom = pg.evaluate(
                    "n => [document.getElementById(n + '-what').getBoundingClientRect().top + scrollY,"
                    " document.getElementById(n).getBoundingClientRect().bottom + scrollY]",
                    name,
                )
                clip = {"x": 0, "y": top - 40, "width": width, "height": bottom - top + 50}
                pg.screenshot(path=str(Path(SHOTS) / f"web-lesson-{name}-{width}.png"), clip=clip, full_page=True)
    pg.set_viewport_size({"width": 1280, "height": 900})
    assert texts[390] == texts[1280]  # the cards say what the table says


NEW_PAGES = {
    "model-view": "/model-view?sentence=The+river+[bank]+flooded.",
    "sense-map": "/sense-map?corpus=demo&word=bank",
}


@pytest.mark.skipif(not SHOTS, reason="set CONTEXTLENS_WEB_SCREENSHOTS=folder to write the docs screenshots")
def test_screenshots_of_the_new_views_at_390_and_1280(browser, server):
    out = Path(SHOTS)
    out.mkdir(parents=True, exist_ok=True)
    for width in (390, 1280):
        context = browser.new_context(viewport={"width": width, "height": 900})
        pg = context.new_page()
        for name, path in NEW_PAGES.items():
            pg.goto(server + path)
            pg.wait_for_load_state("networkidle")
            pg.screenshot(path=str(out / f"web-{name}-{width}.png"), full_page=True)
        context.close()


def test_model_view_on_onnx_fp32_draws_the_lean_attention_graphs_weights(client, minilm_onnx):
    """An fp32 ONNX model has attention weights (the checked ONNX attention graph): the model view
    draws them, the same cells as the torch server's within the graph's tolerance (was one error line)."""
    import re

    from fastapi.testclient import TestClient

    from contextlens.web.app import create_app

    assert minilm_onnx.lean_attention
    page = TestClient(create_app("minilm", runtime="onnx"), base_url="http://127.0.0.1").get(
        "/model-view", params={"sentence": SENTENCE}
    )
    assert page.status_code == 200 and 'id="error"' not in page.text, page.text[-2000:]
    assert page.text.count('class="cell" id="cell-') == 72
    torch_page = client.get("/model-view", params={"sentence": SENTENCE}).text

    def row(text: str) -> list[float]:
        return [float(v) for v in re.search(r'id="cell-3-5"[^>]*data-row="([^"]+)"', text).group(1).split(",")]

    assert row(page.text) == pytest.approx(row(torch_page), abs=1e-3)


def test_model_view_refuses_a_model_without_attention_weights_in_one_line(minilm_onnx, monkeypatch):
    from contextlens.core.backbone import Backbone
    from contextlens.errors import InputError
    from contextlens.web.model_view import ModelViewRequest, run_model_view

    monkeypatch.setattr(Backbone, "lean_attention", property(lambda self: False))  # as int8 on ONNX Runtime
    with pytest.raises(InputError, match="--runtime torch"):
        run_model_view(ModelViewRequest(sentence=SENTENCE), minilm_onnx)
