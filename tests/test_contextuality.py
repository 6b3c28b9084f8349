"""Ethayarajh's contextuality metrics on hand cases, the sample, and the CLI with a figure."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from contextlens.analyses.benchmarks.contextuality import (
    anisotropy_baseline,
    build_sample,
    intra_sentence_similarity,
    max_explainable_variance,
    self_similarity,
)
from tests.helpers import run_cli


def test_self_similarity_hand_case():
    # pairwise cosines: (1,0)-(0,1) = 0, (1,0)-(1,1) = (0,1)-(1,1) = 1/sqrt(2)
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert self_similarity(x) == pytest.approx(2 / math.sqrt(2) / 3)


def test_intra_sentence_similarity_hand_case():
    # mean (0.5, 0.5); each word has cosine 1/sqrt(2) with it
    assert intra_sentence_similarity(np.array([[1.0, 0.0], [0.0, 1.0]])) == pytest.approx(1 / math.sqrt(2))


def test_mev_hand_cases():
    assert max_explainable_variance(np.array([[1.0, 2.0], [2.0, 4.0], [-3.0, -6.0]])) == pytest.approx(1.0)
    assert max_explainable_variance(np.eye(4)) == pytest.approx(0.25)
    # singular values of diag(3, 1): 9 / (9 + 1)
    assert max_explainable_variance(np.array([[3.0, 0.0], [0.0, 1.0]])) == pytest.approx(0.9)


def test_anisotropy_baseline_only_pairs_different_texts():
    # rows 0 and 1 share text 0 (orthogonal, never paired); row 2 (text 1) equals row 0
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    value = anisotropy_baseline(x, [0, 0, 1], n_pairs=4000, seed=0)
    # pairs across texts: (0,2) cosine 1 and (1,2) cosine 0, equally likely
    assert value == pytest.approx(0.5, abs=0.03)


def test_sample_is_deterministic_and_respects_min_contexts():
    texts = [f"the cat number {i} sat on the mat" for i in range(8)] + ["a dog barked loudly today"] * 2
    s1 = build_sample(texts, n_words=3, n_sentences=4, min_contexts=5, seed=0)
    s2 = build_sample(texts, n_words=3, n_sentences=4, min_contexts=5, seed=0)
    assert s1 == s2
    for word, spans in s1.words.items():
        assert len({t for t, _, _ in spans}) == len(spans) >= 5
        assert all(texts[t][a:b].lower() == word for t, a, b in spans)
    assert "dog" not in s1.words and len(s1.sentences) == 4


def test_cli_quick_json_and_figure(tmp_path):
    png = tmp_path / "ctx.png"
    proc = run_cli("eval", "contextuality", "--model", "minilm", "--quick", "--json", "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    anis = {r["layer"]: r["value"] for r in doc["rows"] if r["metric"] == "anisotropy"}
    assert set(anis) == set(range(7)) and all(-1 <= v <= 1 for v in anis.values())
    for metric in ("self_similarity_adjusted", "intra_sentence_adjusted", "mev_adjusted"):
        assert len([r for r in doc["rows"] if r["metric"] == metric]) == 7
    assert png.stat().st_size > 10_000


def test_combine_keeps_one_tidy_shape_for_several_models():
    from contextlens.analyses.benchmarks.contextuality import combine
    from contextlens.analyses.benchmarks.result import BenchmarkResult

    a = BenchmarkResult(
        "contextuality", "mpnet", [{"system": "mpnet", "layer": 0, "metric": "anisotropy", "value": 0.1}]
    )
    b = BenchmarkResult(
        "contextuality", "minilm", [{"system": "minilm", "layer": 0, "metric": "anisotropy", "value": 0.2}]
    )
    doc = combine([a, b]).to_dict()
    assert set(doc) == {"benchmark", "model", "rows", "meta"}
    assert [r["system"] for r in doc["rows"]] == ["mpnet", "minilm"] and doc["meta"]["models"] == ["mpnet", "minilm"]
