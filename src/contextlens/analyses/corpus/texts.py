"""Small built-in text sets for analyses that need "some real sentences": a seeded sample of
WordNet usage examples, the Lee news documents, or the built-in polysemy sentences; and the reader
of a user's one-sentence-per-line file. CKA, cost, the input-row share and the demo share them."""

from __future__ import annotations

import random
from pathlib import Path

from contextlens.data import read_tsv
from contextlens.data.lee import load_lee
from contextlens.data.sense_sentences import load_sense_sentences
from contextlens.errors import InputError

CORPORA = ("wordnet", "lee", "builtin")


def corpus_texts(corpus: str, limit: int = 400, seed: int = 0) -> list[str]:
    """Texts of a built-in corpus: WordNet usage examples (a seeded sample), the Lee corpus's
    350 news documents, or the built-in polysemy sentences."""
    if corpus == "wordnet":
        from contextlens.core.wordnet import usage_examples

        texts = sorted({e.text for e in usage_examples()})
        return random.Random(seed).sample(texts, min(limit, len(texts)))
    if corpus == "lee":
        lee = load_lee()
        return (lee.documents + lee.background)[:limit]
    if corpus == "builtin":
        texts = list(dict.fromkeys(s.occurrence.text for s in load_sense_sentences()))
        return texts[:limit]
    raise InputError(f"unknown corpus {corpus!r}; use one of {', '.join(CORPORA)} or --sentences FILE")


def read_texts(path: Path | str) -> list[str]:
    """One text per line of a UTF-8 file (blank lines and lines starting with # skipped)."""
    return [line.fields[0] for line in read_tsv(path, (1,), "one sentence per line, no tabs")]
