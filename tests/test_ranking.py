"""Static versus contextual ranking: Kendall tau and inversions against scipy, real scores, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import kendalltau
from typer.testing import CliRunner

from contextlens.analyses.lesson.ranking import WordPair, kendall_tau_b, load_pairs, rank_pairs
from contextlens.cli import app
from contextlens.core.occurrences import in_template
from contextlens.core.similarity import cosine_values
from contextlens.errors import InputError, OutOfVocabularyError
from tests.helpers import figure_count, run_cli


def brute_force_discordant(x, y) -> int:
    n = len(x)
    return sum(1 for i in range(n) for j in range(i + 1, n) if (x[i] - x[j]) * (y[i] - y[j]) < 0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kendall_tau_b_and_inversions_agree_with_scipy(seed):
    rng = np.random.default_rng(seed)
    x = rng.permutation(20) + 1.0
    y = rng.integers(1, 8, size=20).astype(float)  # with ties
    for a, b in ((x, rng.permutation(20) + 1.0), (x, y)):
        tau, _, discordant = kendall_tau_b(a, b)
        assert tau == pytest.approx(kendalltau(a, b).statistic)
        assert discordant == brute_force_discordant(a, b)


def test_builtin_pairs_are_the_lesson_s_twenty():
    pairs = load_pairs()
    assert len(pairs) == 20
    names = {(p.a, p.b) for p in pairs}
    assert {("bank", "finance"), ("bank", "river"), ("cat", "dog"), ("cat", "feline")} <= names


def test_rank_pairs_on_minilm_and_glove(minilm, glove):
    pairs = load_pairs()
    result = rank_pairs(pairs, minilm, glove, layer=-1)
    assert result.layer == minilm.num_layers
    s_ranks = [p.static_rank for p in result.pairs]
    c_ranks = [p.contextual_rank for p in result.pairs]
    assert sorted(s_ranks) == list(range(1, 21)) and sorted(c_ranks) == list(range(1, 21))
    assert result.kendall_tau == pytest.approx(kendalltau(s_ranks, c_ranks).statistic)
    assert result.inversions == brute_force_discordant(s_ranks, c_ranks)
    assert result.inversions + result.concordant == 190
    first = result.pairs[0]  # bank-finance, recomputed by hand
    assert first.static_cosine == pytest.approx(glove.similarity("bank", "finance"))
    a, b = minilm.encode_occurrences([in_template("bank", result.template), in_template("finance", result.template)])
    assert first.contextual_cosine == pytest.approx(cosine_values(a.hidden[-1], b.hidden[-1]))
    moves = [abs(p.move) for p in result.top_moves]
    assert moves == sorted(moves, reverse=True) and moves[0] == max(abs(p.move) for p in result.pairs)
    assert json.dumps(result.to_dict())


def test_ranking_errors(minilm, glove, tmp_path):
    with pytest.raises(InputError, match="exactly once"):
        in_template("cat", "The word is {word}.")
    with pytest.raises(OutOfVocabularyError, match="qzxvbn"):
        rank_pairs([WordPair("cat", "dog"), WordPair("cat", "qzxvbn", "pairs.tsv, line 2")], minilm, glove)
    bad = tmp_path / "pairs.tsv"
    bad.write_text("cat\tdog\ncat\n")
    r = run_cli("rank", str(bad), "-m", "minilm")
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "pairs.tsv, line 2" in r.stderr and "Traceback" not in r.stderr


def test_rank_cli_table_json_plot_html(tmp_path):
    png, page = tmp_path / "r.png", tmp_path / "r.html"
    runner = CliRunner()
    out = runner.invoke(app, ["rank", "-m", "minilm", "--json", "--plot", str(png), "--html", str(page)])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout[out.stdout.index("{") :])
    assert doc["n_pairs"] == 20 and doc["pairs_compared"] == 190
    assert png.stat().st_size > 10_000 and figure_count(page.read_text()) >= 1
    own = tmp_path / "own.tsv"
    own.write_text("car\tautomobile\ncar\troad\ncoffee\ttea\n")
    table = runner.invoke(app, ["rank", str(own), "-m", "minilm", "--template", "I said [{word}] twice."])
    assert table.exit_code == 0, table.output
    assert "Kendall" in table.stdout and "car–road" in table.stdout
