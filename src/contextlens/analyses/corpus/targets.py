"""Targets and where they occur: the one split-and-find step both engines run on a chunk.

A target is a lower-case word; with ``forms`` each target also matches its inflected forms
(WordNet 3.0, :func:`contextlens.core.wordnet.inflected_forms`). The form table is computed
once, where the job starts, and shipped with the job, so Ray workers need no WordNet files.
:func:`scan_documents` finds every whole-word occurrence of a chunk's documents: it searches each
raw paragraph with the forms' pattern first and splits into sentences only the paragraphs that
hold a match, so the cost of splitting follows what is found, not the corpus (pysbd is the slow
step: ~170 sentences/s here). The local engine and the Ray actors both call it, so their rows are
the same. A row's key is ``(doc_id, paragraph_index, sentence_index)``: the paragraph (reader's
piece) within its document and the sentence within that paragraph, both from 0; it does not
depend on the paragraphs without a match, which are never split.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from contextlens.analyses.corpus.sentences import split_sentences
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
    paragraph_index: int
    sentence_index: int  # within its paragraph
    occurrence: Occurrence
    target: str
    form: str


@dataclass
class ScanCounts:
    """What a scan read: every paragraph, the ones split (they held a match), their sentences."""

    paragraphs: int = 0
    paragraphs_split: int = 0
    sentences: int = 0

    @property
    def paragraphs_skipped(self) -> int:
        return self.paragraphs - self.paragraphs_split

    def add(self, other: ScanCounts) -> None:
        self.paragraphs += other.paragraphs
        self.paragraphs_split += other.paragraphs_split
        self.sentences += other.sentences


def scan_documents(docs: Sequence[Document], matcher: Matcher) -> tuple[ScanCounts, list[Found]]:
    """(what was read, every occurrence) of a chunk: each paragraph searched raw (NFC) for the
    forms, and only a paragraph with a match split into sentences and searched sentence by
    sentence. Whole-word matches never straddle a sentence boundary pysbd draws (it cuts between
    words), so a paragraph without a match holds no sentence with one
    (tests/test_corpus_scan.py checks this against splitting everything)."""
    counts = ScanCounts()
    found: list[Found] = []
    pattern = matcher.pattern
    for doc_id, pieces in docs:
        for p, piece in enumerate(pieces):
            if not piece.strip():
                continue
            counts.paragraphs += 1
            text = unicodedata.normalize("NFC", piece)
            if pattern.search(text) is None:
                continue
            counts.paragraphs_split += 1
            sentences = split_sentences(text)
            counts.sentences += len(sentences)
            for index, sentence in enumerate(sentences):
                for occ in find_all(sentence, pattern):
                    found.append(Found(doc_id, p, index, occ, *matcher.target_of(occ.word)))
    return counts, found
