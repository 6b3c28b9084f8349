"""`same-sense`: the rule `eval wic` tunes on dev lemmas, answering a user's pair (issue 19)."""

import json

import numpy as np
import pytest

import contextlens
from contextlens import InputError
from contextlens.analyses.lesson.same_sense import reliability_bins, same_sense, same_sense_rule
from contextlens.core.similarity import cosine_values
from tests.helpers import run_cli

RIVER, MONEY = "The river [bank] flooded.", "I deposited cash at the [bank]."


def test_rule_is_eval_wics_dev_tuned_rule(minilm):
    """The same layer, threshold and held-out accuracy as `eval wic` prints for that layer."""
    wic = json.loads(run_cli("eval", "wic", "--quick", "--model", "minilm", "--json").stdout)
    rule = same_sense_rule(minilm, "auto", "quick")
    assert rule.layer == wic["meta"]["best_layer"]["layer_by_dev"]
    assert rule.test_accuracy == pytest.approx(wic["meta"]["best_layer"]["test_accuracy_at_dev_layer"], abs=1e-12)
    rows = {(r["system"], r["layer"], r["split"], r["metric"]): r["value"] for r in wic["rows"]}
    assert rule.threshold == pytest.approx(rows["minilm", rule.layer, "dev", "threshold"])
    assert rule.dev_accuracy == pytest.approx(rows["minilm", rule.layer, "dev", "accuracy"])
    assert rule.chance == pytest.approx(rows["chance", None, "test", "accuracy"])
    assert sum(b["pairs"] for b in rule.reliability) == rule.test_pairs
    given = same_sense_rule(minilm, 3, "quick")
    assert given.layer == 3 and given.layer_choice == "given"
    assert given.threshold == pytest.approx(rows["minilm", 3, "dev", "threshold"])


def test_answer_is_the_threshold_decision_with_a_probability(minilm):
    answer = same_sense(RIVER, MONEY, minilm, size="quick")
    assert answer.same == (answer.cosine >= answer.rule.threshold)
    assert 0 < answer.probability < 1 and 0 <= answer.baseline_percentile <= 100
    d = answer.to_dict()
    assert d["layer"] == answer.rule.layer and d["rule"]["test_accuracy"] == answer.rule.test_accuracy
    assert d["rule"]["chance"] == 0.5  # one same and one different pair per lemma
    assert contextlens.same_sense is same_sense


def test_reliability_and_ece_hand_case():
    prob = np.array([0.1, 0.1, 0.9, 0.9])
    same = np.array([False, False, True, False])
    ece, table = reliability_bins(prob, same)
    # bin [0.1, 0.2): mean p 0.1, share 0 -> 0.1; bin [0.9, 1]: mean p 0.9, share 0.5 -> 0.4; weights 1/2 each
    assert ece == pytest.approx(0.25)
    assert [b["pairs"] for b in table] == [2, 2]


def test_different_words_are_refused(minilm):
    """Issue 35: two different words used to get an answer (with a note); the rule is tuned on two
    uses of one word, so the pair is refused, saying how to fix it."""
    with pytest.raises(InputError, match="'bank' and 'shore'.*bracket the same word"):
        same_sense(RIVER, "The river [shore] flooded.", minilm, size="quick")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ((RIVER,), "exactly two sentences"),
        ((RIVER, MONEY, "--layer", "x"), "--layer must be auto or a layer number"),
        ((RIVER, MONEY, "--layer", "9", "--model", "minilm"), "out of range"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(args, fragment):
    out = run_cli("same-sense", *args, "--quick")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and fragment in out.stderr


def test_cli_prints_answer_accuracy_and_chance():
    out = run_cli("same-sense", RIVER, MONEY, "--model", "minilm", "--quick")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "held-out test pairs" in text and "chance 0.500" in text and "P(same) =" in text
    assert "expected calibration error" in text and "not a measurement" in text


def test_api_refuses_bad_size(minilm):
    with pytest.raises(InputError, match="size"):
        same_sense_rule(minilm, "auto", "huge")


def test_cli_plot_draws_the_reliability_diagram(tmp_path):
    png = tmp_path / "rel.png"
    out = run_cli("same-sense", RIVER, MONEY, "--model", "minilm", "--quick", "--json", "--plot", str(png))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["rule"]["reliability"]
    assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 10_000


def test_logistic_is_platt_scaling_on_the_dev_pairs_and_ece_is_on_test(minilm):
    """Issue 30: P(same) is fitted on the dev pairs that chose the layer and threshold (it was a fit on
    separate train pairs, which a first same-sense had to encode too); its calibration error is still
    measured on the held-out test pairs. eval wic's dev and test pairs are exactly those of the suite."""
    from contextlens.analyses.benchmarks.suite import build_suite
    from contextlens.analyses.measures.wic_pairs import encode_wic

    rule = same_sense_rule(minilm, "auto", "quick")
    data, enc, _ = encode_wic(minilm, "quick")
    assert data.wic.pairs == build_suite("quick").wic.pairs
    layer = enc.hidden[:, rule.layer, :]
    cos = np.array([float(cosine_values(layer[i], layer[j])) for i, j in data.rows])
    same = np.array([p.same for p in data.wic.pairs], dtype=float)
    dev = np.array([p.split == "dev" for p in data.wic.pairs])
    test = np.array([p.split == "test" for p in data.wic.pairs])
    p_same = 1 / (1 + np.exp(-(rule.coef * cos + rule.intercept)))
    # the maximum-likelihood fit's score equations hold on the pairs it was fitted on: dev, not test
    residual = same - p_same
    assert abs(residual[dev].mean()) < 2e-3 and abs((residual * cos)[dev].mean()) < 2e-3
    assert max(abs(residual[test].mean()), abs((residual * cos)[test].mean())) > 2e-3  # not the test pairs' fit
    ece, table = reliability_bins(p_same[test], same[test].astype(bool))
    assert rule.test_ece == pytest.approx(ece, abs=1e-6) and len(table) == len(rule.reliability)
    assert sum(b["pairs"] for b in rule.reliability) == rule.test_pairs == int(test.sum())
    assert rule.logistic_test_accuracy == pytest.approx(np.mean((p_same[test] >= 0.5) == same[test].astype(bool)))
    d = rule.to_dict()["logistic"]
    assert d["fitted_on"].startswith("dev pairs") and d["pairs"] == rule.dev_pairs == int(dev.sum())
    assert d["lemmas"] == len({p.lemma for p in data.wic.pairs if p.split == "dev"}) > 0


def test_first_rule_encodes_the_dev_and_test_pairs_and_nothing_else(minilm, tmp_path, monkeypatch):
    """Issue 30: on an empty cache the rule's one forward pass is over eval wic's dev/test pair
    sentences (the layer choice, the threshold and the logistic all read it); no train pairs are
    encoded, so the cache holds exactly one span encoding, the one `prepare` checks for."""
    from contextlens.analyses.lesson import same_sense as same_sense_module
    from contextlens.analyses.lesson.same_sense import rule_cached
    from contextlens.analyses.measures import layer_choice, span_encoding
    from contextlens.analyses.measures.wic_pairs import build_wic_set, wic_is_encoded
    from contextlens.core import disk_cache

    monkeypatch.setattr(disk_cache, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(same_sense_module, "_rules", {})
    monkeypatch.setattr(layer_choice, "_memory", {})
    encoded: list[list[str]] = []
    inner = span_encoding._encode

    def recorded(model, texts, spans, chunk_size, progress):  # noqa: ANN001, ANN202 - the forward, counted
        encoded.append(list(texts))
        return inner(model, texts, spans, chunk_size, progress)

    monkeypatch.setattr(span_encoding, "_encode", recorded)
    assert not rule_cached(minilm, "quick")
    rule = same_sense_rule(minilm, "auto", "quick")
    assert encoded == [build_wic_set("quick").texts]  # once, eval wic's dev and test sentences only
    entries = sorted((tmp_path / "arrays").glob("spans-*/*.npz"))
    assert len(entries) == 1 and wic_is_encoded(minilm, "quick") and rule_cached(minilm, "quick")
    assert rule.dev_pairs + rule.test_pairs == len(build_wic_set("quick").wic.pairs)


def test_full_dev_and_test_pairs_are_as_before():
    """The data the rule is tuned, fitted and measured on (docs/benchmarks.md's numbers)."""
    from contextlens.analyses.measures.wic_pairs import build_wic_set

    counts = build_wic_set("full").wic.counts
    assert counts["dev"]["pairs"] == 606 and counts["test"]["pairs"] == 1394
    assert counts["dev"]["same"] == counts["dev"]["different"] == 303


def test_this_pairs_line_stops_above_the_counts_at_the_bars_foot(minilm):
    """Issue 33 item 10: at 390 px the "this pair" line crossed its bin's count; it now starts above
    the row of counts (their top: their height in data units plus the text's in pixels)."""
    from contextlens.reports.interactive import same_sense_figures

    answer = same_sense(RIVER, MONEY, minilm, size="quick")
    (fig,) = same_sense_figures(answer)
    counts = next(t for t in fig.data if getattr(t, "mode", None) == "text")
    assert [int(c) for c in counts.text] == [b["pairs"] for b in answer.rule.reliability]
    (line,) = [s for s in fig.layout.shapes if s.type == "line" and s.x0 == answer.probability]
    margin = fig.layout.margin
    plot_px = fig.layout.height - (margin.t or 100) - (margin.b or 80)  # plotly's default margins where unset
    counts_top = max(counts.y) / fig.layout.yaxis.range[1] + counts.textfont.size / plot_px
    assert line.yref.endswith("domain") and line.y0 > counts_top, (line.y0, counts_top)
