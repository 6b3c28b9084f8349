"""Targets and where they occur: the one split-and-find step both engines run on a chunk.

A target is a lower-case word; with ``forms`` each target also matches its inflected forms
(WordNet 3.0, :func:`contextlens.core.wordnet.inflected_forms`). The form table is computed
once, where the job starts, and shipped with the job, so Ray workers need no WordNet files.
:func:`scan_documents` splits a chunk's documents into sentences and finds every whole-word
occurrence; the local engine and the Ray actors both call it, so their rows are the same.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from contextlens.analyses.corpus.sentences import document_sentences
from contextlens.core.occurrences import Occurrence, find_all, word_pattern
from contextlens.errors import InputError

Document = tuple[str, Sequence[str]]  # (doc_id, pieces): what a chunk carries


def parse_targets(words: Sequence[str]) -> tuple[str, ...]:
    """Lower-case NFC targets, de-duplicated in order; single words only."""
    out: list[str] = []
    for w in words:
        w = unicodedata.normalize("NFC", w.strip()).lower()
        if not w:
            continue
        if any(ch.isspace() for ch in w):
            raise InputError(f"target {w!r} is not a single word; give words like bank,spring")
        if w not in out:
            out.append(w)
    if not out:
        raise InputError("no target words given; pass `targets` such as bank,spring")
    return tuple(out)


def form_table(targets: Sequence[str], forms: bool) -> tuple[tuple[str, str], ...]:
    """``(surface form, target)`` pairs. A form shared by two targets ("saw": saw, see) goes to
    the target spelled that way, else to the first target listed, so each occurrence is one row."""
    if not forms:
        return tuple((t, t) for t in targets)
    from contextlens.core.wordnet import inflected_forms

    owner: dict[str, str] = {t: t for t in targets}
    for t in targets:
        for form in inflected_forms(t):
            owner.setdefault(form, t)
    return tuple(owner.items())


@dataclass(frozen=True)
class Matcher:
    """Finds the forms of a job's targets in a sentence (picklable: the table, not the regex)."""

    table: tuple[tuple[str, str], ...]

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return word_pattern([form for form, _ in self.table])

    @cached_property
    def owner(self) -> dict[str, str]:
        out = {}
        for form, target in self.table:
            out[form] = target
            out.setdefault(form.casefold(), target)
        return out

    def target_of(self, written: str) -> tuple[str, str]:
        """(target, form) of a matched word as written ("Banks" -> bank, banks)."""
        form = unicodedata.normalize("NFC", written).lower()
        target = self.owner.get(form) or self.owner[form.casefold()]
        return target, form


@dataclass(frozen=True)
class Found:
    doc_id: str
    sentence_index: int
    occurrence: Occurrence
    target: str
    form: str


def scan_documents(docs: Sequence[Document], matcher: Matcher) -> tuple[int, list[Found]]:
    """(sentences read, every occurrence) of a chunk: each document's pieces split into
    sentences numbered within the document, each sentence searched for the forms."""
    sentences = 0
    found: list[Found] = []
    for doc_id, pieces in docs:
        count = 0
        for index, sentence in enumerate(document_sentences(pieces)):
            count = index + 1
            for occ in find_all(sentence, matcher.pattern):
                found.append(Found(doc_id, index, occ, *matcher.target_of(occ.word)))
        sentences += count
    return sentences, found
