"""Static models made here (trained with word2vec or fastText, or distilled from a transformer):
where each one lives in the cache, what it records about how it was made, and the one way it is
saved, so that every ``static`` argument finds it by the name it was given.

A made model is a folder ``<cache>/static/made/<name>/`` holding ``vectors.kv`` (gensim's
KeyedVectors, with ``.npy`` files beside it), ``provenance.json`` (method, corpus, tokens,
parameters, training time) and, for a distilled model, the teacher's ``tokenizer.json``. The folder
is built under a temporary name and renamed into place whole: it is complete or absent.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextlens.core import atomic_files
from contextlens.core.cache_folders import clean_leftovers, replace_dir, temp_dir_for
from contextlens.core.resources import REGISTRY, cache_dir
from contextlens.errors import ParameterError, StaticModelError

PROVENANCE = "provenance.json"
VECTORS = "vectors.kv"
TOKENIZER = "tokenizer.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NO_STATIC = "none"  # `static` none: no static model, where a command can do without one


def made_root() -> Path:
    return cache_dir() / "static" / "made"


def check_name(name: Any, parameter: str = "name") -> str:
    """A made model's name: letters, digits, ``.``, ``_``, ``-`` (a cache folder name, never a path),
    not ``none`` (which says "no static model") and not a registered model's name in any case
    (``GLOVE-50D`` would shadow glove-50d, or be taken for it on a case-insensitive disk)."""
    if not isinstance(name, str) or not _NAME.match(name) or name.endswith((".kv", ".bin", ".txt")):
        raise ParameterError(
            parameter,
            f"must be a short name of letters, digits, '.', '_' or '-' (e.g. w2v-lee), got {name!r}",
        )
    if name.lower() == NO_STATIC:
        raise ParameterError(
            parameter, f"{name!r} is reserved: as a static model's name it means no static model; choose another"
        )
    registered = next((known for known in REGISTRY if known.lower() == name.lower()), None)
    if registered is not None:
        same = "" if registered == name else f" ({registered}, in another case)"
        raise ParameterError(parameter, f"{name!r} is a registered model's name{same}; choose another")
    return name


def check_new(name: Any, force: bool, parameter: str = "name") -> str:
    """``name`` checked, and free unless ``force`` (checked before any work, so none is lost)."""
    check_name(name, parameter)
    if not force and made_dir(name) is not None:
        raise ParameterError(
            parameter, f"{name!r} is already a made model ({made_root() / name}); choose another or pass `force`"
        )
    return name


def made_dir(name: str) -> Path | None:
    """The folder of the made model ``name`` if there is a complete one, else None."""
    if not isinstance(name, str) or not _NAME.match(name):
        return None
    folder = made_root() / name
    clean_leftovers(folder)
    return folder if (folder / PROVENANCE).is_file() and (folder / VECTORS).is_file() else None


def made_fingerprint(name: str) -> str | None:
    """``made:<digest>`` of the made model's ``provenance.json`` (which holds its training or
    distillation time, so a model made again under the same name gets another one); None when
    ``name`` is no made model. What an index of its vectors records, to refuse a re-made model."""
    folder = made_dir(name)
    if folder is None:
        return None
    return "made:" + hashlib.sha256((folder / PROVENANCE).read_bytes()).hexdigest()[:16]


def read_provenance(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StaticModelError(f"made model {folder} has no readable {PROVENANCE} ({exc}); make it again") from exc
    if not isinstance(data, dict):
        raise StaticModelError(f"{folder / PROVENANCE} is not a JSON object; make the model again")
    return data


def made_models() -> list[dict[str, Any]]:
    """Every complete made model's provenance (with its ``name`` and ``path``), by name."""
    root = made_root()
    if not root.is_dir():
        return []
    rows = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if made_dir(folder.name) is not None:
            rows.append({**read_provenance(folder), "name": folder.name, "path": str(folder)})
    return rows


def save_made(name: str, write: Callable[[Path], None], provenance: dict[str, Any]) -> Path:
    """Build the model's folder with ``write(tmp_folder)`` (it saves ``vectors.kv`` and any other
    file there), add ``provenance.json``, and move the folder into place in one step."""
    check_name(name)
    folder = made_root() / name
    tmp = temp_dir_for(folder)
    try:
        write(tmp)
        if not (tmp / VECTORS).is_file():
            raise StaticModelError(f"saving {name!r} wrote no {VECTORS}")
        atomic_files.write_text(tmp / PROVENANCE, json.dumps({**provenance, "name": name}, indent=2) + "\n")
        replace_dir(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
