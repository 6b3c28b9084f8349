"""Our reader of WordNet's data files gives what NLTK's reader gives, synset by synset.

The whole-WordNet scans (usage examples, glosses, the WordNet corpus) read the files through
:mod:`contextlens.core.wordnet_files` instead of NLTK's ``all_synsets``; their cached outputs
must not change. The first test walks NLTK's reader over all 117,659 synsets once (13-16 CPU s,
the one costly test here), so any difference in any synset fails it.
"""

from __future__ import annotations

import itertools

import pytest

from contextlens.core import wordnet as wn
from contextlens.core.wordnet_files import parse_line


def _fields(name, pos, lemma_names, definition, examples) -> tuple:
    return name, pos, list(lemma_names), definition, list(examples)


def test_every_synset_matches_nltks_reader():
    reader = wn.wordnet()
    theirs = (synset for pos in ("n", "v", "a", "r") for synset in reader.all_synsets(pos))
    compared, differing = 0, []
    for ours, synset in itertools.zip_longest(wn.synset_entries(), theirs):
        assert ours is not None and synset is not None, f"the readers stop at different synsets ({compared})"
        expected = _fields(synset.name(), synset.pos(), synset.lemma_names(), synset.definition(), synset.examples())
        got = _fields(ours.name, ours.pos, ours.lemma_names, ours.definition, ours.examples)
        if got != expected:
            differing.append((got, expected))
        compared += 1
    reader._synset_offset_cache.clear()  # ~117k parsed synsets this process would keep otherwise
    assert differing[:3] == []
    assert compared == sum(1 for _ in wn.glosses())  # and the scans walk the same synsets


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
