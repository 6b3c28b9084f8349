"""The lesson page shows what it talks about (issue 33, items 5 and 6): section 1's three sentences
where its legend numbers them and the cosines behind its curve; section 2's token -> id -> row
table; what the served model is (a sentence-similarity fine-tune) on the lesson, explorer and model
view; section 4's fourth row said for what it is; and "(c) on search" leads to an index."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from contextlens.core.model_kinds import model_kind
from contextlens.web import lesson
from contextlens.web.app import create_app
from contextlens.web.pages import nav

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def client(minilm) -> TestClient:
    return TestClient(create_app("minilm"), base_url=LOCAL)


@pytest.fixture(scope="module")
def page(client) -> str:
    answer = client.get("/lesson")
    assert answer.status_code == 200
    return answer.text


def _section(text: str, number: int) -> str:
    """The HTML from section ``number``'s heading to the next heading of that level."""
    start = re.search(rf"<h2>{number}\. ", text).start()
    end = text.find("<h2>", start + 4)
    return text[start:end]


def _plain(fragment: str) -> str:
    fragment = re.sub(r"<(script|style)\b.*?</\1>", " ", fragment, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment)))


def test_section_1_lists_the_sentences_its_legend_numbers_with_the_cosines_of_the_api(client, page):
    one = _section(page, 1)
    pairs = set(re.findall(r"sentences (\d)-(\d)", one))  # the figure's legend
    assert pairs == {("1", "2"), ("1", "3"), ("2", "3")}
    listed = re.search(r"<ol class='sentences' id='tokenization'>(.*?)</ol>", one, re.S).group(1)
    items = [_plain(li).split(" tokens:")[0].strip() for li in re.findall(r"<li>(.*?)</li>", listed, re.S)]
    assert items == lesson.BANK  # numbered 1..3 in the legend's order
    doc = client.post("/api/compare", json={"sentences": lesson.BANK}).json()
    shown = re.findall(r"<td>(\d+)</td><td>(-?\d\.\d{3})</td>", one)
    assert [(int(layer), cos) for layer, cos in shown] == [(d["layer"], f"{d['cosine']:.3f}") for d in doc["layers"]]
    assert f"most divergent layer: <b>{doc['most_divergent_layer']}</b>" in one


def test_section_2_shows_the_token_id_row_table_of_the_trace_and_links_it(client, page):
    two = _section(page, 2)
    doc = client.post("/api/trace", json={"sentence": lesson.TRACE}).json()
    rows = re.findall(r"<tr(?: class=mark)?><td>(\d+)</td><td>([^<]*)</td><td>(\d+)</td><td>(\d+\.\d{3})</td>", two)
    assert rows == [
        (str(t["position"]), html.escape(t["display"]), str(t["id"]), f"{t['input_row_norm']:.3f}")
        for t in doc["tokens"]
    ]
    assert 'href="/trace?sentence=The+river+%5Bbank%5D+flooded."' in two


def test_the_lesson_explorer_and_model_view_say_the_model_is_a_sentence_similarity_fine_tune(client, page):
    line = model_kind("minilm").summary
    assert "fine-tuned for sentence similarity" in line
    explore = client.get("/explore", params={"words": "bank", "permutations": "20"}).text
    for name, text in (("lesson", page), ("explore", explore), ("model-view", client.get("/model-view").text)):
        assert text.count(f'<p class="dim" id="model-kind">{html.escape(line)}</p>') == 1, name


def test_the_model_view_is_in_the_navigation(client, page):
    assert "model-view" in nav()
    links = re.findall(r'<a href="(/[^"]*)"', re.search(r"<nav>(.*?)</nav>", page, re.S).group(1))
    assert "/model-view" in links and client.get("/model-view").status_code == 200


def test_section_4_says_why_its_table_has_a_fourth_row(page):
    four = _section(page, 4)
    heading = _plain(re.search(r"<h2>(.*?)</h2>", four).group(1))
    kinds = [_plain(k).strip() for k in re.findall(r"<tr><td[^>]*><b>(.*?)</b>", four)]
    assert len(kinds) == 4 and kinds[0].startswith("static")  # three of the model's kinds and the static vector
    assert "three kinds" in heading and "plus the static vector for contrast" in heading
    assert "The first row is not one of the three" in _plain(four)


def test_section_3s_search_commands_run_and_give_search_an_index(page, tmp_path, minilm):
    """The two command lines the lesson gives for "(c) on search" work as written: the build makes an
    index of a learner's text file, and a server started with that ``--index`` searches it."""
    import shlex

    from tests.helpers import run_cli

    three = _section(page, 3)
    build = shlex.split(html.unescape(re.search(r"<code id='index-build'>(.*?)</code>", three).group(1)))
    serve = shlex.split(html.unescape(re.search(r"<code id='index-serve'>(.*?)</code>", three).group(1)))
    docs = tmp_path / "DOCS.txt"
    docs.write_text("The bank approved the loan.\nWe walked along the river.\nInterest rates rose again.\n")
    folder = tmp_path / "my-index"
    args = [str(docs) if a == "DOCS.txt" else str(folder) if a == "my-index" else a for a in build[1:]]
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    assert serve[:2] == ["contextlens", "serve"]
    options = dict(zip(serve[2::2], serve[3::2], strict=True))
    name, served = options["--index"].split("=", 1)
    app = create_app(options["-m"], {name: str(tmp_path / served)})
    answer = TestClient(app, base_url=LOCAL).get("/search", params={"index": name, "query": "money and loans"})
    assert answer.status_code == 200 and "No index is served" not in answer.text
    assert "The bank approved the loan." in re.search(r'<table id="result">.*?</table>', answer.text, re.S).group(0)
