"""The sense probe: scores equal hand-computed cosines, anchor sentences, anchor errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from contextlens.analyses.lesson.probe import check_anchor, load_anchor_sentences, probe
from contextlens.cli import app
from contextlens.cli.probe import split_anchor_words
from contextlens.core.occurrences import in_template, parse_marked
from contextlens.core.similarity import cosine_values
from contextlens.errors import DataFileError, InputError, OutOfVocabularyError
from tests.helpers import figure_count, run_cli

RIVER, ACCOUNT = "We walked along the river [bank].", "I opened a [bank] account."


def test_probe_scores_are_cosines_of_hidden_states_at_each_layer(minilm):
    result = probe([parse_marked(RIVER), parse_marked(ACCOUNT)], ["shore", "deposit"], minilm)
    assert result.layers == list(range(minilm.num_layers + 1)) and result.layer == minilm.num_layers
    target, shore = minilm.encode_occurrences([parse_marked(RIVER), in_template("shore", result.template)])
    for k in (0, 3, minilm.num_layers):
        assert result.sentences[0].scores[k, 0] == pytest.approx(cosine_values(target.hidden[k], shore.hidden[k]))
    assert result.at().shape == (2, 2)
    assert result.best_anchor(0) == result.anchors[int(np.argmax(result.at()[0]))]
    assert json.dumps(result.to_dict())


def test_anchor_sentences_are_averaged(minilm, tmp_path):
    f = tmp_path / "anchors.tsv"
    f.write_text("shore\tWaves broke on the [shore].\nshore\tWe walked along the [shore] at dawn.\n")
    given = load_anchor_sentences(f)
    result = probe([parse_marked(RIVER)], ["shore", "deposit"], minilm, given)
    assert result.anchor_sources == ["mean of 2 sentences", "template"]
    encs = minilm.encode_occurrences([parse_marked(RIVER), *given["shore"]])
    mean = (encs[1].hidden[-1] + encs[2].hidden[-1]) / 2
    assert result.sentences[0].scores[-1, 0] == pytest.approx(cosine_values(encs[0].hidden[-1], mean))
    f.write_text("shore\tWaves broke on the shore.\n")
    with pytest.raises(DataFileError, match=r"anchors\.tsv, line 1"):
        load_anchor_sentences(f)


def test_bad_anchors(minilm):
    with pytest.raises(InputError, match="empty"):
        check_anchor("  ", minilm)
    with pytest.raises(InputError, match="not a single word"):
        check_anchor("river bank", minilm)
    with pytest.raises(OutOfVocabularyError, match="not in minilm's vocabulary"):
        check_anchor("ᚠᚢᚦ", minilm)
    with pytest.raises(InputError, match="no anchors"):
        probe([parse_marked(RIVER)], [], minilm)
    r = run_cli("probe", RIVER, "--anchors", "ᚠᚢᚦ", "-m", "minilm")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "vocabulary" in r.stderr


def test_anchor_words_after_the_option_are_anchors_not_sentences():
    assert split_anchor_words([RIVER, "deposit"], ["shore"]) == ([RIVER], ["shore", "deposit"])
    assert split_anchor_words([RIVER], ["shore,deposit"]) == ([RIVER], ["shore", "deposit"])


def test_probe_cli_table_json_plot_html(tmp_path):
    png, page = tmp_path / "p.png", tmp_path / "p.html"
    runner = CliRunner()
    args = ["probe", RIVER, ACCOUNT, "--anchors", "shore", "deposit", "-m", "minilm"]
    out = runner.invoke(app, [*args, "--json", "--plot", str(png), "--html", str(page)])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout[out.stdout.index("{") :])
    assert [a["word"] for a in doc["anchors"]] == ["shore", "deposit"] and len(doc["sentences"]) == 2
    assert png.stat().st_size > 10_000 and figure_count(page.read_text()) == 2
    table = runner.invoke(app, args)
    assert table.exit_code == 0 and "closest anchor" in table.stdout


def test_static_scores_are_the_same_in_every_sentence(minilm, glove):
    result = probe([parse_marked(RIVER), parse_marked(ACCOUNT)], ["shore", "deposit"], minilm, static=glove)
    assert result.static_model == "glove-50d"
    assert np.array_equal(result.static_scores[0], result.static_scores[1])
    assert result.static_scores[0, 1] == pytest.approx(glove.similarity("bank", "deposit"))
    (group,) = result.static_groups()
    assert group[0] == "bank"
    data = result.to_dict()
    assert data["sentences"][0]["static_scores"] == data["sentences"][1]["static_scores"]


def test_anchor_outside_the_static_vocabulary_is_refused_by_the_cli():
    result = run_cli("probe", RIVER, "--anchors", "shore", "qzxqzxqzx", "--model", "minilm")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "not in the vocabulary of glove-50d" in result.stderr.strip().splitlines()[-1]
