"""Issue 35's bad inputs outside the pgvector and corpus folders: each one gets one clear line
(exit code 2 from the CLI, a typed error from the API, a 4xx from the web), never a traceback, a
500 or a silently wrong number."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from contextlens.analyses.lesson.same_sense import check_same_word, same_sense
from contextlens.analyses.measures.layer_choice import layer_request
from contextlens.analyses.static.distill import check_arguments, distill_static
from contextlens.analyses.static.evaluate import evaluate_static
from contextlens.analyses.static.train import MAX_SEED, train_static
from contextlens.core import arguments
from contextlens.core.numerals import integer_text, is_digits
from contextlens.core.occurrences import locate
from contextlens.core.static_models import load_static
from contextlens.core.static_store import check_name
from contextlens.errors import ContextlensError, InputError, ParameterError, StaticModelError
from tests.helpers import run_cli

RIVER, MONEY, OTHER = "The river [bank] flooded.", "I opened a [bank] account.", "The [river] rose."
SUPERSCRIPT, ARABIC_THREE = "\u00b2", "\u0663"  # '²' passes str.isdigit() and fails int(); int() reads '٣' as 3


def _one_line(done) -> str:
    """The CLI's answer to a mistake: exit code 2 and one ``error:`` line, no traceback."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def _api_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert isinstance(exc.value, ContextlensError) and "\n" not in message
    return message


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, minilm):
    """A small extraction folder of "bank" (minilm, layers 0 and 2), served as ``demo``."""
    from contextlens.analyses.corpus.extract import extract_corpus

    tmp = tmp_path_factory.mktemp("issue35")
    lines = [
        "The river bank was muddy.",
        "We sat on the grassy bank.",
        "The canoe reached the far bank.",
        "The bank raised its rates.",
        "She opened an account at the bank.",
        "The bank approved the loan.",
    ]
    (tmp / "c.txt").write_text("\n".join(lines) + "\n")
    extract_corpus(str(tmp / "c.txt"), ["bank"], tmp / "x", model="minilm", layers=[0, 2], chunk_chars=120)
    return tmp / "x"


@pytest.fixture(scope="module")
def client(minilm, corpus) -> TestClient:
    from contextlens.web.app import create_app

    return TestClient(create_app("minilm", corpora={"demo": str(corpus)}), base_url="http://127.0.0.1")


# --- 1. a Unicode digit passes str.isdigit() but not int() --------------------------------


def test_numbers_as_text_take_ascii_digits_only():
    assert SUPERSCRIPT.isdigit() and ARABIC_THREE.isdigit()  # what made the old checks pass
    assert not is_digits(SUPERSCRIPT) and not is_digits(ARABIC_THREE) and not is_digits("") and not is_digits(None)
    assert is_digits("042") and not is_digits("-4") and not is_digits("1_0")
    assert [integer_text(t) for t in ("7", " -3 ", "+2", SUPERSCRIPT, ARABIC_THREE, "1_000", "2.5", "", "-")] == [
        7, -3, 2, None, None, None, None, None, None
    ]  # fmt: skip
    assert integer_text("-3", signed=False) is None and integer_text("9" * 5000) is None  # not int()'s ValueError


@pytest.mark.parametrize("text", [SUPERSCRIPT, ARABIC_THREE, "1_0"])
def test_layer_text_with_a_non_ascii_digit_is_refused(text):
    with pytest.raises(InputError, match="`layer` must be auto or a layer number"):
        layer_request(text)


def test_cli_senses_k_superscript_is_one_line(tmp_path):
    line = _one_line(run_cli("senses", "induce", str(tmp_path), "--word", "bank", "--k", SUPERSCRIPT))
    assert "--k" in line and "auto or a number between 1 and 8" in line


@pytest.mark.parametrize("text", [SUPERSCRIPT, ARABIC_THREE])
def test_cli_layer_with_a_non_ascii_digit_is_one_line(text):
    line = _one_line(run_cli("same-sense", RIVER, MONEY, "-m", "minilm", "--quick", "--layer", text))
    assert "--layer must be auto or a layer number" in line


def test_vectors_file_header_with_a_superscript_is_a_static_model_error(tmp_path):
    path = tmp_path / "sup.txt"
    path.write_text(f"2 {SUPERSCRIPT}\nbank 0.1\n")
    for name in (str(path), f"word2vec:{path}"):  # guessed, and the format given
        with pytest.raises(StaticModelError):
            load_static(name)


def test_web_superscript_digits_are_4xx_not_500(client):
    r = client.post("/api/sense-map", json={"corpus": "demo", "word": "bank", "k": SUPERSCRIPT})
    assert r.status_code == 400 and "`k` must be auto or a number" in r.json()["error"], r.text
    page = client.get("/sense-map", params={"corpus": "demo", "word": "bank", "layer": SUPERSCRIPT})
    assert page.status_code == 200, page.text  # the map at its default layer, not a 500
    lesson = client.get("/lesson", params={"seed": SUPERSCRIPT})
    assert lesson.status_code == 200, lesson.text[:300]


# --- 2. static train --seed past numpy's range -----------------------------------------------


def test_train_seed_is_range_checked_with_its_limit(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("We sat on the river bank.\n")
    line = _one_line(run_cli("static", "train", str(corpus), "--name", "w35", "--seed", str(2**32)))
    assert "--seed must be between 0 and 4294967295" in line
    with pytest.raises(ParameterError, match="seed must be between 0 and 4294967295"):
        train_static(str(corpus), name="w35", seed=MAX_SEED + 1)


# --- 3. same-sense on two different words -----------------------------------------------------


def test_same_sense_refuses_two_different_words(client):
    with pytest.raises(InputError) as exc:
        same_sense(RIVER, OTHER, "minilm", size="quick")
    message = _api_line(exc)
    assert "'bank' and 'river'" in message and "bracket the same word in both sentences" in message
    line = _one_line(run_cli("same-sense", RIVER, OTHER, "-m", "minilm", "--quick"))
    assert "'bank' and 'river'" in line
    r = client.post("/api/same-sense", json={"sentences": [RIVER, OTHER], "quick": True})
    assert r.status_code == 400 and "'bank' and 'river'" in r.json()["error"]


@pytest.mark.parametrize(
    ("first", "second"),
    [("The [Bank] closed.", MONEY), ("The river [banks] flooded.", MONEY), ("We [ran] home.", "They [run] fast.")],
    ids=["case", "plural", "irregular"],
)
def test_forms_of_one_word_count_as_the_same_word(first, second):
    check_same_word(locate(first), locate(second))  # no error


# --- 4. made model names that mean something else -------------------------------------------


@pytest.mark.parametrize(
    ("name", "says"),
    [("none", "reserved"), ("NONE", "reserved"), ("GLOVE-50D", "glove-50d, in another case"), ("MiniLM", "minilm")],
)
def test_made_model_names_that_collide_are_refused(name, says):
    with pytest.raises(ParameterError, match=says):
        check_name(name)
    line = _one_line(run_cli("static", "train", "lee", "--name", name))
    assert line.startswith("error: --name ") and says in line


# --- 5. --buckets with word2vec ----------------------------------------------------------------


def test_buckets_with_word2vec_is_refused():
    line = _one_line(run_cli("static", "train", "lee", "--name", "w35", "--buckets", "5000"))
    assert "--buckets is fastText's" in line and "--method fasttext" in line and "`" not in line
    with pytest.raises(ParameterError, match="buckets is fastText's"):
        train_static("lee", "word2vec", name="w35", buckets=5000)


# --- 6. eval static with a teacher named twice ------------------------------------------------


def test_eval_static_refuses_a_repeated_teacher(minilm):
    line = _one_line(run_cli("eval", "static", "-m", "minilm", "-m", "minilm", "--quick"))
    assert "--model names teacher 'minilm' twice" in line
    with pytest.raises(ParameterError, match="teachers names teacher 'minilm' twice"):
        evaluate_static(["glove-50d"], [minilm, "minilm"], size="quick")


# --- 7. distill --pca-dims past the hidden size; batch sizes ---------------------------------


def test_distill_pca_dims_past_the_hidden_size_is_refused(minilm):
    line = _one_line(run_cli("static", "distill", "minilm", "--name", "d35", "--pca-dims", "1000"))
    assert "--pca-dims must be at most 384, the hidden size of minilm" in line
    with pytest.raises(ParameterError, match="at most 384"):
        check_arguments(1000, 1e-4, 256, minilm)
    with pytest.raises(ParameterError, match="pca_dims must be at most 384"):
        distill_static(minilm, name="d35", pca_dims=1000)  # before the vocabulary is encoded


def test_batch_sizes_have_a_stated_limit():
    line = _one_line(run_cli("static", "distill", "minilm", "--name", "d35", "--batch-size", str(10**12)))
    assert f"--batch-size must be between 1 and {arguments.MAX_BATCH_SIZE}" in line
    with pytest.raises(ParameterError, match="batch_size must be between 1 and"):
        arguments.batch_size(10**12)
    assert arguments.batch_size(arguments.MAX_BATCH_SIZE) == arguments.MAX_BATCH_SIZE


@pytest.mark.parametrize(
    "args",
    [
        ("static", "train", "lee", "--name", "w35", "--buckets", "5000"),
        ("static", "train", "lee", "--name", "w35", "--seed", str(2**32)),
        ("static", "train", "lee", "--name", "none"),
        ("static", "distill", "minilm", "--name", "d35", "--pca-dims", "1000"),
        ("eval", "static", "-m", "minilm", "-m", "minilm"),
        ("same-sense", RIVER, OTHER, "-m", "minilm"),
    ],
    ids=["buckets", "seed", "name-none", "pca-dims", "teacher-twice", "two-words"],
)
def test_these_refusals_come_before_any_weights_load(tmp_path, args):
    from test_lazy import _fresh

    done, imported = _fresh(tmp_path, *args)
    assert imported == [], f"{args} imported {imported}"
    _one_line(done)


# --- 8. booleans and integers of the right type -----------------------------------------------


@pytest.mark.parametrize(
    ("name", "body", "field"),
    [
        ("attention", {"sentences": [RIVER], "layer": True}, "layer"),
        ("trace", {"sentence": RIVER, "top": False}, "top"),
        ("trace", {"sentence": RIVER, "exclude_special": "no"}, "exclude_special"),
        ("same-sense", {"sentences": [RIVER, MONEY], "quick": "no"}, "quick"),
        ("explore", {"words": ["bank"], "permutations": True}, "permutations"),
    ],
)
def test_web_fields_take_real_booleans_and_integers(client, name, body, field):
    r = client.post(f"/api/{name}", json=body)
    assert r.status_code == 422 and r.json()["error"].startswith(f"{field}: "), r.text


def test_web_quiz_numbers_are_not_booleans(client):
    assert client.post("/api/quiz", json={"question": True, "answer": 1}).status_code == 422
    assert client.post("/api/quiz-score", json={"answers": {"1": True}}).status_code == 422
    assert client.post("/api/quiz-score", json={"answers": {"1": 2}}).status_code == 200  # JSON keys are text


def test_web_pages_still_read_numbers_and_switches_from_the_query(client):
    """The page's query is text: its numbers and checkboxes are typed before the strict request."""
    r = client.get("/trace", params={"sentence": RIVER, "top": "2", "exclude_special": "on"})
    assert r.status_code == 200, r.text[:300]
    bad = client.get("/trace", params={"sentence": RIVER, "top": ARABIC_THREE})
    assert bad.status_code == 422 and "top" in bad.text


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: train_static("lee", name="w35", force="no"), "force must be True or False, got str 'no'"),
        (lambda: train_static("lee", name="w35", sg="yes"), "sg must be True or False"),
        (lambda: distill_static("minilm", name="d35", force="no"), "force must be True or False"),
        (lambda: evaluate_static(["glove-50d"], wic_teachers="no"), "wic_teachers must be True or False"),
        (lambda: arguments.flag(1, "force"), "force must be True or False, got int 1"),
    ],
    ids=["train-force", "train-sg", "distill-force", "wic-teachers", "flag-int"],
)
def test_api_switches_must_be_booleans(call, says):
    with pytest.raises(ParameterError) as exc:
        call()
    assert says in _api_line(exc)


# --- 9. messages in the face's own words -------------------------------------------------------


def test_cli_says_force_as_its_flag(tmp_path, monkeypatch):
    """A made model already there: "pass --force", not the API's "pass `force`"."""
    monkeypatch.setenv("CONTEXTLENS_CACHE", str(tmp_path / "cache"))
    from contextlens.core.static_store import PROVENANCE, VECTORS, made_root

    made = made_root() / "w35"
    made.mkdir(parents=True)
    (made / PROVENANCE).write_text("{}")
    (made / VECTORS).write_text("")
    line = _one_line(run_cli("static", "train", "lee", "--name", "w35"))
    assert "already a made model" in line and "pass --force" in line and "`force`" not in line


def test_parameter_errors_raised_under_as_flags_name_the_flags():
    from contextlens.cli.params import as_flags

    with pytest.raises(ParameterError) as exc, as_flags(teachers="--model", force="--force"):
        raise ParameterError("teachers", "names 'x' twice; or pass `force`")
    assert str(exc.value) == "--model names 'x' twice; or pass --force"


@pytest.mark.parametrize(
    "args", [("static", "distill", "glove-50d", "--name", "d35"), ("cka", "-m", "glove-50d")], ids=["distill", "cka"]
)
def test_a_static_model_where_a_contextual_one_goes_says_no_missing_option(args):
    line = _one_line(run_cli(*args))
    assert "'glove-50d' is a static model, not a contextual one" in line and "pass it as" not in line, line


def test_evaluate_static_takes_one_model_name_as_a_list_of_one():
    result = evaluate_static("glove-50d", teachers=[], size="quick")  # was: unknown static model 'g'
    assert "glove-50d" in {r["system"] for r in result.rows}
    with pytest.raises(ParameterError, match="statics must be a model or a list of models"):
        evaluate_static(None)


# --- 10. wrong calls of the Python API ----------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: evaluate_static(["glove-50d"], size="huge"), "size must be 'full' or 'quick', got 'huge'"),
        (lambda: train_static(None, name="w35", sg="yes"), "sg must be True or False"),
        (lambda: train_static(None, name="w35"), "corpus must name a corpus"),
        (lambda: train_static(42, name="w35"), "corpus must name a corpus"),
    ],
    ids=["evaluate-size", "train-sg-corpus-none", "train-corpus-none", "train-corpus-int"],
)
def test_api_wrong_calls_are_one_typed_line(call, says):
    with pytest.raises(ContextlensError) as exc:
        call()
    assert says in _api_line(exc)


def test_same_sense_json_of_one_word_in_two_forms_carries_no_different_words_note(minilm):
    answer = same_sense("The river [banks] flooded.", MONEY, minilm, size="quick")
    assert not any("different words" in n for n in answer.notes)
    assert json.loads(json.dumps(answer.to_dict()))["sentences"][0]["word"] == "banks"


def test_an_option_of_one_value_given_twice_is_refused_not_the_last_kept():
    """Regression (issue 33): `compare ... -m minilm -m mpnet --json` reported mpnet alone, as if
    that were the two models' comparison. compare, explore and same-sense now take two models side
    by side (tests/test_two_models.py); a command of one model refuses a second -m."""
    line = _one_line(run_cli("trace", "The [bank] x.", "-m", "minilm", "-m", "mpnet", "--json"))
    assert line.startswith("error: --model was given 2 times") and "compare, explore and same-sense" in line
    line = _one_line(run_cli("explore", "bank", "--permutations", "10", "--permutations", "20", "-m", "minilm"))
    assert line.startswith("error: --permutations was given 2 times")
    assert run_cli("compare", "The [bank] x.", "A [bank] y.", "-m", "minilm", "--static", "none").returncode == 0
