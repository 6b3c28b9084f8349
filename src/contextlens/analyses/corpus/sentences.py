"""Sentence splitting with pysbd (a maintained rule-based splitter), plus NFC normalisation.

Sentences are NFC-normalised here, once, so that the character spans found in them are the
spans the core's :class:`~contextlens.core.occurrences.Occurrence` keeps.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator
from functools import lru_cache


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False, char_span=False)


def split_sentences(text: str) -> list[str]:
    """The sentences of one paragraph or line (whitespace-only pieces dropped)."""
    text = unicodedata.normalize("NFC", text)
    if not text.strip():
        return []
    return [s.strip() for s in _segmenter().segment(text) if s.strip()]


def document_sentences(pieces: Iterable[str]) -> Iterator[str]:
    """A document's sentences in reading order (each piece, a line or paragraph, split on its own):
    the one order in which extraction numbers sentences and the counting pass reads them."""
    for piece in pieces:
        yield from split_sentences(piece)
