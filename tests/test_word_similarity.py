"""Word similarity: Spearman and coverage on hand cases, agreement with gensim, contexts, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.benchmarks.similarity import find_contexts, template_occurrence
from contextlens.analyses.measures.word_pairs import (
    SimilarityDataset,
    WordPair,
    load_dataset,
    score_pairs,
    spearman,
    static_vectors,
)
from tests.helpers import run_cli


def test_spearman_hand_cases():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks (1,2,3,4) vs (1,3,2,4): d^2 = 0+1+1+0 = 2, rho = 1 - 6*2/(4*15) = 0.8
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)


def test_score_pairs_leaves_out_pairs_without_vectors():
    ds = SimilarityDataset(
        "toy", (WordPair("a", "b", 9.0), WordPair("a", "c", 5.0), WordPair("b", "c", 1.0), WordPair("a", "zzz", 3.0))
    )
    vecs = {"a": np.array([1.0, 0.0]), "b": np.array([1.0, 0.1]), "c": np.array([0.0, 1.0])}
    rho, n = score_pairs(ds, vecs)
    assert n == 3
    # cosines: a-b 0.995, a-c 0.0, b-c 0.0995 -> ranks 3,1,2 vs scores 9,5,1 -> ranks 3,2,1: rho = 0.5
    assert rho == pytest.approx(0.5)


def test_datasets_load_in_full():
    assert len(load_dataset("simlex999").pairs) == 999
    assert len(load_dataset("wordsim353").pairs) == 353


def test_static_spearman_agrees_with_gensim(glove):
    from gensim.test.utils import datapath

    ds = load_dataset("wordsim353")
    ours, n = score_pairs(ds, static_vectors(ds.words, glove))
    from gensim.models import KeyedVectors

    kv = KeyedVectors(glove.dim)  # gensim's own evaluation, on the same table
    kv.add_vectors(glove.kv.index_to_key, np.asarray(glove.kv.vectors))
    (_, _), (theirs, _), oov = kv.evaluate_word_pairs(datapath("wordsim353.tsv"))
    assert ours == pytest.approx(theirs, abs=1e-6)
    assert 1 - n / len(ds.pairs) == pytest.approx(oov / 100, abs=1e-6)


def test_template_and_context_spans():
    text, start, end = template_occurrence("tiger")
    assert text[start:end] == "tiger"
    texts = ["The Tiger sleeps.", "no cats here", "a tiger and a tiger", "tigers roam"]
    found = find_contexts(["tiger", "cat"], texts, per_word=5)
    assert [texts[t][s:e].lower() for t, s, e in found["tiger"]] == ["tiger", "tiger"]  # one span per text
    assert {t for t, _, _ in found["tiger"]} == {0, 2}
    assert "cat" not in found  # "cats" is another form
    assert len(find_contexts(["tiger"], texts, per_word=1)["tiger"]) == 1


def test_cli_quick_reports_spearman_and_oov_share():
    proc = run_cli("eval", "similarity", "--model", "minilm", "--quick", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    systems = {r["system"] for r in doc["rows"]}
    assert systems == {"glove-50d", "minilm:template", "minilm:pooled"}
    for r in doc["rows"]:
        if r["metric"] == "oov_share":
            cov = [
                x
                for x in doc["rows"]
                if x["metric"] == "coverage"
                and x["system"] == r["system"]
                and x["layer"] == r["layer"]
                and x["split"] == r["split"]
            ]
            assert r["value"] == pytest.approx(1 - cov[0]["value"])


def test_cli_unknown_static_model_is_one_line_error():
    proc = run_cli("eval", "similarity", "--model", "minilm", "--quick", "--static", "no-such-vectors")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1 and "glove-50d" in proc.stderr
