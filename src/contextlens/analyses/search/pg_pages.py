"""A built pgvector index read back from its pages: what its build actually decided.

Two things about an index's layout are drawn while it is built and cannot be known before: an HNSW
element's level (random) and an IVFFlat list's length (k-means). Reading them back lets the page
rules of :mod:`.pg_hnsw_pages` and :mod:`.pg_capacity` be checked exactly on a real index.

The file comes through ``pg_read_binary_file`` after a ``CHECKPOINT`` (rights the embedded server
grants its role, ``pg_checkpoint`` and that function's EXECUTE, confined to the data folder; a
managed service's user usually has neither). The layout read is
PostgreSQL's page (a 24-byte header whose ``pd_lower`` ends the 4-byte line pointers, each an
offset in its low 15 bits; the special space at ``pd_special``) and pgvector 0.8's tuples
(hnsw.h, ivfflat.h).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

PAGE = 8192
HEADER = 24
HNSW_ELEMENT = 1  # HNSW_ELEMENT_TUPLE_TYPE: the first byte of an element tuple; the second is its level
NO_BLOCK = 0xFFFFFFFF  # InvalidBlockNumber: the end of an IVFFlat list's chain of pages


def read_index_file(conn, index: str) -> bytes:
    """The index's pages as the server wrote them (all 1 GiB segments, after a CHECKPOINT)."""
    conn.execute("CHECKPOINT")
    path = conn.execute("SELECT pg_relation_filepath(%s::regclass)", (index,)).fetchone()[0]
    parts, segment = [], 0
    while True:  # path, path.1, path.2, ...
        name = path if segment == 0 else f"{path}.{segment}"
        chunk = conn.execute("SELECT pg_read_binary_file(%s, true)", (name,)).fetchone()[0]
        if chunk is None:
            return b"".join(parts)
        parts.append(bytes(chunk))
        segment += 1


def _page(data: bytes, block: int) -> memoryview:
    return memoryview(data)[block * PAGE : (block + 1) * PAGE]


def _offsets(page: memoryview) -> list[int]:
    """Where each tuple of the page starts (its line pointers' offsets)."""
    lower = struct.unpack_from("<H", page, 12)[0]
    return [item & 0x7FFF for (item,) in struct.iter_unpack("<I", page[HEADER:lower])]


def hnsw_elements(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``(levels, blocks)`` of every HNSW element tuple, in block and line-pointer order: the order
    the build wrote them (block 0 is the metapage)."""
    levels, blocks = [], []
    for block in range(1, len(data) // PAGE):
        page = _page(data, block)
        for offset in _offsets(page):
            if page[offset] == HNSW_ELEMENT:
                levels.append(page[offset + 1])
                blocks.append(block)
    return np.array(levels, dtype=np.int64), np.array(blocks, dtype=np.int64)


@dataclass(frozen=True)
class IvfflatLayout:
    """An IVFFlat index's lists as built: the pages holding the list tuples (centers), and each
    list's entries and pages (its chain from ``startPage`` through each page's ``nextblkno``)."""

    list_pages: int
    entries: list[int]
    pages: list[int]


def ivfflat_lists(data: bytes) -> IvfflatLayout:
    """The lists of an IVFFlat index: the metapage gives their number (``IvfflatMetaPageData``:
    magic, version, dimensions, lists), the list tuples follow from block 1 (``startPage`` first),
    and every entry page's line pointers count its entries."""
    lists = struct.unpack_from("<IIHH", _page(data, 0), HEADER)[3]
    starts, block = [], 1
    while len(starts) < lists:
        page = _page(data, block)
        starts += [struct.unpack_from("<I", page, offset)[0] for offset in _offsets(page)]
        block += 1
    entries, pages = [], []
    for start in starts:
        count, chain, at = 0, 0, start
        while at != NO_BLOCK:
            page = _page(data, at)
            count, chain = count + len(_offsets(page)), chain + 1
            at = struct.unpack_from("<I", page, struct.unpack_from("<H", page, 16)[0])[0]
        entries.append(count)
        pages.append(chain)
    return IvfflatLayout(list_pages=block - 1, entries=entries, pages=pages)
