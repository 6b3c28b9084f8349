"""The job's pending chunks: the corpus read in order, cut into numbered chunks, those without a shard.

Both engines draw the chunks from one :class:`PendingChunks` (picklable: the corpus name, not an
open file): the local engine in this process, the Ray engine in one Ray read task on the
driver's node, which streams them to the actors as it reads. The chunks already written (a
resumed job) are skipped by number, so a resumed job encodes exactly the missing ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from contextlens.analyses.corpus.readers import ReadStats, read_corpus
from contextlens.analyses.corpus.targets import Document

Chunk = tuple[int, list[Document]]  # (chunk number, its documents as (doc_id, pieces))


def chunked(docs: Iterator[Document], min_chars: int) -> Iterator[Chunk]:
    """Whole documents grouped into numbered chunks of at least ``min_chars`` characters."""
    chunk: list[Document] = []
    number = size = 0
    for doc in docs:
        chunk.append(doc)
        size += sum(len(p) for p in doc[1])
        if size >= min_chars:
            yield number, chunk
            number, chunk, size = number + 1, [], 0
    if chunk:
        yield number, chunk


@dataclass(frozen=True)
class PendingChunks:
    """The chunks of ``source`` whose number is not in ``done``, in reading order."""

    source: str
    chunk_chars: int
    on_error: str = "skip"
    done: frozenset[int] = frozenset()
    line_breaks: str = "paragraphs"

    def chunks(self, stats: ReadStats) -> Iterator[Chunk]:
        """The pending chunks; ``stats`` counts what the reader saw (every document, done or not)."""
        docs = ((d.doc_id, d.pieces) for d in read_corpus(self.source, stats, self.on_error, self.line_breaks))
        for number, chunk in chunked(docs, self.chunk_chars):
            if number not in self.done:
                yield number, chunk


def merge_read_stats(into: ReadStats, other: ReadStats) -> None:
    """Add what another reader (a Ray read task) saw."""
    into.documents += other.documents
    into.skipped += other.skipped
    into.skipped_where.extend(other.skipped_where[: max(0, 5 - len(into.skipped_where))])
    into.long_paragraphs += other.long_paragraphs
    into.long_where.extend(other.long_where[: max(0, 5 - len(into.long_where))])
