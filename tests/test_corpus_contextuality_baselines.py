"""Issue 36, item 3: `eval contextuality --corpus DIR` on an extraction folder: random pairs are of
different words, intra-sentence groups are of different words, a --forms folder measures each
form apart, and what a folder cannot support is said."""

from __future__ import annotations

import math

import numpy as np

from contextlens.analyses.benchmarks.contextuality import anisotropy_baseline
from contextlens.analyses.corpus.contextuality import _Rows, corpus_contextuality, different_words_baseline
from contextlens.analyses.corpus.extract import extract_corpus


def test_the_random_word_baseline_pairs_different_words_only():
    # two words, each one direction in every sentence: different words are orthogonal
    vectors = np.array([[1.0, 0.0]] * 10 + [[0.0, 1.0]] * 10, dtype=np.float32)
    words, texts = ["a"] * 10 + ["b"] * 10, list(range(20))
    assert different_words_baseline(vectors, words, texts, 500, 0) == 0.0
    assert anisotropy_baseline(vectors, texts, 500, 0) > 0.3  # the old draw: same-word pairs count
    assert math.isnan(different_words_baseline(vectors[:10], words[:10], texts[:10], 50, 0))


def test_a_sentence_repeating_a_target_is_not_three_words():
    rows = _Rows(None, None, [("d", 0, 0)] * 3 + [("d", 0, 1)] * 3, ["bank", "bank", "river"] + ["a", "b", "c"])
    (group,) = rows.sentences()
    assert list(group) == [3, 4, 5]
    forms = _Rows(None, None, [("d", 0, 0)] * 3, ["bank"] * 3, ["bank", "banks", "banking"])
    assert len(forms.sentences()) == 1 and forms.first_per_context() == {"bank": [0], "banks": [1], "banking": [2]}


def test_a_folder_of_one_word_says_what_it_cannot_measure(tmp_path, minilm):
    text = "\n\n".join(f"The bank on street {n} opened a bank account early." for n in range(6))
    (tmp_path / "c.txt").write_text(text)
    extract_corpus(str(tmp_path / "c.txt"), ["bank"], tmp_path / "x", model="minilm", layers=[6])
    result = corpus_contextuality(tmp_path / "x", min_contexts=2)
    warnings = result.meta["warnings"]
    assert any("one word only" in w for w in warnings) and any("intra-sentence" in w for w in warnings)
    d = result.to_dict()
    assert "different words" in d["meta"]["baseline_pairs"]
