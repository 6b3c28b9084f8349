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
AUTO_RUNTIME = {"compare", "probe", "explore", "rank", "attention", "trace", "same-sense"}

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


def test_the_quiz_form_without_scripts_marks_every_answer_and_scores_them(client):
    """A browser without scripts sends the whole quiz form (``a1``..``a5``): every answer is marked
    and scored on the server by lesson.score, the scoring the page's script asks /api/quiz-score for."""
    import re

    page = client.get("/lesson", params={"seed": "1", "a1": "2", "a2": "1", "a3": "3", "check": "3"})
    assert page.status_code == 200
    score = re.search(r'<p id="quiz-score"[^>]*>([^<]*)</p>', page.text).group(1)
    assert score == "score: 2 right of 3 answered (5 questions)"
    for q, verdict in ((1, "Right."), (2, "Not quite"), (3, "Right.")):
        block = page.text.split(f'id="quiz-{q}"')[1].split('class="question"')[0]
        assert f'id="verdict">{verdict}' in block and 'class="evidence" hidden' not in block
        assert re.search(rf'name="a{q}" value="\d" checked', block)  # the answer stays picked
    assert 'id="verdict"' not in page.text.split('id="quiz-4"')[1]  # unanswered: not marked
    scored = client.post("/api/quiz-score", json={"answers": {"1": 2, "2": 1, "3": 3}}).json()
    assert scored["line"] == score and (scored["right"], scored["answered"], scored["questions"]) == (2, 3, 5)
    assert client.get("/lesson", params={"a1": "2"}).text.count('id="verdict"') == 1
    assert client.get("/lesson", params={"q": "3", "a": "1"}).text.count("score: 0 right of 1 answered") == 1
    for bad in ({"a9": "1"}, {"a1": "4"}, {"a1": "x"}):
        refused = client.get("/lesson", params=bad)
        assert refused.status_code == 422 and "1..5" in refused.json()["error"]
    assert client.post("/api/quiz-score", json={"answers": {"1": 4}}).status_code == 422
    assert client.post("/api/quiz-score", json={"answers": {"6": 1}}).status_code == 422


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


# --- your own data, the same document as the CLI's file ---------------------------------------
OWN_SENTENCES = [
    "animal | A [bat] flew out of the cave.",
    "animal | The [bat] hung from the branch.",
    "sport | He swung the cricket [bat].",
    "sport | The [bat] hit the ball.",
]


def test_own_sentences_on_explore_equal_the_cli_with_the_same_tsv_file(client, capsys, tmp_path):
    tsv = tmp_path / "bat.tsv"
    tsv.write_text("".join(f"bat\t{line.split(' | ')[0]}\t{line.split(' | ')[1]}\n" for line in OWN_SENTENCES))
    api = client.post("/api/explore", json={"sentences": OWN_SENTENCES, "permutations": 50}).json()
    code, out, _ = cli(
        ["explore", "--sentences", str(tsv), "--permutations", "50", "-m", "minilm", "--runtime", "torch", "--json"],
        capsys,
    )  # the server runs torch, as asked
    assert code == 0
    expected = json.loads(out)
    assert api["source"] == "your sentences" and expected["source"] == str(tsv)
    assert {**api, "source": None} == {**expected, "source": None}
    # a typed line in the file's own form is read the same way
    tabbed = [line.replace(" | ", "\t") for line in OWN_SENTENCES]
    assert client.post("/api/explore", json={"sentences": tabbed, "permutations": 50}).json() == api


CRANES = [
    "bird | A [crane] waded through the marsh.",
    "bird | The [crane] flew south.",
    "machine | The [crane] lifted steel beams.",
    "machine | A tall [crane] stood over the site.",
]


BANKS = [
    "money | I opened a [bank] account.",
    "money | The [bank] approved the loan.",
    "river | We walked along the river [bank].",
    "river | The [bank] of the stream was muddy.",
]


@pytest.mark.parametrize("own", [CRANES, BANKS + CRANES], ids=["another word", "bank and another word"])
def test_own_sentences_win_over_the_forms_example_words(client, minilm, own):
    """Regression (issue 33 item 11): the form's example words (bank bat) left in beside one's own
    sentences answered "...give your own in `sentences`", although they had; and where the own
    sentences were of "bank" too, "no sentences for 'bat'". They give way to the sentences, which are
    explored whole, as with `words` empty; words typed in their place are kept."""
    from contextlens.analyses.lesson.polysemy import explore
    from contextlens.data.sense_sentences import sense_sentences_from_lines

    body = {"sentences": own, "permutations": 20}
    answer = client.post("/api/explore", json={**body, "words": ["bat", "Bank"]})
    assert answer.status_code == 200, answer.text
    own_words = sorted({line.split("[")[1].split("]")[0] for line in own})
    assert sorted(answer.json()["ranking"]) == own_words and answer.json()["source"] == "your sentences"
    assert answer.json() == client.post("/api/explore", json=body).json()  # as with `words` left empty
    typed = client.post("/api/explore", json={**body, "words": ["crane"]})  # a word typed in: kept
    assert typed.status_code == 200 and typed.json()["ranking"] == ["crane"]
    edited = client.post("/api/explore", json={**body, "words": ["bat"]})  # not the example: respected, and said
    assert edited.status_code == 400 and "leave `words` empty" in edited.json()["error"]
    from contextlens.errors import InputError

    with pytest.raises(InputError) as caught:  # the analysis says what to do instead
        explore(["bank"], minilm, sense_sentences_from_lines(CRANES), permutations=20)
    assert "words there: crane" in str(caught.value) and "leave `words` empty" in str(caught.value)


def test_own_pairs_on_rank_equal_the_cli_with_the_same_tsv_file(client, capsys, tmp_path):
    pairs = ["cup mug", "car bus", "dog, cat"]
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("cup\tmug\ncar\tbus\ndog\tcat\n")
    api = client.post("/api/rank", json={"pairs": pairs}).json()
    code, out, _ = cli(["rank", str(tsv), "-m", "minilm", "--runtime", "torch", "--json"], capsys)  # as the server
    assert code == 0
    expected = json.loads(out)
    assert {**api, "source": None} == {**expected, "source": None} and api["source"] == "your pairs"


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        ("explore", {"sentences": ["animal | A [bat flew."]}, "`sentences` line 1: unbalanced markers"),
        ("explore", {"sentences": ["a | b | c | A [bat] flew."]}, "`sentences` line 1:"),
        ("explore", {"words": ["cat"]}, "give your own in `sentences`"),
        ("rank", {"pairs": ["cup mug tea"]}, "`pairs` line 1: 'cup mug tea' is not two words"),
        ("neighbors", {"word": "cat", "analogy": "man:king::woman"}, "not both"),
    ],
)
def test_own_data_errors_name_the_page_fields_never_a_cli_flag(client, path, body, message):
    answer = client.post(f"/api/{path}", json=body)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert message in error and "--" not in error, error


def test_limits_on_own_data_are_422(client):
    too_many = client.post("/api/rank", json={"pairs": ["a b"] * 101})
    assert too_many.status_code == 422 and "pairs" in too_many.json()["error"]
    assert client.post("/api/explore", json={"sentences": ["x [bat]."] * 61}).status_code == 422


def test_the_explorer_at_another_layer_equals_a_run_at_that_layer(minilm):
    """The slider's views come from one result (polysemy.Exploration.at_layer): each equals a run at
    that layer, PCA included."""
    from contextlens.analyses.lesson.polysemy import explore

    top = explore(["bank", "bat"], minilm, layer=-1, permutations=50)
    for layer in (0, 2):
        assert top.at_layer(layer).to_dict() == explore(["bank", "bat"], minilm, layer=layer, permutations=50).to_dict()


def test_slider_pages_carry_every_view_and_the_numbers(client):
    page = client.get("/explore?words=bank&permutations=20&layer=3").text
    assert '<script type="application/json" id="views">' in page
    views = json.loads(page.split('id="views">', 1)[1].split("</script>", 1)[0].replace("<\\/", "</"))
    assert views["current"] == "layer=3" and sorted(views["views"]) == [f"layer={k}" for k in range(7)]
    assert "layer 3, ranked by spread" in page  # the current view's numbers, before any script runs
    attention = client.get("/attention?s=The+[bank]+flooded.&layer=2&head=1").text
    views = json.loads(attention.split('id="views">', 1)[1].split("</script>", 1)[0].replace("<\\/", "</"))
    assert len(views["views"]) == 6 * 12 and views["current"] == "layer=2&head=1"
    assert len(views["figures"]) == 2 + 6 * 12  # the two per-layer heatmaps once, a token map per head
    rank = client.get("/rank?layer=3").text
    views = json.loads(rank.split('id="views">', 1)[1].split("</script>", 1)[0].replace("<\\/", "</"))
    assert sorted(views["views"]) == [f"layer={k}" for k in range(7)] and views["current"] == "layer=3"
    at_two = client.post("/api/rank", json={"layer": 2}).json()
    assert (
        f"Kendall τ-b = <b>{at_two['kendall_tau_b']:.4f}</b>" in views["numbers"][views["views"]["layer=2"]["numbers"]]
    )


def test_the_page_frame_fits_a_phone_and_has_a_favicon(client):
    page = client.get("/compare").text
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert '<link rel="icon" href="/favicon.ico">' in page and 'src="/static/page.js"' in page
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/x-icon"
    assert client.get("/static/page.js").headers["content-type"].startswith("text/javascript")


def test_the_quiz_right_answer_is_not_the_giveaway_longest_option():
    """Passed 4/5 by always taking the longest option before; now at most 2 right answers are longest,
    and no place wins more than 2 of 5 in any shuffle (lesson.option_orders)."""
    from contextlens.analyses.lesson.quiz import QUIZ, option_orders

    longest = [len(q.options[q.right]) == max(len(o) for o in q.options) for q in QUIZ]
    assert sum(longest) <= 2
    for seed in range(200):
        places = [order.index(q.right) for q, order in zip(QUIZ, option_orders(seed), strict=True)]
        assert max(places.count(k) for k in range(3)) <= 2, (seed, places)


def _decoded(x):
    """A plotly JSON value with numpy arrays as plain lists (plotly writes them as base64 ``bdata``)."""
    import base64

    import numpy as np

    if isinstance(x, dict) and "bdata" in x:
        arr = np.frombuffer(base64.b64decode(x["bdata"]), dtype=np.dtype(x["dtype"]))
        return (arr.reshape([int(k) for k in str(x["shape"]).split(",")]) if "shape" in x else arr).tolist()
    return x


def _same_figure(a, b, path: str = "") -> None:
    a, b = _decoded(a), _decoded(b)
    if isinstance(a, dict):
        assert set(a) == set(b), (path, set(a) ^ set(b))
        for k in a:
            _same_figure(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same_figure(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert abs(a - b) < 1e-3, (path, a, b)  # the views round to 4 decimals
    else:
        assert a == b, (path, a, b)


def test_the_fast_views_draw_the_figures_a_run_at_that_setting_draws(minilm):
    """web/views.py swaps values into drawn figures instead of drawing 35-72 anew: every swapped
    figure equals the one drawn for that layer (and head) from scratch."""
    from dataclasses import replace

    from contextlens.reports.figure_registry import interactive_figures
    from contextlens.web import views
    from contextlens.web.runs import AttentionRequest, ExploreRequest, run_attention, run_explore

    def shown(doc, key):
        return [json.loads(doc["figures"][k]) for k in doc["views"][key]["figures"]]

    result = run_explore(ExploreRequest(words=["bank", "bat"], permutations=50), minilm, {})
    doc = views.page_views("explore", result)
    for layer in (0, 3):
        fresh = [json.loads(f.to_json()) for f in interactive_figures(result.at_layer(layer))]
        # the word figures; the gap-per-layer figure is one for all layers (its colours stay put)
        _same_figure(fresh[:-1], shown(doc, f"layer={layer}")[:-1])
    result = run_attention(
        AttentionRequest(sentences=["The [bank] approved the loan.", "The river [bank] flooded."]), minilm, {}
    )
    doc = views.page_views("attention", result)
    for layer, head in ((1, 0), (4, 7)):
        fresh = [json.loads(f.to_json()) for f in interactive_figures(replace(result, layer=layer, head=head))]
        _same_figure(fresh, shown(doc, f"layer={layer}&head={head}"))
