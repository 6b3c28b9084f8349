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
