"""Tokens shown as a reader reads them (Ġbank -> ␣bank), and a decoder's results saying which
words each target could see (issue 19). No decoder is installed in the test environment (smollm2
is optional): the byte-level tokens come from a real byte-level BPE tokenizer trained here with
the `tokenizers` library (GPT-2's ByteLevel pre-tokenizer and decoder), and the decoder flag is
set by hand on minilm's results."""

import dataclasses
import json

import pytest

from contextlens.core.token_text import display_token, display_tokens, is_byte_level
from tests.helpers import run_cli

BANK = "The [bank] called about my account."


@pytest.fixture(scope="module")
def byte_level_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["The bank called about my account.", "The river bank flooded."] * 20, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok)


def test_byte_level_tokens_are_decoded(byte_level_tokenizer):
    hf = byte_level_tokenizer
    assert is_byte_level(hf)
    raw = hf.convert_ids_to_tokens(hf("The bank called.\nNo café")["input_ids"])
    assert "Ġbank" in raw and "Ċ" in raw  # the raw byte-level markers
    shown = display_tokens(raw, True)
    assert shown[raw.index("Ġbank")] == "␣bank" and shown[raw.index("Ċ")] == "↵"
    assert not any("Ġ" in t or "Ċ" in t for t in shown)
    # é is two bytes; this small vocabulary splits them over two tokens, each then shown as its byte
    assert "".join(shown).replace("␣", " ").replace("↵", "\n") == "The bank called.\nNo caf\\xc3\\xa9"
    whole = hf.convert_ids_to_tokens(hf("The bank called.")["input_ids"])
    assert "".join(display_tokens(whole, True)).replace("␣", " ") == "The bank called."


def test_wordpiece_and_special_tokens_stay(minilm):
    assert not is_byte_level(minilm.tokenizer)
    assert display_tokens(["[CLS]", "river", "##bank", "[SEP]"]) == ["[CLS]", "river", "##bank", "[SEP]"]
    assert display_token("<s>", True) == "<s>" and display_token("▁bank") == "␣bank"


def test_compare_and_trace_show_decoded_tokens_and_keep_raw_ones_in_json(minilm, monkeypatch):
    """With a byte-level tokenizer the faces print ␣bank, never Ġbank; the JSON keeps the raw tokens."""
    from contextlens import compare
    from contextlens.analyses.lesson.trace import trace
    from contextlens.cli.common import console
    from contextlens.cli.compare import render_comparison
    from contextlens.core.occurrences import parse_marked

    result = compare([BANK, "The river [bank] flooded."], minilm, baseline=False)
    as_bpe = dataclasses.replace(result, target_tokens=[["Ġbank"], ["Ġbank"]], byte_level=True)
    with console.capture() as captured:
        render_comparison(as_bpe)
    assert "tokens: ␣bank" in captured.get() and "Ġ" not in captured.get()
    sentence = as_bpe.to_dict()["sentences"][0]
    assert sentence["tokens"] == ["Ġbank"] and sentence["display_tokens"] == ["␣bank"]
    t = trace(parse_marked(BANK), minilm)
    assert t.display_tokens == t.tokens  # WordPiece: nothing to decode
    data = t.to_dict()
    assert all(tok["display"] == tok["token"] for tok in data["tokens"])
    assert data["left_context_only"] is False and data["notes"] == []


def test_decoder_results_say_what_each_target_saw(minilm):
    from contextlens.analyses.lesson.probe import probe
    from contextlens.analyses.lesson.same_sense import same_sense
    from contextlens.analyses.lesson.trace import trace
    from contextlens.core.occurrences import parse_marked

    t = dataclasses.replace(trace(parse_marked(BANK), minilm), left_context_only=True)
    assert "sees only the words to its left (1: 'The')" in t.notes[0] and t.to_dict()["notes"] == t.notes
    p = dataclasses.replace(probe([parse_marked(BANK)], ["shore"], minilm, baseline=False), left_context_only=True)
    assert "1: 'The'" in p.notes[0] and "invisible" in p.to_dict()["notes"][0]
    a = same_sense(BANK, "The river [bank] flooded.", minilm, size="quick")
    assert not any("decoder" in n for n in a.notes)
    a = dataclasses.replace(a, left_context_only=True)
    assert any("1: 'The'; 2: 'The river'" in n for n in a.notes)
    # nothing after the target: nothing was hidden, no note
    end = dataclasses.replace(trace(parse_marked("I walked to the [bank]."), minilm), left_context_only=True)
    assert end.notes == []


def test_attention_cli_prints_tokens_as_shown(minilm):
    out = run_cli("attention", BANK, "-m", "minilm", "--json")
    assert out.returncode == 0, out.stderr
    sentence = json.loads(out.stdout)["sentences"][0]
    assert sentence["display_tokens"] == sentence["tokens"]  # WordPiece shown as it is
