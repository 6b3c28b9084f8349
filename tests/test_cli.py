import json

import pytest

from tests.helpers import run_cli

FIN, RIVER = "The [bank] called about my account.", "The river [bank] flooded last night."


def check_user_error(result, fragment: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert fragment in lines[0]


@pytest.mark.parametrize(("model", "layers"), [("mpnet", 13), ("minilm", 7)])
def test_compare_json(model, layers, tmp_path):
    plot = tmp_path / "fig.png"
    result = run_cli("compare", FIN, RIVER, "--model", model, "--json", "--plot", str(plot))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["model"] == model and data["static_model"] == "glove-50d"
    assert [row["layer"] for row in data["layers"]] == list(range(layers))
    assert data["static_cosine"] == 1.0 and data["input_row_cosine"] == 1.0
    assert data["layers"][-1]["cosine"] < 0.9
    assert data["most_divergent_layer"] in range(layers)
    assert plot.stat().st_size > 10_000 and plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.cli_subprocess(
    "compare", "The bank called.", "The river bank flooded.", "--word", "bank", "--model", "minilm"
)
def test_compare_table_and_word_option(cli_subprocess):
    result = cli_subprocess  # smoke test: the real entry point in its own process (conftest)
    assert result.returncode == 0, result.stderr
    assert "most divergent layer" in result.stdout
    static_row = next(line for line in result.stdout.splitlines() if "static" in line and "│" in line)
    assert "1.0000" in static_row


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("compare", "The bank called.", "The river [bank] flooded."), "no [marked] target"),
        (("compare", "The [banks] called.", RIVER, "--word", "bank"), "[markers] and a word"),
        (("compare", "The banks called.", "The river bank.", "--word", "bank"), "close words in the text: banks"),
        (("compare", FIN, RIVER, "--model", "no-such-model"), "unknown model 'no-such-model'"),
        (("compare", "The [qwzxvbnm] called.", "The river [qwzxvbnm] flooded."), "not in the vocabulary"),
        (("compare", "   ", RIVER), "empty"),
        (("compare", FIN), "at least two sentences"),
        (("compare", FIN, RIVER, "--pooling", "max"), "pooling"),
        (("neighbors", "qwzxvbnm"), "not in the vocabulary"),
        (("neighbors", "--analogy", "king:man"), "a:b::c"),
        (("compare", FIN, RIVER, "--static", "/no/such/file.txt"), "unknown static model"),
    ],
)
def test_user_mistakes_give_one_line_and_exit_2(args, fragment):
    check_user_error(run_cli(*args), fragment)


def test_neighbors_and_analogy():
    result = run_cli("neighbors", "--analogy", "king:man::queen", "--json", "-k", "3")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["neighbors"][0]["word"] == "woman"
    result = run_cli("neighbors", "bank", "-k", "5")
    assert result.returncode == 0 and "banks" in result.stdout


def test_models_lists_what_is_installed():
    result = run_cli("models", "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)["models"]}
    assert rows["mpnet"]["installed"] and rows["minilm"]["installed"]
    assert "--no-deps" in rows["mpnet"]["install"]


def test_demo_runs_and_draws(demo_run):
    result, folder = demo_run
    assert result.returncode == 0, result.stderr
    assert "Same word, two contexts" in result.stdout and "same sense" in result.stdout
    assert (folder / "bank-two-sentences.png").stat().st_size > 10_000
