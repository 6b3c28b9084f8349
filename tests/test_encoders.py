"""Encoders of the three kinds: shapes, identities, and agreement with the core model methods."""

from __future__ import annotations

import numpy as np
import pytest

from contextlens.analyses.search.encoders import (
    TextEncoder,
    describe_encoder,
    encoder_dict,
    encoder_kind,
    hidden_means_every_layer,
    make_encoder,
    provenance_from_dict,
)
from contextlens.core.vectors import Provenance
from contextlens.errors import InputError

TEXTS = [
    "The river bank flooded after the storm.",
    "She opened a savings account at the bank.",
    "A bat flew out of the cave at dusk.",
]


def test_each_kind_gives_float32_rows_with_its_identity(minilm):
    for kind, layer in (("input-row", None), ("hidden-mean", 2), ("sentence", None)):
        enc = TextEncoder(minilm, kind, layer)
        x = enc.encode(TEXTS)
        assert x.shape == (3, minilm.hidden_size) and x.dtype == np.float32
        p = enc.provenance
        assert p.model == "minilm" and encoder_kind(p) == kind and p.layer == layer and p.dim == minilm.hidden_size
    assert TextEncoder(minilm, "hidden-mean").provenance.layer == minilm.num_layers  # default: last layer
    assert TextEncoder(minilm, "hidden-mean", -1).provenance.layer == minilm.num_layers


def test_kinds_are_the_core_methods(minilm):
    np.testing.assert_array_equal(TextEncoder(minilm, "input-row").encode(TEXTS), minilm.embed_input_rows(TEXTS))
    np.testing.assert_array_equal(TextEncoder(minilm, "sentence").encode(TEXTS), minilm.embed_sentences(TEXTS))
    np.testing.assert_allclose(
        TextEncoder(minilm, "hidden-mean", 3).encode(TEXTS), minilm.embed_texts(TEXTS, 3), rtol=0, atol=1e-6
    )


def test_one_pass_over_every_layer_matches_embed_texts(minilm):
    every = hidden_means_every_layer(minilm, TEXTS, batch_size=2, cache=False)
    assert every.shape == (minilm.num_layers + 1, 3, minilm.hidden_size)
    for layer in (0, 3, minilm.num_layers):
        np.testing.assert_allclose(every[layer], minilm.embed_texts(TEXTS, layer), rtol=1e-5, atol=1e-5)


def test_sentence_kind_is_the_normalized_last_layer_mean_for_minilm(minilm):
    """all-MiniLM-L6-v2 pools by mean + normalize, so cosines equal those of the last-layer mean."""
    sent = TextEncoder(minilm, "sentence").encode(TEXTS)
    last = TextEncoder(minilm, "hidden-mean").encode(TEXTS)
    last /= np.linalg.norm(last, axis=1, keepdims=True)
    np.testing.assert_allclose(sent, last, atol=1e-5)


def test_input_rows_ignore_context_but_hidden_states_do_not(minilm):
    """The seed's point: input rows of the same tokens in another order are identical."""
    a, b = "bank river the", "the river bank"
    rows = TextEncoder(minilm, "input-row").encode([a, b])
    np.testing.assert_allclose(rows[0], rows[1], atol=1e-6)
    sent = TextEncoder(minilm, "sentence").encode([a, b])
    assert not np.allclose(sent[0], sent[1], atol=1e-3)


def test_bad_encoder_requests_are_clear_errors(minilm):
    with pytest.raises(InputError, match="unknown encoder kind"):
        make_encoder("minilm", "cls")
    with pytest.raises(InputError, match="hidden-mean kind only"):
        TextEncoder(minilm, "sentence", 3)
    with pytest.raises(InputError, match="out of range"):
        TextEncoder(minilm, "hidden-mean", 40)
    with pytest.raises(InputError, match="empty"):
        TextEncoder(minilm, "sentence").encode(["fine", "  "])


def test_encoders_use_the_one_provenance_type(minilm):
    p = TextEncoder(minilm, "hidden-mean", 3).provenance
    assert type(p) is Provenance and (p.kind, p.pooling, p.layer, p.dim) == ("hidden-state", "mean", 3, 384)
    assert TextEncoder(minilm, "input-row").provenance.kind == "input-row"
    assert TextEncoder(minilm, "sentence").provenance.kind == "sentence"
    # the manifest and --kind keep their names; a stored encoder reads back as the same provenance
    stored = {"model": "minilm", "kind": "hidden-mean", "layer": 3, "dim": 384, "precision": "fp32"}
    assert encoder_dict(p) == stored and provenance_from_dict(stored) == p
    assert describe_encoder(p) == "minilm hidden-mean layer 3 (384-d)"
    with pytest.raises(InputError, match="unknown encoder kind"):
        provenance_from_dict({**stored, "kind": "hidden-state"})
