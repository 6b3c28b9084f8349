"""The random-word cosine baseline beside every cosine of `compare`, and the compare footer that
says what is true of the sentences given (issue 19)."""

import json

import numpy as np
import pytest

from contextlens import compare, parse_marked
from contextlens.analyses.measures import word_baseline as wb
from contextlens.core import disk_cache
from contextlens.examples import WORKED_EXAMPLE
from tests.helpers import run_cli

RIVER_BANK, RIVER_SHORE = "The river [bank] was muddy.", "The river [shore] was muddy."
STREAM = "She sat on the [bank] of the stream."


def test_baseline_is_a_distribution_per_layer_and_read_back_from_disk(minilm, monkeypatch):
    base = wb.random_word_baseline(minilm)
    assert base.means.shape == (minilm.num_layers + 1,) and base.n_words == wb.N_SENTENCES
    assert base.n_pairs > 15_000  # pairs of *different* words only
    for layer in range(minilm.num_layers + 1):
        b = base.layer(layer)
        assert -0.2 < b.mean < 0.6 and b.p5 < b.p50 < b.p95 and b.std > 0
        assert base.percentile(layer, b.p95) == pytest.approx(95, abs=0.6)
        assert base.percentile(layer, -1.0) == 0.0 and base.percentile(layer, 1.0) == 100.0
    # the second model process reads the cached arrays: no forward pass, the same numbers
    wb._cached.cache_clear()
    monkeypatch.setattr(minilm, "encode_occurrences", lambda *a, **k: pytest.fail("recomputed"))
    again = wb.random_word_baseline(minilm)
    assert np.array_equal(again.quantiles, base.quantiles) and np.array_equal(again.means, base.means)
    assert any(disk_cache.cache_path("word-baseline", "x").parent.glob("*.npz"))


def test_pair_cosines_skip_pairs_of_the_same_word():
    v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert sorted(wb.pair_cosines(v, ["Bank", "bank", "shore"]).tolist()) == [0.0, 0.0]


def test_compare_json_gives_baseline_percentile_and_adjusted_per_layer(minilm):
    result = compare([parse_marked(s) for s in WORKED_EXAMPLE], minilm)
    d = result.to_dict()
    base = wb.random_word_baseline(minilm)
    for row in d["layers"]:
        b = row["baseline"]
        assert b["mean"] == pytest.approx(base.layer(row["layer"]).mean)
        assert b["adjusted"] == pytest.approx(row["cosine"] - b["mean"])
        assert 0 <= b["percentile"] <= 100
    assert d["baseline"]["pairs"] == base.n_pairs and d["baseline"]["source"] == wb.SOURCE
    assert d["model_kind"]["summary"].startswith("minilm = MiniLM-L6 fine-tuned for sentence similarity")
    # the same word in two senses is far above unrelated words at every layer
    assert all(row["baseline"]["percentile"] > 90 for row in d["layers"])


def test_compare_without_baseline_says_so(minilm):
    result = compare([parse_marked(s) for s in WORKED_EXAMPLE], minilm, baseline=False)
    assert "baseline" not in result.to_dict()["layers"][0] and result.to_dict()["baseline"] is None


def test_footer_does_not_claim_equal_static_vectors_for_different_words():
    """Regression: bank vs shore printed static 0.55 and input row 0.16, then 'static vector and
    input row are the same in every sentence'."""
    out = run_cli("compare", RIVER_BANK, RIVER_SHORE, "--model", "minilm")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "the same in every sentence" not in text
    assert "differ: the targets are different words (bank, shore)" in text
    data = json.loads(run_cli("compare", RIVER_BANK, RIVER_SHORE, "--model", "minilm", "--json").stdout)
    assert data["same_static_vector"] is False and data["same_input_row"] is False


def test_footer_says_the_same_when_it_is():
    text = " ".join(run_cli("compare", *WORKED_EXAMPLE, "--model", "minilm").stdout.split())
    assert "static vector (glove-50d) and input row are the same in every sentence" in text


def test_lowest_pair_says_which_pair():
    """Regression: with three sentences the 'lowest pair' column gave a cosine and no pair."""
    args = ("compare", RIVER_BANK, RIVER_SHORE, STREAM, "--model", "minilm")
    data = json.loads(run_cli(*args, "--json").stdout)
    for row in data["layers"]:
        i, j = row["lowest_pair"]["sentences"]
        assert row["matrix"][i - 1][j - 1] == pytest.approx(row["lowest_pair"]["cosine"])
        assert row["lowest_pair"]["cosine"] == pytest.approx(min(min(r) for r in row["matrix"]))
    first = data["layers"][0]["lowest_pair"]
    table = run_cli(*args).stdout
    assert f"{first['cosine']:.4f} {first['sentences'][0]}–{first['sentences'][1]}" in table
    assert "lowest pair: the least alike pair of sentences" in " ".join(table.split())


def test_layer_zero_below_one_is_explained(minilm):
    """Regression: layer 0 printed 0.9968 (the lesson says 1.0) with no word why."""
    result = compare([parse_marked(s) for s in WORKED_EXAMPLE], minilm)
    cos0 = result.layer_cosines[0]
    assert cos0 < 0.9999  # the position embedding differs: the target is at different positions
    note = next(n for n in result.notes() if n.startswith("layer 0"))
    assert f"{cos0:.4f}" in note and "position embedding" in note
    assert len({p[0] for p in result.target_positions}) == 2


@pytest.mark.parametrize(("model_name", "special"), [("minilm", "[CLS]"), ("mpnet", "<s>")])
def test_report_sets_the_worked_example_beside_its_baseline_and_names_the_model(model_name, special, request, glove):
    """Report section 1 gives the random-word baseline and what minilm is; section 4 names the
    model's own special token, not BERT's [CLS] (regression: the mpnet report said "[CLS]" where
    its tokens are <s>/</s>)."""
    from contextlens.analyses.lesson.run import run_lesson
    from contextlens.reports.report import lesson_sections

    sections = lesson_sections(run_lesson(request.getfixturevalue(model_name), glove, permutations=20))
    assert "random-word baseline" in sections[0].numbers
    assert "fine-tuned by sentence-transformers for sentence similarity" in sections[0].numbers
    assert f"special token {special}" in sections[3].explanation
    if special != "[CLS]":
        assert "[CLS]" not in sections[3].explanation
    cka = next(s for s in sections if "CKA" in s.title)
    other = "minilm" if model_name == "mpnet" else "mpnet"
    assert f"cka --model {model_name} --other {other}`" in cka.explanation  # regression: mpnet vs mpnet


def test_a_decoders_comparison_says_which_context_each_target_saw(minilm):
    """A decoder's "bank" in "The [bank] called about my account." sees only "The"; the notes say
    so (smollm2 is optional and not installed in the test environment: the flag is set by hand)."""
    import dataclasses

    result = compare(["The [bank] called about my account.", "The river [bank] flooded."], minilm, baseline=False)
    assert not result.left_context_only  # minilm is an encoder
    as_decoder = dataclasses.replace(result, left_context_only=True)
    note = next(n for n in as_decoder.notes() if "decoder" in n)
    assert "1: 'The'" in note and "2: 'The river'" in note and "invisible" in note
