"""Word vectors as a memory-mapped numpy table and a word index: the part of gensim's
``KeyedVectors`` that a GloVe model uses, without gensim.

Why: importing gensim (and scipy under it) costs about 0.9 s on this project's reference machine,
longer than the whole lean ``compare``; GloVe needs none of it, only a table, its words and a
cosine search. The search is gensim's 3CosAdd as gensim computes it (each query vector unit-length,
weighted +1/-1, averaged, unit-length again; cosines against every row; the query words left out),
so neighbours and analogies are gensim's (tests/test_lean_path.py compares them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from contextlens.core import atomic_files
from contextlens.core.atomic_files import atomic_path
from contextlens.errors import InputError

TABLE = "vectors.npy"
WORDS = "words.txt"  # one word per line, in row order


class ArrayVectors:
    """A table of word vectors: ``vectors`` (rows), ``index_to_key`` (words), ``key_to_index``."""

    def __init__(self, vectors: np.ndarray, words: Sequence[str]):
        if len(words) != vectors.shape[0]:
            raise InputError(f"{len(words)} words but {vectors.shape[0]} vectors")
        self.vectors = vectors
        self.index_to_key = list(words)
        self.key_to_index = {word: i for i, word in enumerate(self.index_to_key)}
        self._norms: np.ndarray | None = None

    @property
    def vector_size(self) -> int:
        return int(self.vectors.shape[1])

    def get_vector(self, key: str, norm: bool = False) -> np.ndarray:
        row = np.asarray(self.vectors[self.key_to_index[key]], dtype=np.float32)
        return row / np.float32(self.norms[self.key_to_index[key]]) if norm else row

    @property
    def norms(self) -> np.ndarray:
        if self._norms is None:
            self._norms = np.linalg.norm(self.vectors, axis=1)
        return self._norms

    def most_similar(
        self, positive: Sequence[str] = (), negative: Sequence[str] = (), topn: int = 10
    ) -> list[tuple[str, float]]:
        """The ``topn`` words nearest the mean of the unit ``positive`` minus the unit ``negative``
        vectors, the query words left out."""
        weighted = [(key, 1.0) for key in positive] + [(key, -1.0) for key in negative]
        mean = np.mean([weight * self.get_vector(key, norm=True) for key, weight in weighted], axis=0)
        mean = (mean / np.linalg.norm(mean)).astype(np.float32)
        dists = (self.vectors @ mean) / self.norms
        asked = {self.key_to_index[key] for key, _ in weighted}
        count = min(len(dists), topn + len(asked))
        best = np.argpartition(-dists, count - 1)[:count]
        best = best[np.argsort(-dists[best], kind="stable")]
        return [(self.index_to_key[i], float(dists[i])) for i in best if i not in asked][:topn]


def save_array_vectors(folder: Path, vectors: np.ndarray, words: Sequence[str]) -> None:
    """Write the table and then its words (the words file marks the pair complete)."""
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / TABLE) as tmp, open(tmp, "wb") as fh:
        np.save(fh, np.ascontiguousarray(vectors, dtype=np.float32))
    atomic_files.write_text(folder / WORDS, "\n".join(words) + "\n")


def load_array_vectors(folder: Path) -> ArrayVectors | None:
    """The table memory-mapped and its words, or None where the folder holds no complete pair."""
    if not (folder / WORDS).is_file() or not (folder / TABLE).is_file():
        return None
    words = (folder / WORDS).read_text(encoding="utf-8").split("\n")[:-1]
    return ArrayVectors(np.load(folder / TABLE, mmap_mode="r"), words)
