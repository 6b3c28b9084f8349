"""Input-row share per layer, averaged over a corpus (trace --corpus)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.lesson.input_share import input_row_share
from contextlens.cli import main
from contextlens.core.occurrences import Occurrence
from contextlens.data.text_sets import corpus_texts
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


# Varied texts: padding around the text, one real token (skipped: it has no neighbour), sub-word
# splits, digits and accents, repeated words, and one long text (padded against the short ones).
VARIED = [
    "The river bank flooded after the storm.",
    "  She deposited the cheque at the bank on Monday.  ",
    "Hello",
    "Antidisestablishmentarianism is a long word; pneumonoultramicroscopic, too.",
    "In 1984, 3.14159 and 2,718 were numbers — café, naïve, résumé.",
    "bank bank bank bank bank",
    "A bat flew out of the cave at dusk.",
    "He swung the bat and hit a home run!",
    "Why?",
    "The spring in the mattress broke, so we slept on the floor in spring.",
    "Light travels faster than sound, which is why lightning comes before thunder.",
    "Can you can a can as a canner can can a can?",
    "She left her left glove on the right side, right?",
    "e-mail, co-operate, well-known, state-of-the-art",
    "The committee postponed the vote until the financial report could be checked twice.",
    "OK.",
    "Tokens: [CLS] and [SEP] written as text are not the special tokens.",
    "The match was struck; the match was won; the colours did not match.",
    "Quantum chromodynamics describes the strong interaction between quarks and gluons.",
    " ".join(
        f"Sentence number {i} of the long text talks about banks, rivers, money and the weather in town."
        for i in range(12)
    ),
]


def _per_text_share(model, texts: list[str]) -> dict[str, object]:
    """The reference: the share as input_row_share computed it before it was batched, one
    forward_one pass per text (kept here so that the batched numbers can be checked against it)."""
    from contextlens.core.similarity import normalize_rows

    own, other, pos, n = [], [], [], 0
    for text in [t for t in texts if t.strip()]:
        start = len(text) - len(text.lstrip())
        fp = model.forward_one(Occurrence(text, start, len(text.rstrip())))
        keep = [i for i, s in enumerate(fp.tokenized.special) if not s]
        if len(keep) < 2:
            continue
        hidden = np.stack([normalize_rows(h[keep].astype(np.float64)) for h in fp.hidden_states])
        rows = normalize_rows(fp.input_rows[keep].astype(np.float64))
        own.append(np.einsum("ltd,td->l", hidden, rows))
        other.append(np.einsum("ltd,td->l", hidden, np.roll(rows, 1, axis=0)))
        if fp.position_rows is not None:
            pos.append(np.einsum("ltd,td->l", hidden, normalize_rows(fp.position_rows[keep].astype(np.float64))))
        n += len(keep)
    return {
        "tokens": n,
        "own": np.sum(own, axis=0) / n,
        "other": np.sum(other, axis=0) / n,
        "pos": np.sum(pos, axis=0) / n if pos else None,
    }


def _assert_same_as_per_text(model, texts: list[str], batch_size: int = 32, ref: dict | None = None) -> dict:
    share = input_row_share(model, texts, "varied", batch_size=batch_size)
    ref = ref or _per_text_share(model, texts)
    assert share.tokens == ref["tokens"]
    assert share.texts == len([t for t in texts if t.strip()])
    np.testing.assert_allclose(share.to_input_row, ref["own"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(share.to_other_row, ref["other"], rtol=0, atol=1e-6)
    if ref["pos"] is None:
        assert share.to_position_row is None
    else:
        np.testing.assert_allclose(share.to_position_row, ref["pos"], rtol=0, atol=1e-6)
    return ref


def test_batched_share_is_the_per_text_share_minilm(minilm) -> None:
    assert len(minilm.tokenize_many([Occurrence("Hello", 0, 5)])[0]) == 3  # one real token: skipped
    assert len(minilm.tokenize_many([Occurrence(VARIED[-1], 0, len(VARIED[-1]))])[0]) > 150
    ref = _assert_same_as_per_text(minilm, VARIED)
    _assert_same_as_per_text(minilm, VARIED, batch_size=3, ref=ref)  # texts split over several batches


def test_batched_share_is_the_per_text_share_mpnet(mpnet) -> None:
    # mpnet's positions start after its padding index (core/extraction.py: position_rows); short
    # texts of several lengths test that (the long text costs mpnet ~10 s on one thread)
    _assert_same_as_per_text(mpnet, VARIED[:8], batch_size=3)


def test_batched_share_on_onnx_runtime(minilm_onnx) -> None:
    _assert_same_as_per_text(minilm_onnx, VARIED[:8])
    assert input_row_share(minilm_onnx, VARIED[:8]).to_dict()["runtime"] == "onnx"


def test_a_text_longer_than_one_pass_is_read_up_to_what_fits(minilm) -> None:
    short = ["The river bank flooded.", "She paid at the bank.", "Spring came early.", "Plants grow."]
    counts = [len(minilm.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in short]
    long_text = " ".join(["the bank of the river is green and wide"] * 120)  # about 1,080 tokens
    fits = minilm.max_length - minilm.tokenizer.num_special_tokens_to_add()
    share = input_row_share(minilm, [*short, long_text], "mixed")
    assert share.truncated == 1 and share.texts == 5
    assert share.tokens == sum(counts) + fits  # the long text's first tokens, as many as fit
    assert input_row_share(minilm, short + short[:1], "short").truncated == 0
    assert share.to_dict()["truncated"] == 1
