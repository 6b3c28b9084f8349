"""`corpus list`: the installed corpora and their sizes (documents, sentences, words).

Sizes are counted once with the same reader and sentence splitter as an extraction, then
cached on disk (counting Wikipedia takes about a minute).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contextlens.analyses.corpus.readers import INSTALLED, read_corpus
from contextlens.analyses.corpus.sentences import split_sentences
from contextlens.errors import ContextlensError

DESCRIPTIONS = {
    "enwiki": "Wikipedia sample shipped with gensim (shortened dump, cleaned by gensim's filter_wiki)",
    "lee": "Lee background corpus shipped with gensim (300 Australian news articles)",
    "wordnet": "WordNet 3.0: each synset's gloss and usage examples",
}


@dataclass(frozen=True)
class CorpusInfo:
    name: str
    description: str
    installed: bool
    documents: int | None
    sentences: int | None
    words: int | None
    problem: str | None = None

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def count(source: str) -> tuple[int, int, int]:
    """(documents, sentences, whitespace words) of a corpus, as an extraction reads it."""
    docs = sentences = words = 0
    for doc in read_corpus(source):
        docs += 1
        for piece in doc.pieces:
            found = split_sentences(piece)
            sentences += len(found)
            words += sum(len(s.split()) for s in found)
    return docs, sentences, words


def installed_corpora(progress: Callable[[str], None] | None = None) -> list[CorpusInfo]:
    """Each installed corpus with its sizes; ``progress`` hears each corpus's name before it is
    read or counted. A count holds a lock beside its cache entry, so two first uses at once (a
    ``prepare`` and a ``corpus list``) count once: the second reads what the first wrote."""
    from contextlens.core.cache_folders import build_lock
    from contextlens.core.disk_cache import cache_key, cache_path, cached_arrays

    versions = [importlib.metadata.version(p) for p in ("gensim", "pysbd")]
    out = []
    for name in INSTALLED:
        try:
            if progress:
                progress(name)
            key = cache_key(name, versions, 1)
            with build_lock(cache_path("corpus-sizes", key)):
                arrays = cached_arrays("corpus-sizes", key, lambda n=name: {"sizes": np.array(count(n))})
            d, s, w = (int(x) for x in arrays["sizes"])
            out.append(CorpusInfo(name, DESCRIPTIONS[name], True, d, s, w))
        except ContextlensError as exc:
            out.append(CorpusInfo(name, DESCRIPTIONS[name], False, None, None, None, str(exc)))
    return out
