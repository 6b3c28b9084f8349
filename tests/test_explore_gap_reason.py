"""explore says why a word has no separation gap, instead of calling labelled sentences unlabelled (issue 19)."""

import json

import pytest

from tests.helpers import run_cli


def test_explore_one_sentence_per_sense_says_why_there_is_no_gap(tmp_path):
    """Regression: the seed's design (3 sentences per word, one per sense) printed "No labelled
    senses: no separation gap" over empty axes although every sentence is labelled."""
    tsv = tmp_path / "three.tsv"
    tsv.write_text(
        "bank\tfinance\tThe [bank] approved the loan.\n"
        "bank\triver\tWe sat on the river [bank].\n"
        "bank\ttilt\tThe plane began to [bank] left.\n"
    )
    png = tmp_path / "x.png"
    out = run_cli("explore", "bank", "--sentences", str(tsv), "-m", "minilm", "--plot", str(png))
    assert out.returncode == 0, out.stderr
    assert "bank: no gap: one sentence per sense: no same-sense pair" in " ".join(out.stdout.split())
    data = json.loads(run_cli("explore", "bank", "--sentences", str(tsv), "-m", "minilm", "--json").stdout)
    assert data["words"][0]["no_gap_reason"].startswith("one sentence per sense")
    from contextlens.analyses.lesson.polysemy import explore
    from contextlens.data.sense_sentences import load_sense_sentences
    from contextlens.reports.lesson_figures import explore_figure

    fig = explore_figure(explore(["bank"], "minilm", load_sense_sentences(tsv), permutations=10))
    titles = " ".join(ax.get_title() for ax in fig.axes)
    assert "No labelled senses" not in titles and "one sentence per sense" in titles


def test_every_words_heatmap_shares_one_colour_scale(minilm):
    """Regression: each word's heatmap had its own colour floor, so different spreads looked alike."""
    from contextlens.analyses.lesson.polysemy import explore
    from contextlens.reports.interactive import explore_figures
    from contextlens.reports.lesson_figures import explore_figure

    result = explore(["bank", "spring"], minilm, permutations=10)
    fig = explore_figure(result)
    floors = {im.get_clim() for ax in fig.axes for im in ax.get_images()}
    assert floors == {(result.colour_floor, 1.0)}
    heatmaps = [t for f in explore_figures(result) for t in f.data if t.type == "heatmap"]
    assert len(heatmaps) == 2 and {(h.zmin, h.zmax) for h in heatmaps} == {(result.colour_floor, 1.0)}


def test_the_p_value_floor_is_said_beside_the_shuffles():
    """Regression: the web's 200 shuffles and the CLI's 1,000 gave p 0.005 vs 0.001 for the same gap,
    and nothing said that is the floor of each."""
    out = run_cli("explore", "bank", "-m", "minilm", "--permutations", "200")
    assert "the smallest possible p is 1/201 = 0.0050" in " ".join(out.stdout.split())
    data = json.loads(run_cli("explore", "bank", "-m", "minilm", "--permutations", "200", "--json").stdout)
    assert data["permutation_test"]["smallest_possible_p"] == pytest.approx(1 / 201)


def test_attention_takes_negative_layers_as_compare_does(minilm):
    """Regression: `attention --layer -1` was refused where `compare` accepts negative layers."""
    from contextlens.analyses.lesson.attention import attend
    from contextlens.core.occurrences import parse_marked

    occ = [parse_marked("The river [bank] flooded.")]
    assert attend(occ, minilm, layer=-1, head=0).layer == minilm.num_layers == attend(occ, minilm, 6, 0).layer
    out = run_cli("attention", "The river [bank] flooded.", "-m", "minilm", "--layer", "-1", "--head", "0", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["layer"] == 6
    bad = run_cli("attention", "The river [bank] flooded.", "-m", "minilm", "--layer", "-7")
    assert bad.returncode == 2 and "-1..-6 from the top" in bad.stderr
