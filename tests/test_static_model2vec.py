"""The distillation computed here is model2vec's own: each step checked against model2vec 0.10's
functions on minilm. model2vec's ``distill`` extra pins transformers<5.4 (contextlens runs on
5.24), so its steps are loaded from its installed source file (inference.py imports only torch
and transformers) and its ``StaticModel`` encodes with our vectors."""

from __future__ import annotations

import importlib.util

import model2vec  # pinned in the [static] extra, which `make setup` installs
import numpy as np
import pytest


@pytest.fixture(scope="module")
def m2v_inference():
    spec = importlib.util.spec_from_file_location("m2v_inference", model2vec.__path__[0] + "/distill/inference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_token_vectors_pca_and_sif_are_model2vecs(minilm, m2v_inference):
    from contextlens.analyses.static.distill import pca, sif_weights, token_embeddings, vocabulary_tokens

    tokens = vocabulary_tokens(minilm.tokenizer)[1000:1400]
    ids = [i for i, _ in tokens]
    ours = token_embeddings(minilm, ids, batch_size=128)
    cls, sep = minilm.tokenizer.cls_token_id, minilm.tokenizer.sep_token_id
    theirs = m2v_inference.create_embeddings(
        minilm.model, [[cls, i, sep] for i in ids], device="cpu", pad_token_id=0, pooling="mean"
    )
    assert np.allclose(ours, theirs, atol=1e-5)
    reduced, _ = pca(ours, 32)
    assert np.allclose(reduced, m2v_inference.apply_pca(ours.copy(), 32), atol=1e-6)
    assert np.allclose(sif_weights(len(ids), 1e-4), m2v_inference.compute_weights(len(ids), 1e-4))


def test_encode_matches_model2vecs_static_model(own_m2v):
    from tokenizers import Tokenizer

    from contextlens.core.static_store import TOKENIZER, made_dir

    static = own_m2v
    tokenizer = Tokenizer.from_file(str(made_dir("m2v") / TOKENIZER))
    vocab = tokenizer.get_vocab()
    full = np.zeros((max(vocab.values()) + 1, static.dim), dtype=np.float32)
    for token, row in static.kv.key_to_index.items():
        full[vocab[token]] = static.kv.vectors[row]
    theirs = model2vec.StaticModel(vectors=full, tokenizer=tokenizer, normalize=True)
    texts = ["the cat sat on the mat", "Interest rates rose at the bank.", "a river bank in spring"]
    assert np.allclose(static.encode(texts), theirs.encode(texts), atol=1e-5)


@pytest.fixture()
def own_m2v(tmp_path, monkeypatch, minilm):
    from contextlens.analyses.static import distill
    from contextlens.core.static_models import load_static

    monkeypatch.setenv("CONTEXTLENS_CACHE", str(tmp_path))
    full = distill.vocabulary_tokens
    monkeypatch.setattr(distill, "vocabulary_tokens", lambda tok: full(tok)[:4000])
    distill.distill_static(minilm, name="m2v", pca_dims=48)
    return load_static("m2v")
