"""The static model itself: one vector per word type, the same in every sentence.

A module of its own (below :mod:`contextlens.core.static_models`, which finds and reads the files):
the lookup, its out-of-vocabulary errors and its nearest words, over gensim's ``KeyedVectors`` or
the lean table of :mod:`contextlens.core.array_vectors`. contextlens adds lowercasing for
lowercase vocabularies and a clear error for an unknown word instead of a zero vector.
"""

from __future__ import annotations

import difflib
import unicodedata
from typing import TYPE_CHECKING

import numpy as np

from contextlens.core import arguments
from contextlens.core.vectors import Provenance, Vector
from contextlens.errors import InputError, OutOfVocabularyError

if TYPE_CHECKING:  # gensim (and scipy under it) loads with the first static model, not with the package
    from gensim.models import KeyedVectors


class StaticModel:
    """A static embedding model: ``vector``, ``similarity``, ``most_similar``, ``analogy``."""

    def __init__(
        self,
        name: str,
        keyed_vectors: KeyedVectors,
        *,
        lowercase: bool = False,
        provenance: dict[str, object] | None = None,
    ):
        self.name = name
        self.kv = keyed_vectors
        self.lowercase = lowercase
        self.provenance = provenance or {}  # how a model made here was made (static_store)

    @property
    def dim(self) -> int:
        return int(self.kv.vector_size)

    @property
    def how_made(self) -> str:
        """``word2vec skip-gram``, ``fastText``, ``distilled from minilm``, ``GloVe``, ``static (file)``."""
        method = self.provenance.get("method")
        if method == "word2vec":
            return f"word2vec {self.provenance.get('architecture')}"
        if method == "fasttext":
            return "fastText"
        if method == "distilled":
            return f"distilled from {self.provenance.get('teacher')}"
        return "GloVe" if self.name.startswith("glove") else "static (file)"

    @property
    def has_subwords(self) -> bool:
        """fastText composes vectors for unseen words from character n-grams (its table of them
        is what sets it apart; asked without importing gensim, which a GloVe model never loads)."""
        return getattr(self.kv, "vectors_ngrams", None) is not None

    def __len__(self) -> int:
        return len(self.kv.index_to_key)

    def __contains__(self, word: str) -> bool:
        return self._key(word) in self.kv.key_to_index

    def _key(self, word: str) -> str:
        if not isinstance(word, str):
            raise InputError(f"expected a word (str), got {type(word).__name__}")
        word = unicodedata.normalize("NFC", word)  # "café" typed as e + combining accent is café
        return word.lower() if self.lowercase else word

    def _given_key(self, word: str) -> str:
        """The key of a word as given: a non-empty str, normalized (not yet looked up)."""
        if not isinstance(word, str):
            raise InputError(f"word must be a str, got {arguments.given(word)}; e.g. vector('bank')")
        key = self._key(word.strip())
        if not key:
            raise InputError("the word is empty; give a word to look up")
        return key

    def key_for(self, word: str) -> str:
        """The vocabulary key a word maps to; raises OutOfVocabularyError when there is none."""
        key = self._given_key(word)
        if self._has_key(key):
            return key
        raise OutOfVocabularyError(self._oov_message(key))

    def _has_key(self, key: str) -> bool:
        """Whether a normalized key has a vector: in the vocabulary, or composed from n-grams."""
        return key in self.kv.key_to_index or self.has_subwords

    def vector(self, word: str) -> Vector:
        """The word's static vector (composed from n-grams for fastText, never a zero vector)."""
        return self._vector_at(self.key_for(word), word)

    def vector_or_none(self, word: str) -> Vector | None:
        """The word's vector, or None where :meth:`vector` raises OutOfVocabularyError; for the
        callers that skip such words (a similarity dataset's, a benchmark's lemmas). A word out of
        the vocabulary returns at once: the error's close-word hint, which nobody would read, is a
        difflib search of the vocabulary, repeated for every skipped word."""
        key = self._given_key(word)
        if not self._has_key(key):
            return None
        try:
            return self._vector_at(key, word)
        except OutOfVocabularyError:
            return None

    def _vector_at(self, key: str, word: str) -> Vector:
        values = np.asarray(self._raw(key), dtype=np.float32)
        if not np.any(values):
            raise OutOfVocabularyError(f"{word!r} has no n-grams known to {self.name}; try another spelling")
        return Vector(values, Provenance(self.name, "static"))

    def _raw(self, key: str) -> np.ndarray:
        """The vector of a vocabulary key (composed from n-grams for fastText)."""
        return self.kv.get_vector(key)

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit vector per text: the mean of its words' vectors (words the model cannot give a
        vector are left out; a text with none is a zero row). No forward pass: a table look-up."""
        from gensim.utils import tokenize

        texts = arguments.text_list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        known = self.kv.key_to_index
        for i, text in enumerate(texts):
            keys = [self._key(w) for w in tokenize(text)]
            keys = [k for k in keys if k in known or self.has_subwords]
            if keys:
                out[i] = np.mean([self._raw(k) for k in keys], axis=0)
        return unit_rows(out)

    def similarity(self, a: str, b: str) -> float:
        from contextlens.core.similarity import cosine

        return cosine(self.vector(a), self.vector(b))

    def most_similar(
        self,
        positive: list[str] | str,
        negative: list[str] | None = None,
        topn: int = 10,
    ) -> list[tuple[str, float]]:
        """Nearest words to the sum of ``positive`` minus ``negative`` (gensim's 3CosAdd)."""
        positive = arguments.word_list(positive, "positive")
        negative = arguments.word_list(negative, "negative")  # one str is one word, never its letters
        if not positive and not negative:
            raise InputError("give at least one word to search around (positive=['bank'])")
        topn = arguments.whole_number(topn, "topn", minimum=1)
        pos = [self.key_for(w) for w in positive]
        neg = [self.key_for(w) for w in negative]
        if self.has_subwords:
            pos_vecs = [self._raw(k) for k in pos]
            neg_vecs = [self._raw(k) for k in neg]
            results = self.kv.most_similar(positive=pos_vecs, negative=neg_vecs, topn=topn + len(pos) + len(neg))
            results = [(w, s) for w, s in results if w not in set(pos) | set(neg)][:topn]
        else:
            results = self.kv.most_similar(positive=pos, negative=neg, topn=topn)
        return [(w, float(s)) for w, s in results]

    def analogy(self, a: str, b: str, c: str, topn: int = 5) -> list[tuple[str, float]]:
        """``a : b :: c : ?`` - words near ``b - a + c`` (king:man::queen -> woman)."""
        return self.most_similar(positive=[b, c], negative=[a], topn=topn)

    def composition(self, word: str) -> list[str] | None:
        """The pieces a vector is composed of for a word the model never saw: fastText's character
        n-grams (``<`` and ``>`` mark the word's ends); None for a word of its vocabulary."""
        key = self.key_for(word)
        if key in self.kv.key_to_index or not self.has_subwords:
            return None
        from gensim.models.fasttext_inner import compute_ngrams

        return list(compute_ngrams(key, self.kv.min_n, self.kv.max_n))

    def composition_note(self, word: str) -> str | None:
        """One line saying how the vector of an unseen word was made, or None for a known word."""
        pieces = self.composition(word)
        if pieces is None:
            return None
        return (
            f"{word!r} never occurred in the corpus of {self.name}: its vector is the mean of its {len(pieces)} "
            f"character n-grams of {self.kv.min_n}-{self.kv.max_n} letters ({shown_pieces(pieces)}), so its "
            "neighbours are those of its spelling"
        )

    def _oov_message(self, key: str) -> str:
        vocab = self.kv.index_to_key
        index = self.kv.key_to_index
        if key and hasattr(index, "starting_with"):  # the lean table: one range of its sorted words
            pool = [w for w, row in index.starting_with(key[:1]) if row < 200_000 and abs(len(w) - len(key)) <= 2]
        else:
            pool = [w for w in vocab[:200_000] if w[:1] == key[:1] and abs(len(w) - len(key)) <= 2]
        close = difflib.get_close_matches(key, pool, n=3, cutoff=0.75)
        hint = f"; close words it knows: {', '.join(close)}" if close else ""
        return (
            f"{key!r} is not in the vocabulary of {self.name} ({len(vocab):,} words, no subword "
            f"information){hint}; use a model with subwords (fastText) for unseen words, or `static` none "
            "to skip the static baseline (compare, probe)"
        )


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def shown_pieces(pieces: list[str], most: int = 8) -> str:
    """The pieces, elided in the middle past ``most``."""
    if len(pieces) <= most:
        return " ".join(pieces)
    return " ".join(pieces[: most // 2]) + " ... " + " ".join(pieces[-(most // 2) :])
