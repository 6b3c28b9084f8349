"""Issue 36, item 4: the MEV the paper's released per-word files hold (its analyze.py @84d2f97:
sklearn TruncatedSVD's explained_variance_ratio_[0]), adjusted by random words' matrices of the
same sizes, beside the centred PCA; and item 3: the CLI prints the result's warnings."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.decomposition import PCA, TruncatedSVD

from contextlens.analyses.benchmarks.contextuality import max_explainable_variance, paper_mev, paper_random_mev
from contextlens.analyses.corpus.contextuality import corpus_contextuality
from contextlens.analyses.corpus.extract import extract_corpus
from tests.helpers import run_cli


@pytest.mark.parametrize(("n", "d"), [(6, 50), (40, 20), (120, 64)])
def test_paper_mev_is_sklearn_truncated_svd_explained_variance_ratio(n, d):
    x = np.random.default_rng(n).normal(size=(n, d)) + 2.0  # a shared offset, as in anisotropic states
    svd = TruncatedSVD(n_components=min(n, d) - 1, algorithm="arpack").fit(x)
    assert paper_mev(x) == pytest.approx(svd.explained_variance_ratio_[0], abs=1e-9)


def test_paper_mev_has_no_one_over_n_minus_one_floor():
    """Why "render" has 0.016 over 6 occurrences: the first direction of the uncentred matrix is the
    shared mean, and the occurrences hardly vary along it; a centred PCA of 6 points is >= 1/5."""
    rng = np.random.default_rng(0)
    x = np.ones((6, 64)) * 3.0 + rng.normal(scale=0.1, size=(6, 64))
    assert paper_mev(x) < 0.05 < 1 / 5 <= max_explainable_variance(x, centred=True)
    assert PCA(n_components=1).fit(x).explained_variance_ratio_[0] >= 1 / 5


def test_paper_random_mev_takes_one_word_per_text():
    vectors = np.random.default_rng(1).normal(size=(30, 8))
    # every row of text 0 is one point: drawing two rows of one text would be possible only by mistake
    texts = [0] * 28 + [1, 2]
    value = paper_random_mev(vectors, texts, seed=0)
    assert np.isfinite(value) and 0 < value <= 1
    assert np.isnan(paper_random_mev(vectors, [0] * 30, seed=0))  # one text: no two words of different texts


@pytest.fixture(scope="module")
def two_words(tmp_path_factory, minilm):
    tmp = tmp_path_factory.mktemp("mev-paper")
    # the words at different positions, among different words: layer 0 (embeddings + position) varies too
    lead = ["", "Yesterday ", "Last winter the ", "Some say ", "In 1990 a ", "Oddly, ", "We think ", "Then "]
    lines = [f"{lead[n]}the bank near mill {n} kept money safe." for n in range(8)]
    lines += [f"{lead[7 - n]}a river ran past town {n} at dawn." for n in range(8)]
    (tmp / "c.txt").write_text("\n\n".join(lines))
    extract_corpus(str(tmp / "c.txt"), ["bank", "river"], tmp / "x", model="minilm", layers=[0, 3, 6])
    return tmp / "x"


def test_a_folder_reports_the_papers_mev_raw_and_adjusted(two_words):
    result = corpus_contextuality(two_words, min_contexts=5)
    rows = {(r["layer"], r["metric"]): r["value"] for r in result.to_dict()["rows"]}
    for layer in (0, 3, 6):
        paper, base = rows[layer, "mev_paper"], rows[layer, "mev_paper_baseline"]
        assert 0 < paper <= 1 and 0 < base <= 1
        assert rows[layer, "mev_paper_adjusted"] == pytest.approx(paper - base)
        assert rows[layer, "mev_paper_1000_adjusted"] == pytest.approx(paper - rows[layer, "mev_paper_baseline_1000"])
    assert "TruncatedSVD" in result.meta["mev_definitions"]["mev_paper"]


def test_the_cli_prints_the_results_warnings(two_words):
    table = run_cli("eval", "contextuality", "--corpus", str(two_words), "--min-contexts", "5")
    assert table.returncode == 0, table.stderr
    assert "MEV paper" in table.stdout
    stderr = " ".join(table.stderr.split())
    assert "warning:" in stderr and "intra-sentence" in stderr  # 0 sentences of 3+ different targets
    as_json = run_cli("eval", "contextuality", "--corpus", str(two_words), "--min-contexts", "5", "--json")
    data = json.loads(as_json.stdout)  # stdout stays the JSON; the warnings go to stderr and meta
    assert data["meta"]["warnings"] and "warning:" in as_json.stderr
