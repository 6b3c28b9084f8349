"""The Lee corpus (gensim's test data): 50 rated news documents, their ratings, 300 more documents.

``similarities0-1.txt`` is a 50x50 matrix whose upper triangle (diagonal included, diagonal = 1)
holds the mean human similarity ratings (the study's 1-5 scale divided by 5) and whose lower
triangle is zero; it is symmetrized here. The retrieval benchmark and the named text sets
(:mod:`contextlens.analyses.corpus.texts`) read it from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from contextlens.errors import DataFileError


@dataclass(frozen=True)
class LeeCorpus:
    documents: list[str]  # the 50 rated documents
    ratings: np.ndarray  # (50, 50) symmetric mean human similarity, diagonal 1
    background: list[str]  # 300 further documents from the same source (PCA / SQ fitting)


@cache
def load_lee() -> LeeCorpus:
    """The Lee corpus from gensim's test data; the ratings matrix symmetrized from its upper triangle."""
    from gensim.test.utils import datapath  # gensim is slow to import: only when the corpus is read

    docs = _latin1_lines(datapath("lee.cor"))
    background = _latin1_lines(datapath("lee_background.cor"))
    upper = np.loadtxt(datapath("similarities0-1.txt"))
    if upper.shape != (len(docs), len(docs)) or np.any(np.tril(upper, -1)):
        raise DataFileError(f"similarities0-1.txt is not the {len(docs)}x{len(docs)} upper-triangular rating matrix")
    ratings = np.triu(upper) + np.triu(upper, 1).T
    return LeeCorpus(docs, ratings, background)


def _latin1_lines(path: str) -> list[str]:
    with open(path, "rb") as f:  # the files are Latin-1 (a pound sign, byte 0xa3, appears in lee.cor)
        return [line.strip() for line in f.read().decode("latin-1").splitlines() if line.strip()]
