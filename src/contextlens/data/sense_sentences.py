"""Sense-labelled sentences: ``word<TAB>sense<TAB>[marked] sentence`` lines, the built-in set or a user's.

The polysemy explorer and the named text sets (:mod:`contextlens.data.text_sets`) read
them from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contextlens.core.occurrences import Occurrence, parse_marked
from contextlens.data import POLYSEMY_FILE, builtin_path, read_tsv
from contextlens.errors import ContextlensError, DataFileError, InputError

TSV_COLUMNS = "word<TAB>sense<TAB>sentence with the target in [brackets]"


@dataclass(frozen=True)
class SenseSentence:
    """One labelled occurrence from a data file (``sense`` is None when unlabelled)."""

    word: str
    sense: str | None
    occurrence: Occurrence
    source: str


def load_sense_sentences(path: Path | str | None = None) -> list[SenseSentence]:
    """Read ``word<TAB>sense<TAB>[marked] sentence`` (or ``word<TAB>sentence``) lines.

    ``None`` reads the built-in set (bank, bat, light, lead, spring; three senses, four sentences each).
    """
    path = builtin_path(POLYSEMY_FILE) if path is None else Path(path)
    out = []
    for rec in read_tsv(path, (2, 3), TSV_COLUMNS):
        word, sense, sentence = (rec.fields[0], None, rec.fields[1]) if len(rec.fields) == 2 else rec.fields
        try:
            occ = parse_marked(sentence)
        except ContextlensError as exc:
            raise DataFileError(f"{rec.where()}: {exc}") from exc
        out.append(SenseSentence(word.lower(), sense, occ, rec.where()))
    if not out:
        raise DataFileError(f"{path} holds no sentences; write lines {TSV_COLUMNS}")
    return out


def sense_sentences_from_lines(lines: list[str], field: str = "sentences") -> list[SenseSentence]:
    """Sentences typed one per line, as a page takes them: ``sentence``, ``sense | sentence``,
    ``sense<TAB>sentence`` or the file's ``word<TAB>sense<TAB>sentence``; the word is the target in
    brackets unless named. Errors name ``field`` and the line."""
    out = []
    for n, line in enumerate(lines, 1):
        parts = [p.strip() for p in (line.split("\t") if "\t" in line else line.split("|"))]
        if len(parts) > 3 or any(not p for p in parts):
            raise InputError(
                f"`{field}` line {n}: {line.strip()[:80]!r}: write one sentence per line, optionally after its sense "
                "and a bar: money | I opened a [bank] account."
            )
        try:
            occ = parse_marked(parts[-1])
        except ContextlensError as exc:
            raise InputError(f"`{field}` line {n}: {exc}") from exc
        word = parts[0] if len(parts) == 3 else occ.word
        sense = parts[-2] if len(parts) >= 2 else None
        out.append(SenseSentence(word.lower(), sense, occ, f"{field} line {n}"))
    return out
