"""The JSON API against the CLI: the same inputs give the same document; bad input is one 4xx line."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextlens.cli import main
from contextlens.web.app import create_app
from contextlens.web.runs import MAX_SENTENCES, MAX_TEXT

BANK = ["I sat on the river [bank].", "I opened a [bank] account."]


@pytest.fixture(scope="module")
def client(minilm) -> TestClient:
    return TestClient(create_app("minilm"), base_url="http://127.0.0.1")


def cli(args: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        main(args)
    except SystemExit as exc:
        code = exc.code or 0
    out, err = capsys.readouterr()
    return int(code), out, err


# the commands whose --runtime defaults to auto (ONNX Runtime)
AUTO_RUNTIME = {"compare", "probe", "explore", "rank", "attention", "trace"}

CASES = [
    ("compare", {"sentences": BANK}, ["compare", *BANK]),
    ("compare", {"sentences": BANK, "static": "none", "pooling": "first"}, ["compare", *BANK, "-s", "none",
                                                                          "--pooling", "first"]),
    ("attention", {"sentences": BANK, "layer": 2, "head": 1, "exclude_special": True},
     ["attention", *BANK, "--layer", "2", "--head", "1", "--exclude-special"]),
    ("probe", {"sentences": BANK, "anchors": ["shore", "money"]}, ["probe", *BANK, "--anchors", "shore", "money"]),
    ("trace", {"sentence": BANK[0], "top": 2}, ["trace", BANK[0], "-k", "2"]),
    ("explore", {"words": ["bank"], "permutations": 50, "layer": 3}, ["explore", "bank", "--permutations", "50",
                                                                      "--layer", "3"]),
    ("neighbors", {"analogy": "man:king::woman", "top": 3}, ["neighbors", "--analogy", "man:king::woman", "-k", "3"]),
    ("neighbors", {"word": "bank"}, ["neighbors", "bank"]),
    ("rank", {"top": 3}, ["rank", "-k", "3"]),
    ("same-sense", {"sentences": BANK, "quick": True}, ["same-sense", *BANK, "--quick"]),
    ("same-sense", {"sentences": BANK, "quick": True, "layer": "3"}, ["same-sense", *BANK, "--quick", "-l", "3"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "body", "args"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_api_returns_the_cli_json(client, capsys, name, body, args):
    response = client.post(f"/api/{name}", json=body)
    assert response.status_code == 200, response.text
    model = ["-m", "minilm"] if name != "neighbors" else []
    reference = ["--runtime", "torch"] if name in AUTO_RUNTIME else []  # the server runs torch, as asked
    code, out, err = cli([*args, "--json", *model, *reference], capsys)
    assert code == 0, err
    assert response.json() == json.loads(out)


@pytest.mark.parametrize(
    ("name", "body", "args"),
    [
        ("compare", {"sentences": ["The [bank called.", BANK[1]]}, ["compare", "The [bank called.", BANK[1]]),
        ("compare", {"sentences": [BANK[0]]}, ["compare", BANK[0]]),
        ("neighbors", {"analogy": "king-man"}, ["neighbors", "--analogy", "king-man"]),
        ("trace", {"sentence": "no target here"}, ["trace", "no target here"]),
        ("attention", {"sentences": BANK, "layer": 40}, ["attention", *BANK, "--layer", "40"]),
    ],
)
def test_api_refuses_what_the_cli_refuses_with_its_message(client, capsys, name, body, args):
    """The same message, the web naming the parameter (its field) where the CLI names its option."""
    from contextlens.cli import flags_for_parameters

    response = client.post(f"/api/{name}", json=body)
    code, _, err = cli([*args, "-m", "minilm"] if name != "neighbors" else args, capsys)
    assert code == 2 and response.status_code == 400
    assert err.strip() == f"error: {flags_for_parameters(response.json()['error'], args)}"
    assert "--" not in response.json()["error"]  # a web user typed no flag


@pytest.mark.parametrize(
    ("body", "limit"),
    [
        ({"sentences": BANK * (MAX_SENTENCES // 2 + 1)}, str(MAX_SENTENCES)),
        ({"sentences": ["x" * (MAX_TEXT + 1) + " [bank]", BANK[1]]}, str(MAX_TEXT)),
        ({"sentences": BANK, "colour": "red"}, "colour"),
    ],
)
def test_oversize_or_unknown_input_is_422_naming_the_limit(client, body, limit):
    response = client.post("/api/compare", json=body)
    assert response.status_code == 422
    assert limit in response.json()["error"] and "\n" not in response.json()["error"]


def test_health_search_and_quiz(client):
    assert client.get("/health").json()["status"] == "ok"
    refused = client.post("/api/search", json={"index": "../etc", "query": "money"})
    assert refused.status_code == 400 and "no index named" in refused.json()["error"]
    assert client.post("/api/quiz", json={"question": 1, "answer": 2}).json()["correct"] is True
    assert client.post("/api/quiz", json={"question": 1, "answer": 1}).json()["correct"] is False


def test_page_draws_the_same_result_and_offers_json_and_png(client):
    page = client.get("/compare", params=[("s", BANK[0]), ("s", BANK[1])])
    assert page.status_code == 200 and "plotly-graph-div" in page.text
    as_json = client.get("/compare.json", params=[("s", BANK[0]), ("s", BANK[1])])
    assert as_json.json() == client.post("/api/compare", json={"sentences": BANK}).json()
    png = client.get("/compare.png", params=[("s", BANK[0]), ("s", BANK[1])])
    assert png.headers["content-type"] == "image/png" and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    bad = client.get("/compare", params=[("s", "The [bank called."), ("s", BANK[1])])
    assert bad.status_code == 400 and 'id="error"' in bad.text and "unbalanced markers" in bad.text
    assert "Traceback" not in bad.text


def _bodies(schema: dict) -> st.SearchStrategy:
    """Any JSON object over the schema's field names (and one stranger): types and sizes unchecked."""
    values = st.one_of(
        st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=40),
        st.lists(st.text(max_size=30), max_size=4), st.just("The river [bank] flooded."),
    )  # fmt: skip
    names = list(schema.get("properties", {})) + ["unexpected"]
    return st.dictionaries(st.sampled_from(names), values, max_size=len(names))


def test_openapi_property_run_finds_no_5xx(client):
    """Random bodies for every POST endpoint of the OpenAPI schema: never a 5xx, always one JSON line."""
    spec = client.get("/openapi.json").json()
    components = spec["components"]["schemas"]
    endpoints = {
        path: components[ops["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]]
        for path, ops in spec["paths"].items()
        if "post" in ops
    }
    assert {"/api/compare", "/api/quiz", "/api/search"} <= set(endpoints)

    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(data=st.data())
    def check(data):
        path = data.draw(st.sampled_from(sorted(endpoints)))
        body = data.draw(_bodies(endpoints[path]))
        if path == "/api/explore" and isinstance(body, dict):  # a valid explore costs seconds: keep it small
            body = {**body, "permutations": 10, "words": ["bank"]}
        response = client.post(path, json=body)
        assert response.status_code < 500, (path, body, response.text)
        if response.status_code >= 400:
            assert "error" in response.json()

    check()
