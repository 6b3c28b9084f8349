"""Attention attribution: rollout on a known case, the target's rows, special-token exclusion, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from contextlens.analyses.lesson.attention import attend, renormalise_without, rollout
from contextlens.cli import app
from contextlens.core.occurrences import parse_marked
from contextlens.errors import InputError
from tests.helpers import figure_count, run_cli

FIN, RIVER = "The [bank] approved the loan.", "The river [bank] flooded."


def test_rollout_on_a_known_case():
    a1 = np.array([[0.0, 1.0], [1.0, 0.0]])  # swap
    a2 = np.array([[1.0, 0.0], [0.5, 0.5]])
    att = np.stack([np.stack([a1, a1]), np.stack([a2, a2])])  # (L=2, H=2, 2, 2), identical heads
    out = rollout(att)
    r1 = np.array([[0.5, 0.5], [0.5, 0.5]])  # (A + I) / 2
    r2 = np.array([[1.0, 0.0], [0.25, 0.75]]) @ r1
    np.testing.assert_allclose(out[0], r1)
    np.testing.assert_allclose(out[1], r2)


def test_renormalise_without_drops_columns_and_keeps_rows_stochastic():
    rows = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    out = renormalise_without(rows, [True, False, False])
    np.testing.assert_allclose(out, [[0.0, 0.6, 0.4], [0.0, 1 / 9, 8 / 9]])


def test_attend_on_minilm_matches_the_model_s_own_attention(minilm):
    result = attend([parse_marked(FIN), parse_marked(RIVER)], minilm, layer=6, head=3)
    fp = minilm.forward_one(parse_marked(RIVER), attentions=True)
    m = result.maps[1]
    (target,) = m.target_positions
    assert m.tokens[target] == "bank"
    np.testing.assert_allclose(m.weights, fp.attentions[:, :, target, :], atol=1e-6)
    np.testing.assert_allclose(m.head_mean, m.weights.mean(axis=1))
    np.testing.assert_allclose(m.row(6, 3), fp.attentions[5, 3, target], atol=1e-6)
    np.testing.assert_allclose(m.weights.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(m.rollout.sum(-1), 1.0, atol=1e-9)
    assert m.top(6, 3)[0][1] == pytest.approx(m.row(6).max())
    excluded = attend([parse_marked(RIVER)], minilm, exclude_special=True).maps[0]
    assert np.all(excluded.weights[..., [0, -1]] == 0.0)
    np.testing.assert_allclose(excluded.weights.sum(-1), 1.0, atol=1e-9)
    assert all(tok not in ("[CLS]", "[SEP]") for tok, _ in excluded.top(6, k=5))


def test_multi_token_target_row_is_the_mean_of_its_tokens(minilm):
    result = attend([parse_marked("We rested on the [riverbank] at noon.")], minilm, layer=1, head=0)
    m = result.maps[0]
    assert len(m.target_positions) == 2
    fp = minilm.forward_one(parse_marked("We rested on the [riverbank] at noon."), attentions=True)
    np.testing.assert_allclose(m.weights, fp.attentions[:, :, m.target_positions, :].mean(axis=2), atol=1e-6)


def test_layer_or_head_out_of_range(minilm):
    with pytest.raises(InputError, match="attention layers 1..6"):
        attend([parse_marked(FIN)], minilm, layer=7)
    with pytest.raises(InputError, match="attention layers 1..6"):
        attend([parse_marked(FIN)], minilm, layer=0)
    with pytest.raises(InputError, match="heads 0..11"):
        attend([parse_marked(FIN)], minilm, head=12)
    r = run_cli("attention", FIN, "-m", "minilm", "--layer", "9")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "layer 9 is out of range" in r.stderr


def test_attention_cli_two_sentences_table_json_plot_html(tmp_path):
    png, page = tmp_path / "a.png", tmp_path / "a.html"
    runner = CliRunner()
    args = ["attention", FIN, RIVER, "-m", "minilm", "--layer", "2", "--head", "5"]
    out = runner.invoke(app, [*args, "--json", "--plot", str(png), "--html", str(page)])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout[out.stdout.index("{") :])
    assert doc["layer"] == 2 and len(doc["sentences"]) == 2
    assert len(doc["sentences"][1]["selected"]["matrix"]) == len(doc["sentences"][1]["tokens"])
    # three interactive figures: the heads, the head mean, the rollout
    assert png.stat().st_size > 10_000 and figure_count(page.read_text()) == 3
    table = runner.invoke(app, [*args, "--exclude-special"])
    assert table.exit_code == 0 and "rollout" in table.stdout and "[CLS]" not in table.stdout


def test_attend_through_a_layer_runs_only_that_far_and_matches_the_full_forward(minilm):
    occs = [parse_marked(FIN), parse_marked("We rested on the [riverbank] at noon.")]
    full = attend(occs, minilm, layer=2, head=1)
    part = attend(occs, minilm, layer=2, head=1, through=3)
    ran: list[int] = []
    blocks = minilm.attention_model.encoder.layer  # attention weights come from the eager twin
    handles = [
        b.register_forward_pre_hook(lambda _m, _a, k=k: ran.append(k), prepend=True) for k, b in enumerate(blocks)
    ]
    try:
        fp = minilm.forward_one(occs[0], attentions=True, through=3)
    finally:
        for h in handles:
            h.remove()
    assert ran == [0, 1, 2] and fp.computed_layers == (0, 1, 2, 3)  # blocks 4..6 never ran
    assert fp.hidden_states.shape[0] == 4 and fp.attentions.shape[0] == 3
    every = minilm.forward_one(occs[0], attentions=True)
    assert every.computed_layers == tuple(range(7))
    np.testing.assert_allclose(fp.hidden_states, every.hidden_states[:4], atol=1e-6, rtol=0)
    np.testing.assert_allclose(fp.attentions, every.attentions[:3], atol=1e-6, rtol=0)
    for a, b in zip(part.maps, full.maps, strict=True):
        assert a.num_layers == 3 and b.num_layers == 6
        np.testing.assert_allclose(a.weights, b.weights[:3], atol=1e-6, rtol=0)
        np.testing.assert_allclose(a.rollout, b.rollout[:3], atol=1e-6, rtol=0)
        np.testing.assert_allclose(a.full, b.full[:3], atol=1e-6, rtol=0)
    with pytest.raises(InputError, match="through=1"):
        attend(occs, minilm, layer=2, through=1)


@pytest.mark.parametrize("name", ["minilm", "mpnet"])
def test_forward_one_attentions_equal_the_model_s_own_output_attentions(name, request):
    model = request.getfixturevalue(name)
    occ = parse_marked(RIVER)
    fp = model.forward_one(occ, attentions=True)
    ids, mask = model.pad([fp.tokenized.input_ids])
    out = model.run(ids, mask, hidden_states=True, attentions=True)  # the eager twin's own outputs
    assert fp.attentions.shape[0] == len(out.attentions) == model.num_layers
    for layer, a in enumerate(out.attentions):
        np.testing.assert_allclose(fp.attentions[layer], a[0].numpy(), atol=1e-6, rtol=0)
    for layer, h in enumerate(out.hidden_states):
        np.testing.assert_allclose(fp.hidden_states[layer], h[0].numpy(), atol=1e-6, rtol=0)
