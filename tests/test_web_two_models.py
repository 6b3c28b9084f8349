"""Two models side by side on the compare page (``model_b``, issue 33): the API answers the CLI's
``compare … -m minilm -m mpnet --json``, the page shows both names, each answer and the CKA table,
and the second model is loaded once and kept."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from helpers import run_cli

MONEY, RIVER = "The [bank] called about my account.", "The river [bank] flooded last night."


def without_timings(value):
    """The document less its wall-clock seconds (the only field two runs may differ in)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


@pytest.fixture(scope="module")
def client(minilm, mpnet):
    from contextlens.web.app import create_app

    with TestClient(create_app("minilm"), base_url="http://127.0.0.1") as c:  # runtime torch, as the tests serve
        yield c


def test_the_api_answers_the_clis_two_model_document(client):
    answer = client.post("/api/compare", json={"sentences": [MONEY, RIVER], "model_b": "mpnet"})
    assert answer.status_code == 200, answer.text
    cli = run_cli("compare", MONEY, RIVER, "-m", "minilm", "-m", "mpnet", "--runtime", "torch", "--json")
    assert cli.returncode == 0, cli.stderr
    body = answer.json()
    assert body["models"] == ["minilm", "mpnet"] and "seconds" in body["cka"]
    assert without_timings(body) == without_timings(json.loads(cli.stdout))
    alone = client.post("/api/compare", json={"sentences": [MONEY, RIVER]}).json()
    assert "models" not in alone and alone == body["answers"][0]  # without model_b: one model, as before


def test_the_page_shows_both_models_and_the_cka_table(client):
    from contextlens.core.contextual_models import load_contextual

    page = client.get("/compare", params={"sentences": [MONEY, RIVER], "model_b": "mpnet"})
    assert page.status_code == 200, page.text[:500]
    shown = page.text  # not a browser: the whole page (web/deferred.py)
    sections = re.findall(r'<section class="two-models-answer"><h2>([^<]+)</h2>', shown)
    assert sections == ["minilm", "mpnet"]
    table = re.search(r'<table id="cka-matches".*?</table>', shown, re.S).group(0)
    rows = re.findall(r"<tr><td", table)
    assert len(rows) == load_contextual("minilm").num_layers + 1  # one per layer of minilm, 0..L
    assert shown.count('class="plotly-graph-div') >= 2 and 'id="two-models-figure"' in shown
    assert '<select id="f-model_b" name="model_b"><option></option><option selected>mpnet</option>' in page.text
    assert "<option>minilm</option>" not in page.text  # the served model is not offered as the second


def test_the_second_model_and_the_cka_are_kept_and_a_bad_name_is_one_line(client, monkeypatch):
    from contextlens.analyses.representations import cka
    from contextlens.core import contextual_models

    first = client.post("/api/compare", json={"sentences": [MONEY, RIVER], "model_b": "mpnet"})  # loaded by now
    before = contextual_models._load_once.cache_info()
    calls, real = [], cka.compare_layers
    monkeypatch.setattr(cka, "compare_layers", lambda *a, **k: calls.append(a) or real(*a, **k))
    again = client.post("/api/compare", json={"sentences": [MONEY, RIVER], "model_b": "mpnet"})
    after = contextual_models._load_once.cache_info()
    assert again.status_code == 200 and after.misses == before.misses  # no second load of mpnet
    assert calls == [] and again.json()["cka"] == first.json()["cka"]  # nor a second CKA: the kept one
    assert after.hits > before.hits  # it was asked for, and answered from what was kept
    for name, why in (("minilm", "other than minilm"), ("bert", "shipped encoders")):
        bad = client.post("/api/compare", json={"sentences": [MONEY, RIVER], "model_b": name})
        assert bad.status_code == 400 and why in bad.json()["error"] and "\n" not in bad.json()["error"], bad.text


def test_same_sense_side_by_side_is_the_clis_and_shows_both(client):
    body = {"sentences": [MONEY, RIVER], "quick": True, "model_b": "mpnet"}
    answer = client.post("/api/same-sense", json=body)
    assert answer.status_code == 200, answer.text
    cli = run_cli("same-sense", MONEY, RIVER, "-m", "minilm", "-m", "mpnet", "--quick", "--runtime", "torch", "--json")
    assert cli.returncode == 0, cli.stderr
    assert without_timings(answer.json()) == without_timings(json.loads(cli.stdout))
    page = client.get("/same-sense", params={"s": [MONEY, RIVER], "quick": "on", "model_b": "mpnet"})
    assert page.status_code == 200, page.text[:500]
    assert re.findall(r'<section class="two-models-answer"><h2>([^<]+)</h2>', page.text) == ["minilm", "mpnet"]
    assert '<table id="cka-matches"' in page.text


def test_explore_side_by_side_gives_each_model_its_own_profile(client):
    """Explore takes model_b as compare and same-sense do: each answer is that model's explore alone."""
    body = {"words": ["bank"], "permutations": 50, "model_b": "mpnet"}
    pair = client.post("/api/explore", json=body)
    assert pair.status_code == 200, pair.text
    doc = pair.json()
    assert doc["models"] == ["minilm", "mpnet"] and doc["question"] == "explore"
    for answer, name in zip(doc["answers"], ["minilm", "mpnet"], strict=True):
        assert answer["model"] == name
        assert without_timings(answer) == without_timings(run_explore_alone(name, body))
    page = client.get("/explore", params={"words": "bank", "permutations": 50, "model_b": "mpnet"})
    assert page.status_code == 200, page.text[:500]
    assert re.findall(r'<section class="two-models-answer"><h2>([^<]+)</h2>', page.text) == ["minilm", "mpnet"]
    assert '<select id="f-model_b" name="model_b"><option></option><option selected>mpnet</option>' in page.text


def run_explore_alone(name, body):
    from contextlens.core.contextual_models import load_contextual
    from contextlens.web.runs import ExploreRequest, run_explore

    req = ExploreRequest.model_validate({**body, "model_b": ""})
    return run_explore(req, load_contextual(name)).to_dict()
