import numpy as np
import pytest
import torch

from contextlens import InputError, parse_marked
from contextlens.core.similarity import cosine

BANK_FIN = "The [bank] called about my account."
BANK_RIVER = "The river [bank] flooded last night."


def test_layer_counts_and_provenance(minilm, mpnet):
    for model, layers, dim in ((minilm, 7, 384), (mpnet, 13, 768)):
        enc = model.encode(parse_marked(BANK_FIN))
        assert enc.layers == tuple(range(layers))
        assert enc.hidden.shape == (layers, dim)
        vec = enc.hidden_state(layers - 1)
        assert vec.provenance.model == model.name
        assert vec.provenance.kind == "hidden-state" and vec.provenance.layer == layers - 1
        assert enc.input_row().provenance.kind == "input-row"


def test_requested_layers_only(minilm):
    enc = minilm.encode(parse_marked(BANK_FIN), layers=[-1, 0, 3])
    assert enc.layers == (0, 3, 6)
    full = minilm.encode(parse_marked(BANK_FIN))
    assert np.allclose(enc.hidden, full.hidden[[0, 3, 6]], atol=1e-5)
    with pytest.raises(InputError, match="out of range"):
        minilm.encode(parse_marked(BANK_FIN), layers=[7])


def test_input_rows_are_static_across_sentences(minilm):
    a, b = minilm.encode_occurrences([parse_marked(BANK_FIN), parse_marked(BANK_RIVER)])
    assert cosine(a.input_row(), b.input_row()) == 1.0
    assert np.array_equal(a.input_row_values, minilm.model.get_input_embeddings().weight[2924].detach().numpy())
    # hidden_states[0] is the embedding *output* (row + position + LayerNorm): not identical
    assert cosine(a.hidden_state(0), b.hidden_state(0)) < 1.0


def test_multi_token_word_is_pooled_over_all_its_tokens(minilm):
    occ = parse_marked("The [overdraft] fee was high.")
    tok = minilm.tokenize(occ)
    assert [tok.tokens[i] for i in tok.target_positions] == ["over", "##dra", "##ft"]
    mean = minilm.encode(occ, pooling="mean")
    first = minilm.encode(occ, pooling="first")
    last = minilm.encode(occ, pooling="last")
    ids = torch.tensor([list(tok.input_ids)])
    with torch.inference_mode():
        states = minilm.model(input_ids=ids, output_hidden_states=True).hidden_states
    pos = list(tok.target_positions)
    assert np.allclose(mean.hidden[6], states[6][0, pos].mean(0).numpy(), atol=1e-5)
    assert np.allclose(first.hidden[6], states[6][0, pos[0]].numpy(), atol=1e-5)
    assert np.allclose(last.hidden[6], states[6][0, pos[-1]].numpy(), atol=1e-5)
    with pytest.raises(InputError, match="pooling"):
        minilm.encode(occ, pooling="max")


def test_batched_equals_one_at_a_time(minilm):
    sentences = [BANK_FIN, BANK_RIVER, "A [bank] is a place where money is kept safe for a long long time."]
    occs = [parse_marked(s) for s in sentences]
    minilm.clear_cache()
    batched = minilm.encode_occurrences(occs, batch_size=3)
    minilm.clear_cache()
    single = [minilm.encode_occurrences([o], batch_size=1)[0] for o in occs]
    for b, s in zip(batched, single, strict=True):
        assert np.allclose(b.hidden, s.hidden, atol=1e-4)


def test_results_come_back_in_input_order_and_from_cache(minilm):
    occs = [parse_marked(s) for s in ("Short [bank].", BANK_RIVER, "x " * 30 + "[bank] y.")]
    first = minilm.encode_occurrences(occs)
    assert [e.occurrence for e in first] == occs
    again = minilm.encode_occurrences(occs)
    assert all(a is b for a, b in zip(first, again, strict=True))


def test_target_beyond_max_length_gets_a_window(minilm):
    filler = "the water rose slowly over the fields and " * 80  # ~700 tokens
    occ = parse_marked(filler + "then the river [bank] gave way.")
    tok = minilm.tokenize(occ)
    assert len(minilm.tokenizer(occ.text)["input_ids"]) > minilm.max_length
    assert tok.truncated and len(tok) == minilm.max_length
    assert tok.window[0] <= occ.start < occ.end <= tok.window[1]
    assert [tok.tokens[i] for i in tok.target_positions] == ["bank"]
    assert tok.tokens[0] == "[CLS]" and tok.tokens[-1] == "[SEP]"
    enc = minilm.encode(occ)
    assert enc.truncated and enc.hidden.shape == (7, 384) and np.all(np.isfinite(enc.hidden))


def test_sentence_embeddings_match_sentence_transformers(minilm):
    from sentence_transformers import SentenceTransformer

    texts = ["The river bank flooded.", "The bank approved the loan for the new house."]
    ours = minilm.embed_sentences(texts)
    reference = SentenceTransformer(minilm.source, device="cpu").encode(texts)
    assert np.allclose(ours, reference, atol=1e-5)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_every_token_states(minilm):
    (states,) = minilm.token_states(["The river bank flooded."], layers=[0, -1])
    assert states.tokens == ("the", "river", "bank", "flooded", ".")
    assert states.states.shape == (2, 5, 384)


def test_a_model_still_held_is_handed_out_again_not_loaded_twice(minilm):
    """The load cache keeps the 6 latest models; one it dropped that somebody still holds (here the
    session's minilm) comes back as that instance, with its occurrence cache, not as a second copy."""
    from contextlens.core import contextual_models
    from contextlens.core.contextual_models import forget_loaded, load_contextual

    contextual_models._load_once.cache_clear()  # as if six other models had been loaded since
    assert load_contextual("minilm") is minilm
    try:
        forget_loaded("minilm")  # another model under that name now (tune --force): read again
        again = load_contextual("minilm")
        assert again is not minilm and again.name == "minilm"
    finally:  # the session's instance again, for the tests after this one
        forget_loaded("minilm")
        contextual_models._held.live[("minilm", minilm.backend)] = minilm
    assert load_contextual("minilm") is minilm
