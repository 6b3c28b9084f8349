"""WordNet's ``data.*`` files read straight, for the scans that walk every synset.

Why: NLTK's ``all_synsets`` builds a full ``Synset`` per line (pointers, verb frames, sense keys,
each lemma name and gloss run through regexes under a timeout since NLTK 3.10): about 15 CPU
seconds for WordNet 3.0's 117,659 synsets, which a first ``compare`` paid to list the usage
examples. The scans need only a synset's name, lemmas, definition and examples: this reads those
from the line format of wndb(5WN) and skips the rest.

A line is ``offset lex_filenum ss_type w_cnt word lex_id [word lex_id...] p_cnt [ptr...]
[frames...] | gloss``; ``w_cnt`` and ``lex_id`` are hexadecimal. Lines that begin with a space
are the licence header.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Parts of speech in NLTK's ``all_synsets`` order, with their file suffix (data.noun, ...).
# The adjective file holds the satellites ("s") too, interleaved in offset order.
POS_FILES: tuple[tuple[str, str], ...] = (("n", "noun"), ("v", "verb"), ("a", "adj"), ("r", "adv"))

# lemma -> part of speech -> synset offsets in sense order: NLTK's ``_lemma_pos_offset_map``.
SenseOffsets = Mapping[str, Mapping[str, Sequence[int]]]


@dataclass(frozen=True, slots=True)
class SynsetEntry:
    """What the whole-WordNet scans read of one synset, with NLTK's values for each field."""

    name: str  # "bank.n.01"
    pos: str  # n, v, a, s (adjective satellite), r
    offset: int
    lemma_names: tuple[str, ...]  # "bank", "depository_financial_institution" (markers like "(a)" dropped)
    definition: str
    examples: tuple[str, ...]


def read_synsets(folder: Path, sense_offsets: SenseOffsets) -> Iterator[SynsetEntry]:
    """Every synset of the ``data.*`` files in ``folder``, nouns, verbs, adjectives, adverbs, each
    file in its own order (NLTK's ``all_synsets`` order).

    ``sense_offsets`` numbers the senses in names (``bank.n.09``): a synset's number is its place
    among its first lemma's offsets for its part of speech. It is taken from the NLTK reader the
    single-synset lookups use, not re-read from ``index.*``, because NLTK changed how it numbers
    satellites (3.10: among the lemma's satellites of index.adj only; earlier: among all its
    adjective senses), and a name must find its synset again through ``synset()``.
    """
    for _, suffix in POS_FILES:
        with open(folder / f"data.{suffix}", encoding="utf-8") as lines:
            for line in lines:
                if not line[:1].isspace():
                    yield parse_line(line, sense_offsets)


def parse_line(line: str, sense_offsets: SenseOffsets) -> SynsetEntry:
    """One synset from its ``data.*`` line."""
    columns, _, gloss = line.strip().partition("|")
    fields = columns.split()
    offset, pos = int(fields[0]), fields[2]
    count = int(fields[3], 16)
    lemma_names = tuple(_without_marker(word) for word in fields[4 : 4 + 2 * count : 2])
    definition, examples = split_gloss(gloss)
    first = lemma_names[0].lower()
    sense = sense_offsets[first][pos].index(offset) + 1
    return SynsetEntry(f"{first}.{pos}.{sense:02d}", pos, offset, lemma_names, definition, examples)


def _without_marker(word: str) -> str:
    """An adjective's lemma without its syntactic marker: ``galore(ip)`` -> ``galore``.

    The marker is a final parenthesised group without parentheses inside (wninput(5WN): (a),
    (p), (ip)); NLTK drops it from lemma names, so this does too.
    """
    if not word.endswith(")"):
        return word
    opening = word.rfind("(")
    return word if opening < 0 or ")" in word[opening + 1 : -1] else word[:opening]


def split_gloss(gloss: str) -> tuple[str, tuple[str, ...]]:
    """A gloss's definition and its examples: the examples are the text between pairs of double
    quotes, read left to right; the definition is what stays outside them, trimmed of spaces and
    semicolons. An unpaired last quote stays in the definition (as NLTK leaves it)."""
    parts = gloss.split('"')
    pairs = (len(parts) - 1) // 2
    examples = tuple(parts[1 : 2 * pairs : 2])
    kept = "".join(parts[0 : 2 * pairs + 1 : 2])
    if len(parts) % 2 == 0:  # an odd number of quotes: the last one is unpaired
        kept += '"' + parts[-1]
    return kept.strip().strip("; "), examples
