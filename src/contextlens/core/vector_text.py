"""Reading word vectors from a text file (GloVe: ``word v1 v2 ...``; word2vec text: a
``count dim`` header first), checked line by line.

gensim's text reader trusts the first line's width: a shorter row is broadcast (``river 0.3``
under a 2-D ``bank 0.1 0.2`` became ``[0.3, 0.3]``, an invented vector) and a NaN passes. This
reader refuses, in one line naming the file, the line and the expected dimension, whatever
row does not fit. Rows are split as gensim splits them (on single spaces, trailing whitespace
removed); blank lines are skipped; a repeated word keeps its first vector, as in gensim.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from contextlens.core.numerals import is_digits
from contextlens.errors import StaticModelError


def read_text_vectors(path: Path, header: bool) -> tuple[list[str], np.ndarray]:
    """``(words, (n, dim) float32 matrix)`` of a GloVe (``header=False``) or word2vec text file."""
    words: list[str] = []
    rows: list[np.ndarray] = []
    seen: set[str] = set()
    dim: int | None = None
    promised: int | None = None
    where = ""  # where the dimension came from, for the message
    count = 0  # vector lines read (a repeated word counts, as in the header's count)
    for number, line in _lines(path):
        if header and promised is None:
            promised, dim = _header(path, number, line)
            where = f"the header's dimension on line {number}"
            continue
        parts = line.split(" ")
        if dim is None:
            dim, where = len(parts) - 1, f"the {len(parts) - 1} values on line {number}"
            if dim < 1:
                raise StaticModelError(f"{path}: line {number} holds a word but no values; expected 'word v1 v2 ...'")
        _check_width(path, number, len(parts) - 1, dim, where)
        if promised is not None and count == promised:
            raise StaticModelError(
                f"{path}: line {number} is one vector more than the {promised} its header promises; "
                "fix the count on the first line"
            )
        values = _values(path, number, parts[1:])
        count += 1
        word = parts[0]
        if word not in seen:
            seen.add(word)
            words.append(word)
            rows.append(values)
    if promised is not None and count < promised:
        raise StaticModelError(
            f"{path} ends after {count} vectors, but its header promises {promised}; the file is truncated"
        )
    matrix = np.stack(rows) if rows else np.zeros((0, dim or 1), dtype=np.float32)
    return words, matrix


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of each non-blank line, decoded as UTF-8 (a line that is not: refused)."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8").rstrip()
            except UnicodeDecodeError:
                raise StaticModelError(f"{path}: line {number} is not UTF-8 text; give a UTF-8 vectors file") from None
            if line:
                yield number, line


def _check_width(path: Path, number: int, got: int, dim: int, where: str) -> None:
    if got != dim:
        raise StaticModelError(
            f"{path}: line {number} holds {got} value{'' if got == 1 else 's'} after its word, expected {dim} "
            f"(as {where}); the file is damaged or not a vectors file"
        )


def _values(path: Path, number: int, texts: list[str]) -> np.ndarray:
    """A line's values as float32, every one a finite number."""
    try:
        values = np.array(texts, dtype=np.float32)
    except ValueError:
        bad = next(p for p in texts if not _is_number(p))
        raise StaticModelError(f"{path}: line {number} holds {bad[:20]!r}, which is not a number") from None
    if not np.isfinite(values).all():
        raise StaticModelError(f"{path}: line {number} holds NaN or infinity; every value must be a number")
    return values


def _header(path: Path, number: int, line: str) -> tuple[int, int]:
    parts = line.split()
    if len(parts) != 2 or not all(is_digits(p) and len(p) < 20 for p in parts) or int(parts[1]) < 1:
        raise StaticModelError(
            f"{path}: line {number} should be the word2vec header 'count dimension', got {line[:40]!r}"
        )
    return int(parts[0]), int(parts[1])


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
