"""The made static models in the lesson: a fastText vector for a word that never occurred in its
corpus (neighbors, compare), and the seeds' ranking experiment with word2vec when one was made."""

from __future__ import annotations

import json
import re

import pytest

from contextlens.analyses.lesson.neighbors import neighbors
from contextlens.analyses.lesson.ranking import load_pairs, seeds_static
from contextlens.core.static_models import load_static
from helpers import FT, M2V, W2V, run_cli

UNSEEN = "unfriendliness"  # not in the Lee corpus


def test_fasttext_neighbours_of_an_unseen_word_say_it_was_composed(made_statics):
    ft = load_static(FT)
    assert UNSEEN not in ft.kv.key_to_index
    pieces = ft.composition(UNSEEN)
    assert pieces[0] == "<un" and pieces[-1] == "iness>" and len(pieces) == 50  # 3- to 6-grams of <word>
    result = neighbors(ft, UNSEEN, top=3)
    assert len(result.neighbors) == 3 and "50 character n-grams" in result.composed[UNSEEN]
    assert "composed" in result.to_dict() and "composed" not in neighbors(ft, "bank", top=3).to_dict()
    assert load_static(M2V).composition("unbelievably") == ["un", "##bel", "##ie", "##va", "##bly"]
    assert load_static(W2V).composition("bank") is None


def test_cli_neighbors_and_compare_on_an_unseen_word(made_statics):
    done = run_cli("neighbors", UNSEEN, "--static", FT, "-k", "3")
    assert done.returncode == 0, done.stderr
    assert "never occurred in the corpus" in done.stdout.replace("\n", " ")
    doc = json.loads(run_cli("neighbors", UNSEEN, "--static", FT, "-k", "3", "--json").stdout)
    assert "character n-grams" in doc["composed"][UNSEEN]
    pair = ["Her [unfriendliness] surprised the guests.", "The [unfriendliness] of the city wore him down."]
    compared = run_cli("compare", *pair, "-m", "minilm", "--static", FT, "--json")
    assert compared.returncode == 0, compared.stderr
    doc = json.loads(compared.stdout)
    assert doc["static_cosine"] == pytest.approx(1.0) and any("character n-grams" in n for n in doc["notes"])
    refused = run_cli("compare", *pair, "-m", "minilm", "--static", W2V)
    assert refused.returncode == 2 and "not in the vocabulary" in refused.stderr


@pytest.fixture()
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTLENS_CACHE", str(tmp_path))
    return tmp_path


def test_rank_uses_a_made_word2vec_and_names_the_pairs_it_leaves_out(own_cache, tmp_path):
    """docs/static.md's case: a skip-gram word2vec made here that never saw kitten and puppy; its
    `rank -m minilm` line, taken from the doc, prints what the doc shows but for the model's name,
    corpus and numbers."""
    from contextlens.analyses.static.train import train_static
    from tests.test_doc_commands import documented, masked

    pairs = load_pairs()
    assert seeds_static(pairs).name == "glove-50d"  # nothing made: GloVe, said so
    words = sorted({w for p in pairs for w in (p.a, p.b)} - {"kitten", "puppy"})
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(words[i:] + words[:i]) for i in range(len(words))) + "\n")
    train_static(str(corpus), name="w2v-pairs", min_count=1, dim=8, epochs=1)
    choice = seeds_static(pairs)
    assert choice.name == "w2v-pairs" and [f"{p.a}-{p.b}" for p in choice.left_out] == ["cat-kitten", "dog-puppy"]
    assert "kitten, puppy never occurred" in choice.reason and len(choice.pairs) == 18
    done = run_cli("rank", "-m", "minilm", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["static_model"] == "w2v-pairs" and len(doc["pairs"]) == 18 and "2 left out" in doc["source"]
    line, shown = documented("docs/static.md", "rank -m minilm")
    table = run_cli(*line)
    assert "static model: w2v-pairs, word2vec skip-gram made here" in table.stdout.replace("\n", " ")
    made = masked(re.sub(r"made here on [^(]*\(", "made here on CORPUS (", table.stdout))
    assert shown, "docs/static.md shows no output after `contextlens rank -m minilm`"
    for text in shown:  # the doc's w2v-sg was made on other corpora
        text = masked(re.sub(r"made here on [^(]*\(", "made here on CORPUS (", text.replace("w2v-sg", "w2v-pairs")))
        assert text in made, f"{text!r} is not in what it printed: {made}"
    given = run_cli("rank", "-m", "minilm", "--static", "glove-50d", "--json")
    assert json.loads(given.stdout)["static_model"] == "glove-50d"
    from contextlens.analyses.lesson.ranking import rank_pairs
    from contextlens.analyses.lesson.static_methods import static_methods

    ranking = rank_pairs(pairs, "minilm", "glove-50d")  # the lesson's ranking, GloVe against minilm
    again = static_methods(ranking).ranking  # the seeds' experiment with the made word2vec
    assert again.static_model == "w2v-pairs" and again.pairs == 18 and again.baseline_model == "glove-50d"
    assert -1 <= again.kendall_tau <= 1 and 0 <= again.inversions <= 18 * 17 // 2


def test_static_methods_of_the_seeds_table_with_nothing_made(own_cache):
    from contextlens.analyses.lesson.static_methods import SEEDS_TABLE, static_methods

    result = static_methods()
    assert [r.method for r in result.rows] == [m for m, *_ in SEEDS_TABLE]
    made = {r.method: r for r in result.rows if r.model is not None}
    assert list(made) == ["GloVe"] and made["GloVe"].scores["simlex999"][0] == pytest.approx(0.265, abs=1e-3)
    assert all("not made here yet: contextlens static" in r.made for r in result.rows if r.model is None)
    assert result.ranking is None


def test_static_methods_with_the_made_models(made_statics):
    from contextlens.analyses.lesson.static_methods import static_methods
    from contextlens.reports.static_figures import static_methods_figure

    result = static_methods(teacher="minilm")
    rows = {r.method: r for r in result.rows}
    assert rows["word2vec skip-gram"].model == W2V and rows["word2vec CBOW"].model is None
    assert rows["fastText"].scores["simlex999"][1] == 1.0 > rows["word2vec skip-gram"].scores["simlex999"][1]
    assert rows["fastText"].unseen.startswith(f"{UNSEEN} (never seen: 50 character n-grams) → ")
    assert rows["distilled (model2vec)"].model == M2V and "word pieces" in rows["distilled (model2vec)"].unseen
    fig = static_methods_figure(result)
    assert len(fig.data) == 2 and len(fig.data[0].y) == 4  # skip-gram, GloVe, fastText, distilled
    json.dumps(result.to_dict(), allow_nan=False)
