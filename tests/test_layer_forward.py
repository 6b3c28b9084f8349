"""Stopping at the highest requested layer: the states are those of the full forward."""

from __future__ import annotations

import pytest
import torch

from contextlens.core.contextual_models import ContextualModel
from contextlens.core.occurrences import locate
from contextlens.core.precision import check_precision
from contextlens.errors import InputError

TEXTS = [
    "The river bank flooded the low fields after three days of rain.",
    "She deposited the cheque at the bank on Monday.",
    "Bank.",
]


def _full(model: ContextualModel, ids: torch.Tensor, mask: torch.Tensor):
    return model.run(ids, mask, hidden_states=True).hidden_states


@pytest.mark.parametrize("name", ["minilm", "mpnet"])
def test_partial_forward_equals_full_forward(name: str, request: pytest.FixtureRequest) -> None:
    model: ContextualModel = request.getfixturevalue(name)
    ids, mask = model.pad([model.tokenizer(t)["input_ids"] for t in TEXTS])
    full = _full(model, ids, mask)
    top = model.num_layers
    for layers in [(0,), (1,), (0, top // 2), (2, 3), (top,), tuple(range(top + 1))]:
        got = model.run_layers(ids, mask, layers)
        for layer, state in zip(layers, got, strict=True):
            assert state.shape == full[layer].shape
            assert torch.allclose(state, full[layer], atol=1e-6, rtol=0), (name, layers, layer)


def test_blocks_above_the_highest_layer_do_not_run(minilm: ContextualModel) -> None:
    ran: list[int] = []
    blocks = minilm.model.encoder.layer
    handles = [
        b.register_forward_pre_hook(lambda _m, _a, k=k: ran.append(k), prepend=True) for k, b in enumerate(blocks)
    ]
    try:
        ids, mask = minilm.pad([minilm.tokenizer(TEXTS[0])["input_ids"]])
        minilm.run_layers(ids, mask, (0, 2))
        assert ran == [0, 1]  # blocks 1 and 2 (0-indexed 0, 1); 3..6 skipped
        ran.clear()
        minilm.run_layers(ids, mask, (0,))
        assert ran == [0]  # the hook on block 1's input stops before it runs
    finally:
        for h in handles:
            h.remove()


def test_encode_with_few_layers_matches_all_layers(minilm: ContextualModel) -> None:
    occs = [locate(t, "bank", 0) for t in TEXTS[:2]] + [locate("Bank.", "Bank", 0)]
    every = minilm.encode_occurrences(occs)
    for pooling in ("mean", "first", "last"):
        some = minilm.encode_occurrences(occs, layers=[1, 3], pooling=pooling)
        ref = minilm.encode_occurrences(occs, pooling=pooling) if pooling != "mean" else every
        for a, b in zip(some, ref, strict=True):
            assert a.layers == (1, 3) and a.computed_layers == (0, 1, 2, 3)
            for layer in (1, 3):
                assert abs(a.hidden_state(layer).values - b.hidden_state(layer).values).max() < 1e-6
            assert abs(a.input_row().values - b.input_row().values).max() < 1e-6


def test_token_states_and_text_pooling_use_requested_layers_only(minilm: ContextualModel) -> None:
    ts = minilm.token_states(TEXTS[:2], layers=[2])
    assert ts[0].layers == (2,) and ts[0].computed_layers == (0, 1, 2)
    # the full forward of the same padded batch: a batch of another shape may take other matmul
    # kernels (AVX-512 ones differ by ~1e-6 between a batch of one and of two), which is not the
    # layer cut under test. TEXTS[0] is the longer text, so its row has no padding.
    ids, mask = minilm.pad([minilm.tokenizer(t)["input_ids"] for t in TEXTS[:2]])
    full = _full(minilm, ids, mask)[2][0, 1:-1]  # specials dropped
    assert torch.allclose(torch.from_numpy(ts[0].states[0]), full, atol=1e-6)
    pooled = minilm.embed_texts_layers(TEXTS, layers=[1, -1])
    every = minilm.embed_texts_layers(TEXTS)
    assert abs(pooled[0] - every[1]).max() < 1e-6 and abs(pooled[1] - every[-1]).max() < 1e-6


def test_unknown_precision_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown precision"):
        check_precision("fp99")


def test_int8_is_a_separate_model_with_measured_drift(minilm: ContextualModel) -> None:
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.drift import drift

    int8 = load_contextual("minilm", "int8")
    assert int8 is not minilm and int8.precision == "int8" and minilm.precision == "fp32"
    assert load_contextual("minilm", "int8") is int8  # cached per name and precision
    d = drift("minilm")
    assert len(d.mean_cosine) == len(d.min_cosine) == minilm.num_layers + 1
    assert d.mean_cosine[0] == pytest.approx(1.0, abs=1e-6)  # embeddings are not quantized
    assert all(0.5 < lo <= m < 1.0 for m, lo in zip(d.mean_cosine[1:], d.min_cosine[1:], strict=True))
    assert d.worst_mean == min(d.mean_cosine) and "6:" in d.line()
    occ = locate(TEXTS[0], "bank", 0)
    a, b = minilm.encode(occ, layers=[-1]).hidden_state(-1), int8.encode(occ, layers=[-1]).hidden_state(-1)
    cos = float(a.values @ b.values / ((a.values @ a.values) * (b.values @ b.values)) ** 0.5)
    assert 0.8 < cos < 1.0  # close, not equal: int8 is not exact


def test_cli_precision_and_threads_options() -> None:
    import json

    from tests.helpers import run_cli

    before = torch.get_num_threads()
    try:
        args = ("compare", "The [bank] lent money.", "The river [bank] flooded.", "-m", "minilm", "--json")
        threads = torch.get_num_threads() + 1  # not the count the tests run with: --threads is applied
        r = run_cli(*args, "--precision", "int8", "--threads", str(threads))
        assert r.returncode == 0, r.stderr
        assert torch.get_num_threads() == threads
        assert "int8 drift vs fp32 (minilm" in r.stderr and "6:" in r.stderr
        assert json.loads(r.stdout)["model"] == "minilm"  # stdout stays one JSON document
        bad = run_cli(*args, "--precision", "fp99")
        assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
            "error: unknown precision 'fp99'; use one of fp32, int8, fp16, bf16"
        ]
        assert run_cli(*args, "--threads", "0").returncode == 2
    finally:
        torch.set_num_threads(before)


def test_extraction_batches_are_sorted_by_length(minilm: ContextualModel, monkeypatch: pytest.MonkeyPatch) -> None:
    """Longest first, so each batch pads to nearly its own length (the batches were once sorted
    by how many targets share a sentence, which left them in input order)."""
    words = ["a", "b", "c", "d", "e", "f"]
    occs = [locate(" ".join(["x"] * (1 + 3 * (k % 3))) + f" [{w}]") for k, w in enumerate(words)]
    widths: list[list[int]] = []
    real_pad = minilm.pad
    monkeypatch.setattr(minilm, "pad", lambda seqs: widths.append([len(s) for s in seqs]) or real_pad(seqs))
    minilm.clear_cache()
    minilm.encode_occurrences(occs, layers=[1], batch_size=2)
    flat = [w for batch in widths for w in batch]
    assert flat == sorted(flat, reverse=True) and len(set(flat)) == 3


@pytest.mark.parametrize("pooling", ["mean", "first", "last"])
def test_batched_extraction_equals_the_full_forward_per_sentence(minilm: ContextualModel, pooling: str) -> None:
    """Several targets per sentence (one sequence, one pass), words of one and several tokens,
    the same span twice, sentences of different lengths in one batch: every occurrence's pooled
    rows equal those of ``output_hidden_states`` on its sentence alone."""
    texts = [
        "The riverbank and the overdraft fee surprised the bank.",
        "Bank.",
        "An unbelievably long sentence about the bank manager, her overdraft, and a riverbank walk.",
    ]
    occs = [
        locate(texts[0], "riverbank"),
        locate(texts[0], "overdraft"),
        locate(texts[0], "bank"),
        locate(texts[0], "bank"),
        locate(texts[1], "Bank"),
        locate(texts[2], "unbelievably"),
        locate(texts[2], "riverbank"),
    ]
    minilm.clear_cache()
    got = minilm.encode_occurrences(occs, pooling=pooling, batch_size=2)
    minilm.clear_cache()
    unpadded = minilm.encode_occurrences(occs, pooling=pooling, batch_size=1)
    assert any(len(g.tokenized.target_positions) > 1 for g in got)
    for enc, alone in zip(got, unpadded, strict=True):
        tok = enc.tokenized
        ids = torch.tensor([list(tok.input_ids)])
        with torch.inference_mode():
            states = minilm.model(input_ids=ids, output_hidden_states=True).hidden_states
        pos = list(tok.target_positions)
        pos = pos if pooling == "mean" else [pos[0] if pooling == "first" else pos[-1]]
        want = torch.stack([s[0, pos].mean(0) for s in states]).numpy()
        assert abs(alone.hidden - want).max() < 1e-6  # one sentence per pass: the same numbers
        assert abs(enc.hidden - want).max() < 1e-5  # padded in a batch: not bit-exact, close
        rows = minilm.model.get_input_embeddings().weight[ids[0, pos]].mean(0).detach().numpy()
        assert abs(enc.input_row_values - rows).max() < 1e-6
