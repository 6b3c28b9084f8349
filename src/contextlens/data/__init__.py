"""Built-in data written for contextlens, and the one reader of user TSV files.

Every data file is tab-separated, one record per line; blank lines and lines starting with ``#``
are skipped. A malformed line is a :class:`~contextlens.errors.DataFileError` that names the file
and the line number, so the user can fix it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from contextlens.errors import DataFileError

POLYSEMY_FILE = "polysemy.tsv"
PAIRS_FILE = "pairs.tsv"


@dataclass(frozen=True)
class TsvLine:
    """One record of a data file and where it came from (for error messages)."""

    source: str
    line: int
    fields: tuple[str, ...]

    def where(self) -> str:
        return f"{self.source}, line {self.line}"


def builtin_path(name: str) -> Path:
    """Path of a built-in data file shipped inside the package."""
    return Path(str(files("contextlens").joinpath("data", name)))


def read_tsv(path: Path | str, field_counts: tuple[int, ...], what: str) -> Iterator[TsvLine]:
    """Yield the records of a TSV file, each with one of ``field_counts`` fields.

    ``what`` describes the expected columns for the error message, e.g. ``"word<TAB>sense<TAB>sentence"``.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"data file {path} does not exist; give a TSV file with lines {what}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{path} is not UTF-8 text ({exc.reason}); save it as UTF-8") from exc
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        fields = tuple(f.strip() for f in raw.split("\t"))
        if len(fields) not in field_counts:
            counts = " or ".join(str(c) for c in field_counts)
            raise DataFileError(
                f"{path}, line {number}: expected {counts} tab-separated fields ({what}), found {len(fields)}"
            )
        if any(not f for f in fields):
            raise DataFileError(f"{path}, line {number}: a field is empty; write {what}")
        yield TsvLine(str(path), number, fields)
