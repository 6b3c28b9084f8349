"""The documents an index holds: read from a text file, a folder of ``.txt`` files or JSONL, their
ids unique, and identical texts folded on request."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from contextlens.errors import DataFileError


@dataclass(frozen=True)
class Document:
    id: str
    text: str


def load_documents(path: Path | str) -> list[Document]:
    """Documents from a text file (one per line), a folder of ``.txt`` files, or JSONL.

    Ids: the line number (text file), the file name without ``.txt`` (folder), or the ``id``
    field (JSONL; the line number when absent). Blank lines are skipped; ids must be unique.
    """
    path = Path(path)
    if not path.exists():
        raise DataFileError(f"documents {path} do not exist; give a text file, a folder of .txt files or a .jsonl file")
    if path.is_dir():
        files = sorted(path.rglob("*.txt"))
        if not files:
            raise DataFileError(f"folder {path} has no .txt files; put one document per .txt file in it")
        docs = [Document(str(f.relative_to(path).with_suffix("")), _read_text(f).strip()) for f in files]
        empty = [d.id for d in docs if not d.text]
        if empty:
            raise DataFileError(f"{path}/{empty[0]}.txt is empty; remove it or give it some text")
    elif path.suffix.lower() in {".jsonl", ".ndjson"}:
        docs = _jsonl_documents(path)
    else:
        docs = [
            Document(str(n), line.strip()) for n, line in enumerate(_read_text(path).splitlines(), 1) if line.strip()
        ]
    if not docs:
        raise DataFileError(f"{path} holds no documents; give one document per line")
    return unique_ids(path, docs)


def unique_ids(path: Path, docs: list[Document]) -> list[Document]:
    """``docs`` when no id appears twice (a search hit names its document by id); else one line."""
    seen: set[str] = set()
    for d in docs:
        if d.id in seen:
            raise DataFileError(f"{path}: document id {d.id!r} appears twice; ids must be unique")
        seen.add(d.id)
    return docs


def dedupe_documents(docs: Sequence[Document]) -> tuple[list[Document], int]:
    """The documents with each text kept once (its first id; whitespace runs count as one space),
    and how many were folded: identical texts give identical vectors, which pgvector folds into
    one HNSW element and which fill a top-k with one text (5 of a query's top 10 were one licence
    sentence)."""
    seen: set[str] = set()
    kept = []
    for d in docs:
        key = " ".join(d.text.split())
        if key not in seen:
            seen.add(key)
            kept.append(d)
    return kept, len(docs) - len(kept)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{path} is not UTF-8 text (byte {exc.start}); convert it to UTF-8") from exc


def _jsonl_documents(path: Path) -> list[Document]:
    docs = []
    for n, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFileError(f"{path}:{n}: not valid JSON ({exc.msg}); write one JSON object per line") from exc
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or not obj["text"].strip():
            raise DataFileError(
                f'{path}:{n}: expected an object with a non-empty "text" string, like {{"id": 1, "text": "..."}}'
            )
        docs.append(Document(str(obj.get("id", n)), obj["text"].strip()))
    return docs
