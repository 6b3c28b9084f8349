"""Corpus readers: files, folders, JSONL, Parquet, and the installed corpora, all streamed.

A reader yields :class:`Document` objects one at a time, in a fixed order (folders sorted), so
a job can be resumed by position. A document is a list of pieces (paragraphs, a gloss and its
examples); sentence splitting happens after (:mod:`.sentences`), and a sentence never crosses a
piece. How a file's line breaks are read is ``line_breaks``: ``"paragraphs"`` (the default) cuts
at blank lines and re-flows the single line breaks inside a paragraph into spaces, as
hard-wrapped text (licences, books, man pages, docstrings) needs; ``"lines"`` makes every line
its own piece, for corpora of one sentence (or one paragraph) per line. The installed corpora
have their own structure and ignore it. Lines that are not UTF-8 are skipped and counted
(``on_error="skip"``) or stop the job with the file and line.
"""

from __future__ import annotations

import bz2
import gzip
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from contextlens.analyses.corpus import wiki_markup
from contextlens.errors import DataFileError, InputError

INSTALLED = ("enwiki", "lee", "wordnet")
ENWIKI_FILE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
LEE_FILE = "lee_background.cor"
TEXT_SUFFIXES = (".txt", ".text", ".cor")
LINE_BREAKS = ("paragraphs", "lines")
DEFAULT_LINE_BREAKS = "paragraphs"
LONG_PARAGRAPH_LINES = 200  # a "paragraph" joining more lines is likely a file of one sentence per line


@dataclass(frozen=True)
class Document:
    doc_id: str
    pieces: tuple[str, ...]


@dataclass
class ReadStats:
    """What the reader saw; ``skipped`` counts undecodable lines (file:line of the first ones)."""

    documents: int = 0
    skipped: int = 0
    skipped_where: list[str] = field(default_factory=list)
    long_paragraphs: int = 0  # paragraphs re-flowed from more than LONG_PARAGRAPH_LINES lines
    long_where: list[str] = field(default_factory=list)

    def note_long(self, where: str) -> None:
        self.long_paragraphs += 1
        if len(self.long_where) < 5:
            self.long_where.append(where)

    def long_message(self) -> str | None:
        """A warning when paragraphs joined very many lines: a corpus of one sentence per line
        read as paragraphs (no blank lines) becomes one enormous paragraph per file."""
        if not self.long_paragraphs:
            return None
        return (
            f"{self.long_paragraphs:,} paragraph(s) re-flowed from more than {LONG_PARAGRAPH_LINES} lines with no "
            f"blank line (first at {', '.join(self.long_where[:3])}); if the corpus has one sentence or paragraph "
            "per line, read it with line breaks `lines`"
        )


def check_line_breaks(line_breaks: str) -> str:
    if line_breaks not in LINE_BREAKS:
        raise InputError(
            f"unknown `line_breaks` {line_breaks!r}; use paragraphs (blank lines separate paragraphs, wrapped "
            "lines are joined) or lines (one sentence or paragraph per line)"
        )
    return line_breaks


def describe(source: str) -> str:
    """A stable description of a corpus argument, for the manifest."""
    return source if source in INSTALLED else str(Path(source).expanduser().resolve())


def read_corpus(
    source: str, stats: ReadStats | None = None, on_error: str = "skip", line_breaks: str = DEFAULT_LINE_BREAKS
) -> Iterator[Document]:
    """Documents of ``source``: an installed corpus name, a file or a folder of .txt files."""
    if on_error not in ("skip", "stop"):
        raise InputError(f"unknown `on_error` {on_error!r}; use skip or stop")
    check_line_breaks(line_breaks)
    stats = stats if stats is not None else ReadStats()
    if not isinstance(source, str) or not source.strip():
        raise InputError("the corpus (`source`) is empty; give a file, a folder or one of " + ", ".join(INSTALLED))
    if source in INSTALLED:
        yield from _count(_installed(source, stats, on_error), stats)
        return
    path = Path(source).expanduser()
    if not path.exists():
        raise DataFileError(
            f"corpus {source!r} is neither a file, a folder nor an installed corpus ({', '.join(INSTALLED)})"
        )
    if not path.is_dir() and not path.is_file():  # a FIFO, socket or device would block or never end
        raise DataFileError(f"corpus {source!r} is not a regular file or folder; give a file, a folder or a name")
    if path.is_dir():
        yield from _count(_folder(path, stats, on_error, line_breaks), stats)
        return
    kind = _base_suffix(path)
    if kind == ".jsonl":
        yield from _count(_jsonl(path, stats, on_error, line_breaks), stats)
    elif kind == ".parquet":
        yield from _count(_parquet(path, stats, line_breaks), stats)
    else:
        yield from _count(_pieces(path, path.name, stats, on_error, line_breaks), stats)


def _installed(source: str, stats: ReadStats, on_error: str) -> Iterator[Document]:
    """An installed corpus by name (:data:`INSTALLED`)."""
    if source == "enwiki":
        return _enwiki()
    if source == "lee":
        return _lines(_gensim_data(LEE_FILE), "lee", stats, on_error)
    return _wordnet()


def _folder(path: Path, stats: ReadStats, on_error: str, line_breaks: str) -> Iterator[Document]:
    """A folder of text files: one document per file, its pieces in order (an empty file: none)."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and _base_suffix(p) in TEXT_SUFFIXES)
    if not files:
        raise DataFileError(f"folder {path} holds no .txt files (.gz/.bz2 also read)")
    for f in files:
        label = str(f.relative_to(path))
        pieces = [d.pieces[0] for d in _pieces(f, label, stats, on_error, line_breaks)]
        if pieces:
            yield Document(label, tuple(pieces))


def check_readable(source: str, on_error: str = "skip", line_breaks: str = DEFAULT_LINE_BREAKS) -> None:
    """Refuse a corpus that is missing, unreadable or empty before anything is written for it:
    reading it is lazy, so without this a job would leave a folder behind for a corpus that
    was never there."""
    stats = ReadStats()
    if next(read_corpus(source, stats, on_error, line_breaks), None) is None:
        raise InputError(empty_message(source, stats))


def split_pieces(text: str, line_breaks: str, where: str = "", stats: ReadStats | None = None) -> tuple[str, ...]:
    """The pieces of one text (a JSONL field, a Parquet cell): its lines, blank ones included (as
    before the choice existed: a piece's index is part of a row's key), or its paragraphs re-flowed."""
    if line_breaks == "lines":
        return tuple(text.splitlines())
    return tuple(p for _, p in reflowed(enumerate(text.splitlines(), start=1), where, stats))


def reflowed(
    lines: Iterable[tuple[int, str]], where: str = "", stats: ReadStats | None = None
) -> Iterator[tuple[int, str]]:
    """``(first line number, paragraph)`` for each run of non-blank lines, its lines stripped and
    joined by one space (a hyphen at a line's end is kept as written: it may be a real one)."""
    run: list[str] = []
    first = 0
    for n, line in (*lines, (0, "")):
        if line.strip():
            first = first if run else n
            run.append(line.strip())
            continue
        if run:
            if stats is not None and len(run) > LONG_PARAGRAPH_LINES:
                stats.note_long(f"{where}:{first}" if where else f"line {first}")
            yield first, " ".join(run)
            run = []


def empty_message(source: str, stats: ReadStats) -> str:
    """Why a corpus gave no sentence: nothing in it, or every line skipped as not UTF-8."""
    if stats.skipped:
        return (
            f"corpus {source!r} has no UTF-8 text: {stats.skipped:,} line(s) skipped as not UTF-8 "
            f"(first at {', '.join(stats.skipped_where[:3])}); save it as UTF-8"
        )
    return f"corpus {source!r} is empty: no sentence to read"


def _count(docs: Iterator[Document], stats: ReadStats) -> Iterator[Document]:
    for doc in docs:
        stats.documents += 1
        yield doc


def _base_suffix(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2"):
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def _open_binary(path: Path) -> IO[bytes]:
    name = path.name.lower()
    try:
        if name.endswith(".gz"):
            return gzip.open(path, "rb")
        if name.endswith(".bz2"):
            return bz2.open(path, "rb")
        return path.open("rb")
    except OSError as exc:
        raise DataFileError(f"cannot read corpus file {path}: {exc.strerror or exc}") from exc


def _decoded_lines(path: Path, stats: ReadStats, on_error: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each UTF-8 line; bad lines skipped and counted, or an error."""
    try:
        with _open_binary(path) as fh:
            _refuse_utf16(path, fh.peek(4)[:4])
            for n, raw in enumerate(fh, start=1):
                if b"\x00" in raw:
                    raise DataFileError(
                        f"{path}:{n} holds NUL bytes: the file is UTF-16 or binary, not UTF-8 text; save it as UTF-8"
                    )
                try:
                    yield n, raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    if on_error == "stop":
                        raise DataFileError(
                            f"{path}:{n}: not UTF-8 (byte {exc.start}); fix the file or pass `on_error` skip"
                        ) from None
                    stats.skipped += 1
                    if len(stats.skipped_where) < 5:
                        stats.skipped_where.append(f"{path}:{n}")
    except (OSError, EOFError) as exc:
        raise DataFileError(f"cannot read corpus file {path}: {exc}") from exc


def _refuse_utf16(path: Path, head: bytes) -> None:
    """A UTF-16 or UTF-32 file would read as NUL-interleaved text: say what it is."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DataFileError(f"{path} is UTF-16 or UTF-32 (it starts with a byte order mark); save it as UTF-8")


def _lines(path: Path, label: str, stats: ReadStats, on_error: str) -> Iterator[Document]:
    """One document per non-empty line, named ``label:line``."""
    for n, line in _decoded_lines(path, stats, on_error):
        if line.strip():
            yield Document(f"{label}:{n}", (line,))


def _pieces(path: Path, label: str, stats: ReadStats, on_error: str, line_breaks: str) -> Iterator[Document]:
    """One document per line (``lines``) or per paragraph (``paragraphs``), named ``label:first line``."""
    if line_breaks == "lines":
        yield from _lines(path, label, stats, on_error)
        return
    for n, paragraph in reflowed(_decoded_lines(path, stats, on_error), str(path), stats):
        yield Document(f"{label}:{n}", (paragraph,))


def _jsonl(path: Path, stats: ReadStats, on_error: str, line_breaks: str = DEFAULT_LINE_BREAKS) -> Iterator[Document]:
    for n, line in _decoded_lines(path, stats, on_error):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise DataFileError(f"{path}:{n}: not a JSON object ({exc.msg}); one JSON object per line") from None
        except RecursionError:
            raise DataFileError(f"{path}:{n}: JSON nested too deeply to read; one flat JSON object per line") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise DataFileError(f"{path}:{n}: no string field 'text'; each line needs {{\"text\": ...}}")
        doc_id = str(record.get("id", f"{path.name}:{n}"))
        yield Document(doc_id, split_pieces(record["text"], line_breaks, f"{path}:{n}", stats) or ("",))


def _parquet(path: Path, stats: ReadStats, line_breaks: str = DEFAULT_LINE_BREAKS) -> Iterator[Document]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise DataFileError(f"cannot read {path} as Parquet: {exc}") from exc
    names = pf.schema_arrow.names
    if "text" not in names:
        raise DataFileError(f"{path} has no 'text' column (columns: {', '.join(names)})")
    kind = pf.schema_arrow.field("text").type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise DataFileError(f"{path}: column 'text' holds {kind}, not strings; give the text as a string column")
    columns = ["text", "id"] if "id" in names else ["text"]
    row = 0
    for batch in pf.iter_batches(batch_size=1024, columns=columns):
        data = batch.to_pydict()
        for k, text in enumerate(data["text"]):
            doc_id = str(data["id"][k]) if "id" in data else f"{path.name}:{row}"
            row += 1
            if isinstance(text, str) and text.strip():
                yield Document(doc_id, split_pieces(text, line_breaks, f"{path} row {row - 1}", stats))


def _gensim_data(name: str) -> Path:
    from gensim.test.utils import datapath

    path = Path(datapath(name))
    if not path.is_file():
        raise DataFileError(f"installed corpus file {name} is missing; reinstall gensim (it ships the file)")
    return path


_REF = re.compile(r"^\s*(==+.*==+|\|.*|\{\|.*|!.*)\s*$")


def _enwiki(filter_wiki=None) -> Iterator[Document]:
    """Articles of gensim's shortened Wikipedia dump, cleaned as gensim's own ``filter_wiki`` does
    (:mod:`.wiki_markup`: the same text, faster; ``filter_wiki`` another filter, for benchmarks)."""
    from gensim.corpora.wikicorpus import ARTICLE_MIN_WORDS, IGNORED_NAMESPACES, extract_pages

    filter_wiki = filter_wiki or wiki_markup.filter_wiki

    with bz2.open(_gensim_data(ENWIKI_FILE), "rb") as fh:
        for title, text, pageid in extract_pages(fh):
            if any(title.startswith(ns + ":") for ns in IGNORED_NAMESPACES):
                continue
            plain = filter_wiki(text)
            if plain.lstrip().lower().startswith("#redirect") or len(plain.split()) < ARTICLE_MIN_WORDS:
                continue
            pieces = tuple(p for p in plain.splitlines() if p.strip() and not _REF.match(p))
            if pieces:
                yield Document(f"{pageid}:{title}", pieces)


def _wordnet() -> Iterator[Document]:
    """One document per WordNet 3.0 synset: its gloss, then its usage examples."""
    from contextlens.core.wordnet import synset_entries

    for synset in synset_entries():
        pieces = [synset.definition, *(e.strip() for e in synset.examples)]
        yield Document(synset.name, tuple(p for p in pieces if p))
