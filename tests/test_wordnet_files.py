"""Our reader of WordNet's data files gives what NLTK's reader gives, synset by synset.

The whole-WordNet scans (usage examples, glosses, the WordNet corpus) read the files through
:mod:`contextlens.core.wordnet_files` instead of NLTK's ``all_synsets``; their cached outputs
must not change. The first test compares a sample of synsets with NLTK's; the whole walk's comparison
(13-16 CPU s) is ``benchmarks/wordnet_scan.py``'s.
"""

from __future__ import annotations

import pytest

from contextlens.core import wordnet as wn
from contextlens.core.wordnet_files import parse_line

WORDNET_30_SYNSETS = 117_659  # WordNet 3.0's synsets (its documentation; DESIGN.md)


def _fields(name, pos, lemma_names, definition, examples) -> tuple:
    return name, pos, list(lemma_names), definition, list(examples)


SAMPLE_EVERY = 20  # every 20th synset of the walk (5,883): the whole walk is benchmarks/wordnet_scan.py's check


def test_sampled_synsets_match_nltks_reader_and_the_walk_has_wordnet_30s_count():
    """Every 20th synset of our walk, field by field, against NLTK's reader looking the same
    offset up; the walk's length is WordNet 3.0's synset count. The full comparison (every synset,
    NLTK's own walk, ~15 CPU s) is ``python benchmarks/wordnet_scan.py``, which fails on any difference."""
    reader = wn.wordnet()
    entries = list(wn.synset_entries())
    assert len(entries) == WORDNET_30_SYNSETS
    differing = []
    for ours in entries[::SAMPLE_EVERY]:
        synset = reader.synset_from_pos_and_offset("a" if ours.pos == "s" else ours.pos, ours.offset)
        expected = _fields(synset.name(), synset.pos(), synset.lemma_names(), synset.definition(), synset.examples())
        got = _fields(ours.name, ours.pos, ours.lemma_names, ours.definition, ours.examples)
        if got != expected:
            differing.append((got, expected))
    reader._synset_offset_cache.clear()  # the parsed synsets this process would keep otherwise
    assert differing[:3] == []
    assert len(entries) == sum(1 for _ in wn.glosses())  # and the scans walk the same synsets


# A real line of data.adj ("abaxial", its offset and lemma kept so that the name resolves) with
# lemmas and glosses WordNet 3.0 lacks: parsed by NLTK's own line parser and by ours.
ABAXIAL = "00002312 00 a {count} abaxial 0 {lemmas}000 | {gloss}\n"


@pytest.mark.parametrize(
    ("lemmas", "gloss"),
    [
        ("dorsal(p) 4 ", 'facing away; "an example"; "one; with a semicolon"'),
        ("galore(ip) 0 odd(a(b)) 0 x(y)z 0 ", 'unpaired "quote at the end'),
        ("(a) 0 ", 'two "paired" and "one unpaired; '),
        ("", '"" "only examples"; '),
        ("", ""),
    ],
)
def test_a_line_parses_as_nltk_parses_it(lemmas, gloss):
    reader = wn.wordnet()
    count = 1 + lemmas.count(" ") // 2
    line = ABAXIAL.format(count=f"{count:02x}", lemmas=lemmas, gloss=gloss)
    synset = reader._synset_from_pos_and_line("a", line)
    ours = parse_line(line, reader._lemma_pos_offset_map)
    assert _fields(ours.name, ours.pos, ours.lemma_names, ours.definition, ours.examples) == _fields(
        synset.name(), synset.pos(), synset.lemma_names(), synset.definition(), synset.examples()
    )
    assert ours.name == "abaxial.a.01" and ours.offset == 2312
