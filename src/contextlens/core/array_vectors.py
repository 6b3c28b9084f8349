"""Word vectors as a memory-mapped numpy table and a word index: the part of gensim's
``KeyedVectors`` that a GloVe model uses, without gensim.

Why: importing gensim (and scipy under it) costs about 0.9 s on this project's reference machine,
longer than the whole lean ``compare``; GloVe needs none of it, only a table, its words and a
cosine search. The search is gensim's 3CosAdd as gensim computes it (each query vector unit-length,
weighted +1/-1, averaged, unit-length again; cosines against every row; the query words left out),
so neighbours and analogies are gensim's (tests/test_lean_path.py compares them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

from contextlens.core import atomic_files
from contextlens.core.atomic_files import atomic_path
from contextlens.errors import InputError

TABLE = "vectors.npy"
WORDS = "words.npy"  # the words in row order, UTF-8
SORTED = "sorted_words.npy"  # the same words sorted, and the row of each: the index, binary-searched
ROWS = "sorted_rows.npy"
MARKER = "index.json"  # written last: the files beside it are complete


class WordList(Sequence[str]):
    """The words in row order, decoded when read (no list of 400,000 strings built at load)."""

    def __init__(self, words: np.ndarray):
        self._words = words

    def __len__(self) -> int:
        return len(self._words)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [w.decode("utf-8") for w in self._words[i]]
        return self._words[i].decode("utf-8")


class KeyIndex(Mapping[str, int]):
    """word -> row by binary search in the sorted words (memory-mapped): no dict built at load,
    which for GloVe's 400,000 words cost more than a lean ``compare``'s forward pass."""

    def __init__(self, sorted_words: np.ndarray, rows: np.ndarray):
        self._sorted = sorted_words
        self._rows = rows

    def get(self, key: str, default: int | None = None) -> int | None:  # type: ignore[override]
        if not isinstance(key, str):
            return default
        probe = key.encode("utf-8")
        at = int(np.searchsorted(self._sorted, probe))
        if at < len(self._sorted) and self._sorted[at] == probe:
            return int(self._rows[at])
        return default

    def __getitem__(self, key: str) -> int:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __len__(self) -> int:
        return len(self._sorted)

    def __iter__(self) -> Iterator[str]:
        return (w.decode("utf-8") for w in self._sorted)

    def starting_with(self, prefix: str) -> list[tuple[str, int]]:
        """``(word, row)`` of every word that starts with ``prefix``: one range of the sorted words
        (0xFF never occurs in UTF-8, so ``prefix + 0xFF`` bounds it), nothing else decoded."""
        low = prefix.encode("utf-8")
        start, stop = np.searchsorted(self._sorted, [low, low + b"\xff"])
        found = zip(self._sorted[start:stop], self._rows[start:stop], strict=True)
        return [(w.decode("utf-8"), int(r)) for w, r in found]


class ArrayVectors:
    """A table of word vectors: ``vectors`` (rows), ``index_to_key`` (words), ``key_to_index``."""

    def __init__(self, vectors: np.ndarray, words: Sequence[str], key_to_index: Mapping[str, int] | None = None):
        if len(words) != vectors.shape[0]:
            raise InputError(f"{len(words)} words but {vectors.shape[0]} vectors")
        self.vectors = vectors
        self.index_to_key = words
        self.key_to_index = key_to_index if key_to_index is not None else {w: i for i, w in enumerate(words)}
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
    """Write the table, its words and their sorted index; the marker last."""
    folder.mkdir(parents=True, exist_ok=True)
    encoded = np.array([w.encode("utf-8") for w in words])
    order = np.argsort(encoded, kind="stable")
    for name, array in (
        (TABLE, np.ascontiguousarray(vectors, dtype=np.float32)),
        (WORDS, encoded),
        (SORTED, encoded[order]),
        (ROWS, order.astype(np.int64)),
    ):
        with atomic_path(folder / name) as tmp, open(tmp, "wb") as fh:
            np.save(fh, array)
    atomic_files.write_text(folder / MARKER, json.dumps({"words": len(words)}))


def load_array_vectors(folder: Path) -> ArrayVectors | None:
    """The table and its index memory-mapped, or None where the folder holds no complete set."""
    if not (folder / MARKER).is_file():
        return None
    load = {name: np.load(folder / name, mmap_mode="r") for name in (TABLE, WORDS, SORTED, ROWS)}
    return ArrayVectors(load[TABLE], WordList(load[WORDS]), KeyIndex(load[SORTED], load[ROWS]))
