"""Input-row share per layer, averaged over a corpus (trace --corpus)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.corpus.texts import corpus_texts
from contextlens.analyses.lesson.input_share import input_row_share
from contextlens.cli import main
from contextlens.errors import InputError


def test_layer_zero_is_mostly_the_input_row_and_it_fades(minilm) -> None:
    share = input_row_share(minilm, corpus_texts("builtin", 20), "builtin")
    own, other = np.array(share.to_input_row), np.array(share.to_other_row)
    assert share.layers == list(range(minilm.num_layers + 1))
    assert own[0] > 0.8  # embedding output = LayerNorm(row + position + type): still mostly the row
    assert own[-1] < own[0]  # context is written over it
    assert (own > other).all()  # every layer keeps more of its own row than of a neighbour's
    assert share.to_position_row is not None and len(share.to_position_row) == len(own)
    assert share.tokens > 100


def test_trace_corpus_adds_the_share_to_json(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(
            ["trace", "The river [bank] flooded.", "--model", "minilm", "--corpus", "builtin", "--limit", "8", "--json"]
        )
    assert exit_info.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["input_row_share"]["texts"] == 8
    assert len(doc["input_row_share"]["layers"]) == 7
    assert "layers" in doc and doc["model"] == "minilm"  # the one-sentence trace is unchanged


def test_too_few_texts(minilm) -> None:
    with pytest.raises(InputError, match="at least 5 texts"):
        input_row_share(minilm, ["One text.", "Two texts."])
