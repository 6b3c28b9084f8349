"""Word-pair data sets (SimLex-999, WordSim-353) and how a set of word vectors scores on them:
Spearman of cosine against the human ratings over the pairs both words of which have a vector.

Why a measure: the similarity benchmark, the static models' evaluation and the lesson's
static-methods page all score word vectors on these pairs, the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from contextlens.core.similarity import cosine_values
from contextlens.core.static_models import StaticModel
from contextlens.errors import DataFileError

DATASETS = {"simlex999": "simlex999.txt", "wordsim353": "wordsim353.tsv"}


@dataclass(frozen=True)
class WordPair:
    first: str
    second: str
    score: float


@dataclass(frozen=True)
class SimilarityDataset:
    name: str
    pairs: tuple[WordPair, ...]

    @property
    def words(self) -> list[str]:
        return sorted({w for p in self.pairs for w in (p.first, p.second)})


def load_dataset(name: str, path: Path | None = None) -> SimilarityDataset:
    """Read a gensim-shipped word-pair file: ``word1<TAB>word2<TAB>score``, ``#`` comments."""
    if path is None:
        from gensim.test.utils import datapath

        path = Path(datapath(DATASETS[name]))
    pairs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        try:
            pairs.append(WordPair(parts[0].strip().lower(), parts[1].strip().lower(), float(parts[2])))
        except (IndexError, ValueError) as exc:
            raise DataFileError(f"{path}:{n}: expected 'word1<TAB>word2<TAB>score', got {line!r}") from exc
    return SimilarityDataset(name, tuple(pairs))


def spearman(predicted: Sequence[float], gold: Sequence[float]) -> float:
    """Spearman rank correlation (ties get average ranks); NaN with fewer than 3 pairs."""
    if len(predicted) < 3:
        return float("nan")
    return float(spearmanr(predicted, gold).statistic)


def score_pairs(dataset: SimilarityDataset, vectors: dict[str, np.ndarray]) -> tuple[float, int]:
    """Spearman of cosine vs. human score over the pairs whose two words have vectors; and that count."""
    predicted, gold = [], []
    for p in dataset.pairs:
        if p.first in vectors and p.second in vectors:
            predicted.append(cosine_values(vectors[p.first], vectors[p.second]))
            gold.append(p.score)
    return spearman(predicted, gold), len(predicted)


def static_vectors(words: Sequence[str], static: StaticModel) -> dict[str, np.ndarray]:
    out = {}
    for w in words:
        vector = static.vector_or_none(w)  # an unknown word is skipped
        if vector is not None:
            out[w] = np.asarray(vector.values, dtype=np.float64)
    return out
