"""Sentence splitting with pysbd (a maintained rule-based splitter), plus NFC normalisation.

Sentences are NFC-normalised here, once, so that the character spans found in them are the
spans the core's :class:`~contextlens.core.occurrences.Occurrence` keeps.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from functools import lru_cache

# A piece of only ASCII letters, digits, spaces, commas and hyphens is one sentence to pysbd: each of
# its splitting rules needs a character outside this set (sentence punctuation, a period or bracket
# of a list item, a quote, a bullet, a line break). Most WordNet glosses and examples are such
# pieces, and pysbd spends about 0.2 ms on each (27 of the 42 CPU s of counting WordNet's
# sentences); tests/test_sentence_split.py checks the shortcut against pysbd itself.
_ONE_SENTENCE = re.compile(r"[A-Za-z0-9 ,\-]*")


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False, char_span=False)


def split_sentences(text: str) -> list[str]:
    """The sentences of one paragraph or line (whitespace-only pieces dropped)."""
    text = unicodedata.normalize("NFC", text)
    if not text.strip():
        return []
    if _ONE_SENTENCE.fullmatch(text):
        return [text.strip()]
    return pysbd_sentences(text)


def pysbd_sentences(text: str) -> list[str]:
    """pysbd's sentences of one NFC-normalised piece, stripped, blank ones dropped: what
    :func:`split_sentences` gives a piece its one-sentence shortcut does not take, and what that
    shortcut is checked against (tests/test_sentence_split.py, benchmarks/sentence_split.py)."""
    return [s.strip() for s in _segmenter().segment(text) if s.strip()]


def document_sentences(pieces: Iterable[str]) -> Iterator[str]:
    """A document's sentences in reading order (each piece, a line or paragraph, split on its own):
    the one order in which extraction numbers sentences and the counting pass reads them."""
    for piece in pieces:
        yield from split_sentences(piece)
