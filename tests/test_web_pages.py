"""The page records (web/pages.py): every page the app serves, its links, forms and guard come from
them, and a new page is one record."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient

from contextlens.web import pages as records
from contextlens.web.app import create_app
from contextlens.web.guard import Guard
from contextlens.web.page import Page
from contextlens.web.pages import PAGES, nav

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def client(minilm) -> TestClient:
    return TestClient(create_app("minilm"), base_url=LOCAL)


def _links(html: str, where: str) -> list[str]:
    block = re.search(rf"<{where}>(.*?)</{where}>", html, re.S).group(1)
    return re.findall(r'<a href="(/[^"]*)"', block)


def test_every_nav_link_and_every_listed_page_answers_200_with_no_query(client):
    home = client.get("/")
    assert home.status_code == 200
    assert _links(home.text, "nav") == [f"/{n}" for n in nav()]
    listed = _links(home.text, "ul")
    assert listed == [f"/{n}" for n in PAGES]  # the model view and the sense map are records too
    for path in dict.fromkeys(_links(home.text, "nav") + listed):
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.text[-500:])
        assert 'id="error"' not in answer.text, path


def test_each_page_opens_with_its_records_sentence_and_example(client):
    for page in PAGES.values():
        text = client.get(f"/{page.name}").text
        assert f"<h1>{html.escape(page.title)}</h1>" in text, page.name
        assert text.count('id="what"') == 1, page.name  # the record's sentence, or its own view's (model view)
        if page.what:
            assert f'<p class="what" id="what">{html.escape(page.what)}</p>' in text, page.name
        assert f'<form method="get" action="/{page.name}">' in text


def test_the_guards_empty_forms_are_the_records_that_show_an_unrun_example(minilm):
    app = create_app("minilm")
    (guard,) = [m for m in app.user_middleware if m.cls is Guard]
    forms = {f"/{p.name}" for p in PAGES.values() if p.first_visit == "form"}
    assert guard.kwargs["forms"] == forms and "/sense-map" in forms and "/model-view" not in forms


def test_no_index_served_shows_the_records_note_and_the_form(client):
    text = client.get("/search").text
    assert records.NO_INDEX in text and '<select id="f-index" name="index"></select>' in text
    served = TestClient(create_app("minilm", {"docs": "/nonexistent/docs"}), base_url=LOCAL).get("/search").text
    assert records.NO_INDEX not in served and "<option selected>docs</option>" in served


def test_a_new_page_is_one_record(minilm, monkeypatch):
    """A record added to PAGES (here: the neighbours analysis under another name, with its own sentence
    and example) is served whole: page, form, navigation, API, JSON, and the guard's empty forms."""
    from contextlens.web import runs

    page = Page(
        "nearest", "Nearest words", "The nearest words to one word in a static model.",
        runs.NeighborsRequest, runs.run_neighbors, example={"word": "river", "top": 3},
    )  # fmt: skip
    monkeypatch.setitem(PAGES, page.name, page)
    client = TestClient(create_app("minilm"), base_url=LOCAL)
    first = client.get("/nearest")
    assert first.status_code == 200 and 'value="river"' in first.text and page.what in first.text
    assert '<a href="/nearest">nearest</a>' in first.text.split("</nav>")[0]
    shown = client.get("/nearest", params={"word": "bank", "top": 2})
    api = client.post("/api/nearest", json={"word": "bank", "top": 2}).json()
    assert shown.status_code == 200 and api == client.get("/nearest.json?word=bank&top=2").json()
    assert api == client.post("/api/neighbors", json={"word": "bank", "top": 2}).json()
    assert [n["word"] for n in api["neighbors"]][0] in shown.text
    assert client.get("/nearest", headers={"sec-fetch-site": "cross-site"}).status_code == 200  # an empty form
    assert client.get("/nearest?word=bank", headers={"sec-fetch-site": "cross-site"}).status_code == 403
