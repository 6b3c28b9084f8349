"""Trace: tokens, ids, input rows, positions and per-layer numbers agree with the model's own tensors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from contextlens.analyses.lesson.trace import trace
from contextlens.cli import app
from contextlens.core.occurrences import parse_marked
from contextlens.core.similarity import cosine_values
from tests.helpers import figure_count, run_cli

RIVER = "The river [bank] flooded."


def test_trace_numbers_match_the_forward_pass(minilm):
    occ = parse_marked(RIVER)
    t = trace(occ, minilm, top_k=2)
    fp = minilm.forward_one(occ, attentions=True)
    assert t.tokens == ["[CLS]", "the", "river", "bank", "flooded", ".", "[SEP]"]
    assert t.token_ids == minilm.tokenizer(occ.text)["input_ids"]
    assert t.target_tokens == ["bank"] and len(t.layers) == minilm.num_layers + 1
    (p,) = t.target_positions
    assert t.target_input_row_norm == pytest.approx(np.linalg.norm(fp.input_rows[p]), rel=1e-6)
    for layer in (0, 3, 6):
        h = fp.hidden_states[layer][p]
        assert t.layers[layer].cosine_to_input_row == pytest.approx(cosine_values(h, fp.input_rows[p]), abs=1e-6)
        assert t.layers[layer].norm == pytest.approx(np.linalg.norm(h), rel=1e-5)
    assert t.layers[0].top_attended == []
    top = t.layers[4].top_attended
    assert len(top) == 2 and top[0][1] >= top[1][1]
    assert top[0][1] == pytest.approx(fp.attentions[3, :, p, :].mean(axis=0).max(), abs=1e-6)
    assert t.has_learned_positions and len(t.position_row_norms) == len(t.tokens)
    assert t.layer0_cosine_to_row_plus_position > 0.9  # embedding output = LayerNorm(row + position + type)
    excluded = trace(occ, minilm, exclude_special=True)
    assert all(tok not in ("[CLS]", "[SEP]") for layer in excluded.layers for tok, _ in layer.top_attended)


def test_trace_cli_table_json_plot_html(tmp_path):
    png, page = tmp_path / "t.png", tmp_path / "t.html"
    runner = CliRunner()
    out = runner.invoke(app, ["trace", RIVER, "-m", "minilm", "--json", "--plot", str(png), "--html", str(page)])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout[out.stdout.index("{") :])
    assert [x["token"] for x in doc["tokens"]][3] == "bank" and len(doc["layers"]) == 7
    assert png.stat().st_size > 10_000 and figure_count(page.read_text()) >= 1
    table = runner.invoke(app, ["trace", "The bank by the bank.", "--word", "bank", "-n", "1", "-m", "minilm"])
    assert table.exit_code == 0 and "cosine to input row" in table.stdout and "positions" in table.stdout


def test_trace_without_marker_is_a_clear_error():
    r = run_cli("trace", "The river bank flooded.", "-m", "minilm")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no [marked] target" in r.stderr


def test_the_cosine_to_the_input_row_says_what_it_is(minilm):
    """A hidden state and an input row are two kinds: the typed cosine refuses them, so the trace's
    raw cosine between them says in its JSON and its table that it probes the residual stream."""
    from contextlens.analyses.lesson.trace import INPUT_ROW_COSINE_MEANS, trace
    from contextlens.core.occurrences import parse_marked
    from contextlens.core.similarity import cosine
    from contextlens.errors import ProvenanceMismatchError
    from tests.helpers import run_cli

    occ = parse_marked("The river [bank] flooded.")
    enc = minilm.encode(occ)
    with pytest.raises(ProvenanceMismatchError):
        cosine(enc.hidden_state(3), enc.input_row())
    doc = trace(occ, minilm).to_dict()
    assert doc["cosine_to_input_row_means"] == INPUT_ROW_COSINE_MEANS
    assert "not a similarity of two embeddings" in INPUT_ROW_COSINE_MEANS
    shown = run_cli("trace", "The river [bank] flooded.", "-m", "minilm")
    assert shown.returncode == 0 and "residual" in shown.stdout
