"""Property-based tests of the locator and the character-to-token alignment (hypothesis).

Any Unicode around the target (combining marks, zero-width characters, other scripts), targets
with combining marks inside, and texts longer than the window: a located span slices back to
the word, and the aligned target tokens overlap the span and stay inside the window.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextlens.core.occurrences import Occurrence, find_word, locate
from contextlens.errors import InputError

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

COMBINING = "\u0300\u0301\u0308\u0327\u0323"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
# A separator never composes with its neighbours and is not a word character.
separators = st.sampled_from([" ", "\u200b", ", ", "\t", " \u200d ", "\u3000"])
# Any valid text around the target, brackets aside (they are the marker syntax); lone
# surrogates are not valid Unicode and are refused (test_a_lone_surrogate_is_refused).
surroundings = st.text(
    alphabet=st.one_of(
        st.characters(exclude_characters="[]", exclude_categories=["Cs"]),
        st.sampled_from(COMBINING + ZERO_WIDTH),
    ),
    max_size=40,
)
# A word starts with a letter; then letters, digits and combining marks.
words = st.builds(
    lambda first, rest: first + rest,
    st.characters(categories=["L"]),
    st.text(
        alphabet=st.one_of(st.characters(categories=["L", "Nd"]), st.sampled_from(COMBINING)),
        max_size=7,
    ),
)


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


@st.composite
def marked_texts(draw) -> tuple[str, str]:
    """(text in marker syntax, the word inside the brackets)."""
    word = draw(words)
    prefix = draw(surroundings) + draw(separators)
    suffix = draw(separators) + draw(surroundings)
    return f"{prefix}[{word}]{suffix}", word


@SETTINGS
@given(marked_texts())
def test_marked_span_slices_back_to_the_word(case):
    text, word = case
    occ = locate(text)
    assert occ.text == nfc(text.replace("[", "", 1).replace("]", "", 1))
    assert occ.text[occ.start : occ.end] == occ.word == nfc(word)


@SETTINGS
@given(marked_texts(), st.booleans())
def test_found_word_slices_back_to_the_word(case, decompose):
    text, word = case
    plain = text.replace("[", "", 1).replace("]", "", 1)
    if decompose:  # the user may type either form; NFC is applied at the edge
        plain, word = unicodedata.normalize("NFD", plain), unicodedata.normalize("NFD", word)
    occ = find_word(plain, word, case_sensitive=True)
    assert occ.text == nfc(plain)
    assert occ.text[occ.start : occ.end] == occ.word == nfc(word)


@SETTINGS
@given(st.text(max_size=30), st.integers(-2, 32), st.integers(-2, 32))
def test_any_span_is_either_refused_or_valid(text, start, end):
    try:
        occ = Occurrence(text, start, end)
    except InputError:
        return
    assert 0 <= occ.start < occ.end <= len(occ.text)
    assert occ.text == nfc(text) and occ.word.strip()


@SETTINGS
@given(marked_texts(), st.integers(1, 6), st.integers(12, 48))
def test_alignment_covers_the_span_and_keeps_it_inside_the_window(minilm, case, repeat, limit):
    text, _ = case
    filler = " the river bank was flooded again"
    prefix, rest = text.split("[", 1)
    occ = locate(filler * repeat + prefix + "[" + rest + filler * repeat)
    full = minilm.tokenize_many([occ], max_length=10**6)[0]
    tok = minilm.tokenize_many([occ], max_length=limit)[0]
    for t in (full, tok):
        assert t.target_positions
        for p in t.target_positions:
            a, b = t.offsets[p]
            assert not t.special[p] and a < occ.end and b > occ.start
    assert len(tok.input_ids) <= limit
    assert tok.truncated == (len(full.input_ids) > limit)
    assert [tok.tokens[p] for p in tok.target_positions] == [full.tokens[p] for p in full.target_positions]
    if tok.truncated:
        lo, hi = tok.window
        for p in tok.target_positions:
            assert lo <= tok.offsets[p][0] and tok.offsets[p][1] <= hi


def test_a_text_past_the_models_window_keeps_the_target(minilm):
    text = "The river rose. " * 200 + "Then the [bank] flooded. " + "It rained. " * 200
    occ = locate(text)
    tok = minilm.tokenize(occ)
    assert tok.truncated and len(tok.input_ids) == minilm.max_length
    (p,) = tok.target_positions
    assert tok.tokens[p] == "bank" and occ.text[slice(*tok.offsets[p])] == "bank"
    lo, hi = tok.window
    assert lo <= occ.start < occ.end <= hi


@pytest.mark.parametrize("mark", list(COMBINING))
def test_a_combining_mark_after_the_target_joins_the_word(mark):
    """The mark composes with the target's last letter in NFC, so the span takes the new letter."""
    occ = locate(f"un [cafe]{mark} noir")
    assert len(nfc("e" + mark)) == 1
    assert occ.word == nfc("cafe" + mark) and occ.text == nfc(f"un cafe{mark} noir")


@pytest.mark.parametrize("text", ["The [bank] \ud800.", "\udfff the river [bank]"])
def test_a_lone_surrogate_is_refused_in_one_line(text):
    with pytest.raises(InputError, match="not valid Unicode"):
        locate(text)
