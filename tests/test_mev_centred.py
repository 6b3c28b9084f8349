"""MEV as the paper's released code computes it (centred PCA), beside contextlens's uncentred MEV,
with the paper's published per-layer BERT figures in the result (issue 19)."""

import json

import numpy as np
import pytest
from sklearn.decomposition import PCA

from contextlens.analyses.benchmarks import published
from contextlens.analyses.benchmarks.contextuality import max_explainable_variance
from tests.helpers import run_cli


@pytest.mark.parametrize(("n", "d"), [(7, 50), (40, 20), (60, 384)])
def test_centred_mev_is_sklearn_pca_explained_variance_ratio(n, d):
    """The paper's analyze.py: PCA(n_components=1).fit(embeddings).explained_variance_ratio_[0]
    (both Gram sides and the Lanczos path for matrices above 32)."""
    x = np.random.default_rng(n).normal(size=(n, d)) + 3.0  # a shared offset, as in anisotropic states
    expected = PCA(n_components=1).fit(x).explained_variance_ratio_[0]
    assert max_explainable_variance(x, centred=True) == pytest.approx(expected, abs=1e-9)
    # the uncentred MEV counts the shared offset as explained: far higher on the same matrix
    assert max_explainable_variance(x) > 0.8 > max_explainable_variance(x, centred=True)


def test_centred_mev_floor_is_one_over_n_minus_one():
    x = np.eye(5)  # centred, the four directions share the variance equally
    assert max_explainable_variance(x, centred=True) == pytest.approx(1 / 4)
    assert max_explainable_variance(x) == pytest.approx(1 / 5)


def test_eval_contextuality_reports_both_mevs_and_the_published_figures():
    out = run_cli("eval", "contextuality", "--quick", "--model", "minilm", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    rows = {(r["layer"], r["metric"]): r["value"] for r in data["rows"]}
    layers = sorted({layer for layer, _ in rows})
    for layer in layers:
        centred, raw = rows[layer, "mev_centred"], rows[layer, "mev"]
        assert 1 / 9 <= centred < raw <= 1  # at most 10 contexts a word: centred >= 1/(n - 1)
        assert rows[layer, "mev_centred_adjusted"] == pytest.approx(centred - rows[layer, "mev_centred_baseline"])
        paper = rows[layer, "mev_paper"]
        assert rows[layer, "mev_paper_adjusted"] == pytest.approx(paper - rows[layer, "mev_paper_baseline"])
    meta = data["meta"]
    assert set(meta["mev_definitions"]) == {"mev", "mev_centred", "mev_paper"}
    assert meta["published"]["bert_base_cased"]["baseline"][12] == 0.477
    assert [r["bert_mev_centred"] for r in meta["published"]["rows"]][1:] == [0.020, 0.025, 0.029, 0.026, 0.040]
    table = run_cli("eval", "contextuality", "--quick", "--model", "minilm").stdout
    assert "MEV paper = what the paper's released per-word files hold" in " ".join(table.split())


def test_published_rows_are_consistent():
    for r in published.PUBLISHED_ROWS:
        adjusted = r["bert_self_similarity"] - r["bert_baseline"]
        assert r["bert_self_similarity_adjusted"] == pytest.approx(adjusted, abs=0.0015)
        assert published.BERT_BASELINE[r["layer"]] == r["bert_baseline"]
        assert published.BERT_INTRA_SENTENCE[r["layer"]] == r["bert_intra_sentence"]
