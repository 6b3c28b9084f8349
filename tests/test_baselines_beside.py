"""The random-word baseline beside explore's and probe's cosines, from compare's own helper, in their
text, JSON and figures (issue 19)."""

import json

import pytest

from contextlens.analyses.lesson.polysemy import explore
from contextlens.analyses.lesson.probe import probe
from contextlens.analyses.measures import word_baseline as wb
from contextlens.core.occurrences import parse_marked
from tests.helpers import run_cli

RIVER, MONEY = "The river [bank] flooded.", "I deposited cash at the [bank]."


def test_beside_is_the_one_helper_compare_uses(minilm):
    from contextlens import compare

    base = wb.random_word_baseline(minilm)
    result = compare([RIVER, MONEY], minilm)
    for layer, cos, row in zip(result.layers, result.layer_cosines, result.layer_baselines(), strict=True):
        assert row == base.beside(layer, cos)
        assert row["adjusted"] == pytest.approx(cos - base.layer(layer).mean)
        assert row["percentile"] == base.percentile(layer, cos)


def test_explore_sets_each_layers_mean_cosine_beside_the_baseline(minilm):
    result = explore(["bank", "bat"], minilm, layer=3, permutations=50)
    base = wb.random_word_baseline(minilm)
    d = result.to_dict()
    assert d["baseline"]["layers"][3]["mean"] == pytest.approx(base.layer(3).mean)
    assert d["baseline_missing"] is None
    for w, wd in zip(result.words, d["words"], strict=True):
        assert wd["baseline"]["percentile"] == pytest.approx(base.percentile(3, 1 - w.spread))
        assert wd["mean_cosine"] == pytest.approx(1 - w.spread)
        for k, row in enumerate(wd["layers"]):
            b = row["baseline"]
            assert b["percentile"] == pytest.approx(base.percentile(row["layer"], 1 - row["spread"]))
            assert b["adjusted"] == pytest.approx(1 - row["spread"] - base.layer(row["layer"]).mean)
            if w.labelled:
                assert b["same_sense_percentile"] == pytest.approx(base.percentile(row["layer"], w.same_sense[k]))
    assert explore(["bank"], minilm, permutations=10, baseline=False).to_dict()["baseline"] is None


def test_probe_sets_each_score_beside_the_baseline(minilm):
    result = probe([parse_marked(RIVER)], ["shore", "deposit"], minilm, layer=4)
    base = wb.random_word_baseline(minilm)
    d = result.to_dict()
    score = d["sentences"][0]["scores"]["shore"]
    b = d["sentences"][0]["baseline"]["shore"]
    assert b["percentile"] == pytest.approx(base.percentile(4, score))
    assert b["adjusted"] == pytest.approx(score - base.layer(4).mean)
    assert d["baseline"]["layers"][4]["p95"] == pytest.approx(base.layer(4).p95)
    assert [r["mean"] for r in result.layer_baselines()] == pytest.approx(base.means.tolist())


def test_explore_cli_prints_pct_and_the_baseline_line_and_draws_the_band(tmp_path):
    png, page = tmp_path / "e.png", tmp_path / "e.html"
    out = run_cli(
        "explore", "bank", "bat", "--model", "minilm", "--permutations", "50", "--plot", str(png), "--html", str(page)
    )
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "pct" in text and "random-word baseline at layer 6: mean cosine" in text
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "random words, 5-95th pct" in page.read_text()


def test_explore_figure_draws_the_band(minilm):
    from contextlens.reports.lesson_figures import explore_figure

    fig = explore_figure(explore(["bank", "bat"], minilm, permutations=20))
    labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "random words, 5-95th pct" in labels and "random words, mean" in labels


def test_probe_cli_prints_the_baseline_columns_and_json(tmp_path):
    out = run_cli("probe", RIVER, "--anchors", "shore", "deposit", "--model", "minilm")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "random" in text and "5-95%" in text and "of random pairs of different words at that layer" in text
    png, page = tmp_path / "p.png", tmp_path / "p.html"
    out = run_cli(
        "probe", RIVER, "--anchors", "shore", "deposit", "--model", "minilm", "--json",
        "--plot", str(png), "--html", str(page),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data["sentences"][0]["baseline"]) == {"shore", "deposit"}
    assert "random words, 5-95th pct" in page.read_text()
