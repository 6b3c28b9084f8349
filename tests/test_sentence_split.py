"""The one-sentence shortcut of `split_sentences` gives pysbd's own answer.

A piece of only ASCII letters, digits, spaces, commas and hyphens skips pysbd (analyses/corpus/
sentences.py); these tests hold it to what pysbd says of the same pieces: generated ones shaped like
the inputs pysbd's list and number rules look for, and the real WordNet pieces that take it.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextlens.analyses.corpus import sentences
from contextlens.analyses.corpus.readers import read_corpus
from contextlens.analyses.corpus.sentences import pysbd_sentences, split_sentences

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
# words, numbers and single letters as list items are written ("1 the", "a b c", "IV"), joined by
# the characters the shortcut allows
TOKENS = st.one_of(
    st.sampled_from(["1", "2", "10", "a", "b", "i", "iv", "IV", "A", "B", "Mr", "No", "St", "e", "g", "pp"]),
    st.from_regex(r"[A-Za-z]{1,9}", fullmatch=True),
    st.from_regex(r"[0-9]{1,4}", fullmatch=True),
)
JOINS = st.sampled_from([" ", "  ", ", ", ",", " - ", "-", " , "])


@SETTINGS
@given(st.lists(st.tuples(TOKENS, JOINS), min_size=1, max_size=12), st.sampled_from(["", " ", "  "]))
def test_a_plain_piece_is_the_one_sentence_pysbd_finds(parts: list[tuple[str, str]], edge: str) -> None:
    text = edge + "".join(token + join for token, join in parts).rstrip(" ,-") + edge
    assert sentences._ONE_SENTENCE.fullmatch(text)
    assert split_sentences(text) == pysbd_sentences(text)


@SETTINGS
@given(st.text(alphabet="AbZz09 ,-", max_size=40))
def test_any_string_of_the_allowed_characters_is_pysbds_answer(text: str) -> None:
    assert split_sentences(text) == (pysbd_sentences(text) if text.strip() else [])


def test_a_plain_piece_does_not_reach_pysbd(monkeypatch) -> None:
    def refuse():
        raise AssertionError("pysbd was asked")

    monkeypatch.setattr(sentences, "_segmenter", refuse)
    assert split_sentences("  the slope beside a body of water, 3 km long - a river bank ") == [
        "the slope beside a body of water, 3 km long - a river bank"
    ]


def test_pieces_outside_the_shortcut_still_go_through_pysbd() -> None:
    for text in ["It rained. We stayed in.", "1) one 2) two", "a. first b. second", "He said 'no.' Then left"]:
        assert not sentences._ONE_SENTENCE.fullmatch(text)
        assert split_sentences(text) == pysbd_sentences(text)
    assert split_sentences("It rained. We stayed in.") == ["It rained.", "We stayed in."]


def test_the_wordnet_pieces_that_take_the_shortcut_are_pysbds_sentences() -> None:
    """Every 40th of WordNet's glosses and examples that skip pysbd (about 3,300 of 132,000)."""
    plain = (p for doc in read_corpus("wordnet") for p in doc.pieces if sentences._ONE_SENTENCE.fullmatch(p))
    checked = 0
    for piece in itertools.islice(plain, 0, None, 40):
        assert split_sentences(piece) == pysbd_sentences(piece), piece
        checked += 1
    assert checked > 3000
