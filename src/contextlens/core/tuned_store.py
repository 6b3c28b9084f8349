"""Contextual models made here (``contextlens tune``): where each one lives, what it records about
how it was made, and how a name finds it, so that every ``model`` argument takes the name it was
given, as it takes ``minilm``.

A tuned model ``NAME`` is a plain Hugging Face folder ``<root>/NAME--<digest>/`` (config, weights,
tokenizer and sentence-transformers files, as the shipped folders) and its record
``<root>/NAME.json`` (base model and its sha256, data, seed, steps, split hash, and the folder).
The record is written last and atomically, so a name is complete or absent. The folder's name
holds the weights' digest: a model tuned again under the same name lives at another path, and
every disk cache keyed on the path (encodings, ONNX exports) cannot serve the old model's results.

Why the root is an argument: the registry of shipped models (:mod:`contextlens.core.resources`)
owns the cache folder and asks this module, below it, for a made name.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from contextlens.core import atomic_files
from contextlens.core.file_digest import sha256_file
from contextlens.errors import ModelLoadError, ParameterError

RECORD_SUFFIX = ".json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def tuned_root(cache: Path) -> Path:
    return cache / "contextual" / "tuned"


def check_name(name: Any, reserved: set[str], parameter: str = "name") -> str:
    """A tuned model's name: letters, digits, ``.``, ``_``, ``-`` (never a path), not a shipped
    model's name in any case (``MiniLM`` would shadow minilm on a case-insensitive disk)."""
    if not isinstance(name, str) or not _NAME.match(name) or name.endswith(RECORD_SUFFIX) or "--" in name:
        raise ParameterError(
            parameter, f"must be a short name of letters, digits, '.', '_' or '-' (e.g. minilm-senses), got {name!r}"
        )
    clash = next((known for known in reserved if known.lower() == name.lower()), None)
    if clash is not None:
        raise ParameterError(parameter, f"{name!r} is the name of the shipped model {clash!r}; choose another")
    return name


def read_record(cache: Path, name: str) -> dict[str, Any] | None:
    """The record of the tuned model ``name`` when it is complete (its folder on disk), else None."""
    if not isinstance(name, str) or not _NAME.match(name):
        return None
    path = tuned_root(cache) / f"{name}{RECORD_SUFFIX}"
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"tuned model record {path} is unreadable ({exc}); tune {name!r} again") from exc
    if not isinstance(record, dict) or not isinstance(record.get("folder"), str):
        raise ModelLoadError(f"tuned model record {path} names no folder; tune {name!r} again")
    folder = tuned_root(cache) / record["folder"]
    if not (folder / "config.json").is_file():
        raise ModelLoadError(f"tuned model {name!r} has no folder at {folder}; tune it again")
    return {**record, "name": name, "path": str(folder)}


def tuned_folder(cache: Path, name: str) -> Path | None:
    """The folder of the tuned model ``name``, or None when no model was tuned under that name
    (the one question :func:`contextlens.core.resources.resolve_contextual` asks)."""
    record = read_record(cache, name)
    return None if record is None else Path(record["path"])


def tuned_models(cache: Path) -> list[dict[str, Any]]:
    """Every complete tuned model's record (with ``name`` and ``path``), by name."""
    root = tuned_root(cache)
    if not root.is_dir():
        return []
    names = sorted(p.name[: -len(RECORD_SUFFIX)] for p in root.glob(f"*{RECORD_SUFFIX}") if not p.name.startswith("."))
    return [r for r in (read_record(cache, n) for n in names) if r is not None]


WEIGHTS_FILE = "model.safetensors"  # what a tuned folder's digest is of


def folder_name(name: str, digest: str) -> str:
    return f"{name}--{digest[:12]}"


def keep_registered_weights(target: Path, built: Path, digest: str) -> bool:
    """Whether ``built`` took the weight file of the registered folder ``target`` because a re-tune
    (same base, data, settings and seed) made the very same bytes: taken over, the file keeps its date,
    and what is keyed on the weights' name, size and date (the ONNX export and its lean tables,
    minutes to make and hundreds of MB) stays valid instead of being made again. Hard-linked, not
    moved: until the switch the registered folder keeps its weights, so a kill leaves it whole."""
    old, new = target / WEIGHTS_FILE, built / WEIGHTS_FILE
    if not (old.is_file() and new.is_file()) or old.stat().st_size != new.stat().st_size:
        return False
    if sha256_file(old) != digest:  # the folder's name says digest; a damaged file is replaced
        return False
    linked = new.with_name(new.name + ".kept")
    try:
        os.link(old, linked)
    except OSError:  # a file system without hard links: the new file, dated now
        return False
    linked.replace(new)
    return True


def register(cache: Path, name: str, built: Path, digest: str, record: dict[str, Any]) -> Path:
    """Move the complete model folder ``built`` into the registry as ``name`` (weights ``digest``)
    and write its record last; a model tuned before under ``name`` is removed after the switch."""
    root = tuned_root(cache)
    root.mkdir(parents=True, exist_ok=True)
    target = root / folder_name(name, digest)
    try:
        old = read_record(cache, name)
    except ModelLoadError:  # a damaged record is replaced
        old = None
    if target.exists():
        keep_registered_weights(target, built, digest)
        shutil.rmtree(target)
    built.replace(target)
    body = {**record, "name": name, "folder": target.name}
    atomic_files.write_text(root / f"{name}{RECORD_SUFFIX}", json.dumps(body, indent=2) + "\n", durable=True)
    if old is not None and Path(old["path"]) != target:
        shutil.rmtree(old["path"], ignore_errors=True)
    return target
