"""A static model distilled from a transformer (``static distill``, model2vec's recipe).

One vector per token of the teacher's vocabulary; a word or a text is cut by the teacher's own
tokenizer and its tokens' vectors are averaged. Its own module: the teacher's tokenizer is the one
thing it adds to :class:`contextlens.core.static_word_model.StaticModel`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from contextlens.core import arguments
from contextlens.core.static_word_model import StaticModel, shown_pieces, unit_rows
from contextlens.errors import InputError, OutOfVocabularyError, StaticModelError

if TYPE_CHECKING:
    from gensim.models import KeyedVectors


class DistilledStaticModel(StaticModel):
    """A static model distilled from a transformer (model2vec's recipe): one vector per token of the
    teacher's vocabulary; a word or a text is cut by the teacher's own tokenizer and its tokens'
    vectors are averaged, so every word that tokenizes gets a vector."""

    def __init__(self, name: str, kv: KeyedVectors, tokenizer_file: Path, provenance: dict[str, object]):
        from tokenizers import Tokenizer

        super().__init__(name, kv, lowercase=False, provenance=provenance)
        try:
            self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as exc:  # noqa: BLE001 - a damaged tokenizer file is the model's fault
            raise StaticModelError(f"cannot read {tokenizer_file} ({exc}); distill the model again") from exc
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        vocab = self.tokenizer.get_vocab()
        # tokenizer id -> row of the token's vector; -1 for tokens left out (special, unused)
        self._row = np.full(max(vocab.values(), default=-1) + 1, -1, dtype=np.int64)
        for token, row in kv.key_to_index.items():
            if token in vocab:
                self._row[vocab[token]] = row

    @property
    def has_subwords(self) -> bool:
        return True

    def _rows(self, text: str) -> np.ndarray:
        ids = np.asarray(self.tokenizer.encode(text, add_special_tokens=False).ids, dtype=np.int64)
        rows = self._row[ids[ids < len(self._row)]]
        return rows[rows >= 0]

    def key_for(self, word: str) -> str:
        key = self._given_key(word)
        if key not in self.kv.key_to_index and not len(self._rows(key)):
            raise OutOfVocabularyError(f"{word!r} has no token known to {self.name}; try another spelling")
        return key

    def _raw(self, key: str) -> np.ndarray:
        if key in self.kv.key_to_index:
            return self.kv.get_vector(key)
        return np.asarray(self.kv.vectors[self._rows(key)], dtype=np.float32).mean(axis=0)

    def composition(self, word: str) -> list[str] | None:
        """The teacher's word pieces of a word that is not one token of its vocabulary; None for one that is."""
        key = self.key_for(word)
        if key in self.kv.key_to_index:
            return None
        return [t for t in self.tokenizer.encode(key, add_special_tokens=False).tokens]

    def composition_note(self, word: str) -> str | None:
        pieces = self.composition(word)
        if pieces is None:
            return None
        return (
            f"{word!r} is not one token of {self.name} (distilled from {self.provenance.get('teacher')}): its vector "
            f"is the mean of its {len(pieces)} word pieces ({shown_pieces(pieces)})"
        )

    def _key(self, word: str) -> str:
        """The word as the teacher's tokenizer normalizes it (lowercased for an uncased teacher)."""
        word = super()._key(word)
        normalizer = self.tokenizer.normalizer
        return normalizer.normalize_str(word) if normalizer is not None else word

    def most_similar(
        self,
        positive: list[str] | str,
        negative: list[str] | None = None,
        topn: int = 10,
    ) -> list[tuple[str, float]]:
        """Nearest whole-word tokens to the sum of ``positive`` minus ``negative`` (word pieces such
        as ``##ing`` and punctuation left out; the words asked about too)."""
        positive = arguments.word_list(positive, "positive")
        negative = arguments.word_list(negative, "negative")
        if not positive and not negative:
            raise InputError("give at least one word to search around (positive=['bank'])")
        topn = arguments.whole_number(topn, "topn", minimum=1)
        pos = [self.key_for(w) for w in positive]
        neg = [self.key_for(w) for w in negative]
        unit = unit_rows(np.asarray(self.kv.vectors, dtype=np.float32))
        query = sum(unit_rows(self._raw(k)[None])[0] for k in pos) - sum(
            (unit_rows(self._raw(k)[None])[0] for k in neg), np.zeros(self.dim, dtype=np.float32)
        )
        scores = unit @ unit_rows(np.asarray(query, dtype=np.float32)[None])[0]
        asked = set(pos) | set(neg)
        out: list[tuple[str, float]] = []
        for row in np.argsort(-scores):
            word = self.kv.index_to_key[row]
            if word.isalpha() and len(word) > 1 and word not in asked:
                out.append((word, float(scores[row])))
                if len(out) == topn:
                    break
        return out

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit vector per text: the mean of its tokens' vectors (model2vec's encode)."""
        texts = arguments.text_list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # encode_batch_fast: the same ids without character offsets (model2vec uses it too)
        for i, enc in enumerate(self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)):
            ids = np.asarray(enc.ids, dtype=np.int64)
            rows = self._row[ids[ids < len(self._row)]]
            rows = rows[rows >= 0]
            if len(rows):
                out[i] = self.kv.vectors[rows].mean(axis=0)
        return unit_rows(out)
