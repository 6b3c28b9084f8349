"""Sense induction on a real extraction: two senses of 'bank' come apart, and are labelled."""

from __future__ import annotations

import json

import pytest

from contextlens.analyses.corpus.extract import extract_corpus
from contextlens.analyses.corpus.senses import induce_senses
from contextlens.cli import main
from contextlens.errors import InputError, TargetNotFoundError

RIVER = [
    "We fished from the muddy bank of the river.",
    "The river overflowed its bank after the rain.",
    "Reeds grew thick along the river bank.",
    "The boat drifted toward the grassy bank of the stream.",
    "Otters dug a den in the steep bank of the river.",
    "Willows lean over the bank where the creek bends.",
    "He sat on the river bank and watched the water.",
    "Erosion wore away the bank of the stream.",
]
MONEY = [
    "The bank approved her mortgage loan.",
    "He deposited his salary at the bank on Friday.",
    "The bank raised its interest rates again.",
    "She opened a savings account at the bank.",
    "The central bank cut rates to fight inflation.",
    "The bank charged a fee for the wire transfer.",
    "Investors worried the bank would default on its debt.",
    "The bank manager refused the loan.",
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory, minilm):
    corpus = tmp_path_factory.mktemp("senses") / "bank.txt"
    corpus.write_text("\n".join(RIVER + MONEY) + "\n")
    out = corpus.parent / "out"
    extract_corpus(str(corpus), ["bank"], out, model="minilm", layers=[0, 5, 6])
    return out


def test_two_senses_come_apart_and_are_labelled(folder):
    result = induce_senses(folder, "bank", layer=5, k=2)
    river = {result.labels[i] for i in range(8)}
    money = {result.labels[i] for i in range(8, 16)}
    assert len(river) == 1 and len(money) == 1 and river != money
    by_cluster = {c.cluster: c for c in result.clusters}
    river_cluster = by_cluster[river.pop()]
    assert "river" in river_cluster.distinctive_words
    assert river_cluster.gloss is not None and "slope" in river_cluster.gloss["definition"]
    assert all("[bank]" in e["marked"].lower() for e in river_cluster.typical)
    auto = induce_senses(folder, "bank", layer=5)
    assert auto.k == max(auto.silhouettes, key=auto.silhouettes.get) or auto.k == 1
    # layer 0 (embedding output) has one vector per token in every sentence: no separation
    assert induce_senses(folder, "bank", layer=0).silhouettes[2] < auto.silhouettes[2]


def test_bad_requests_are_one_line(folder, tmp_path, capsys):
    with pytest.raises(TargetNotFoundError):
        induce_senses(folder, "river")
    with pytest.raises(InputError, match="extracted layers"):
        induce_senses(folder, "bank", layer=3)
    with pytest.raises(InputError, match="not a corpus extraction folder"):
        induce_senses(tmp_path, "bank")
    with pytest.raises(SystemExit) as stop:
        main(
            [
                "senses",
                "induce",
                str(folder),
                "--word",
                "bank",
                "--layer",
                "5",
                "--k",
                "2",
                "--json",
                "--plot",
                str(tmp_path / "s.png"),
                "--html",
                str(tmp_path / "s.html"),
            ]
        )
    out, _ = capsys.readouterr()
    assert (stop.value.code or 0) == 0
    data = json.loads(out)
    assert data["k"] == 2 and sum(c["size"] for c in data["clusters"]) == 16
    assert (tmp_path / "s.png").stat().st_size > 0 and "plotly" in (tmp_path / "s.html").read_text().lower()


def test_corpus_contextuality_on_an_extraction(folder):
    from contextlens.analyses.corpus.contextuality import corpus_contextuality

    result = corpus_contextuality(folder, min_contexts=10)
    assert result.meta["counts"]["contexts_per_word"]["min"] == 16
    mev = {lay: result.value(layer=lay, metric="mev") for lay in (0, 5, 6)}
    assert all(1 / 16 <= v <= 1 for v in mev.values())
    assert mev[0] > mev[5]  # the embedding output is close to one static vector; layer 5 is not
    with pytest.raises(InputError, match="has 17 contexts"):
        corpus_contextuality(folder, min_contexts=17)
