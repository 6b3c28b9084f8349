"""What an executor runs on one chunk: find the targets, split where they are, encode, one row each.

The local engine and every Ray actor call :func:`scan_chunk` then :func:`encode_scanned` (on a few
chunks at once) with the same :class:`JobSpec` (picklable: names and the form table, not a
loaded model), so their rows are the same. A chunk's
table records what the chunk's scan read (schema metadata: paragraphs, paragraphs split,
sentences of those), so a resumed job can count the shards it skips.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from contextlens.analyses.corpus.targets import Document, Found, Matcher, ScanCounts, scan_documents

# The row key (format 3): a row's sentence is the ``sentence_index``-th sentence (from 0) of the
# ``paragraph_index``-th piece (from 0) of document ``doc_id``; with ``start`` it is its occurrence.
# It does not depend on how many other paragraphs were split, so it is the same whatever the engine.
SENTENCE_KEY = ("doc_id", "paragraph_index", "sentence_index")
DTYPES = {"float16": np.float16, "float32": np.float32}
# shard metadata: what the scan of the shard's chunk read
SENTENCES_KEY = b"contextlens.sentences"  # sentences of the paragraphs split (they held a match)
PARAGRAPHS_KEY = b"contextlens.paragraphs"  # every non-empty paragraph read
SPLIT_KEY = b"contextlens.paragraphs_split"  # the paragraphs that held a match


@dataclass(frozen=True)
class JobSpec:
    """What an engine needs to encode a chunk anywhere (picklable: names, not loaded models)."""

    model: str
    matcher: Matcher
    layers: tuple[int, ...]
    pooling: str
    dtype: str
    precision: str = "fp32"
    batch_size: int = 32
    runtime: str = "torch"
    device: str = "cpu"  # where a Ray actor loads the model: cpu, or cuda:0 (the GPU Ray gave it)


def layer_column(layer: int) -> str:
    return f"layer_{layer}"


def schema(layers: Sequence[int], hidden_size: int, dtype: str) -> pa.Schema:
    """The columns of every shard of a job (format 3: ``paragraph_index`` + ``sentence_index``
    within the paragraph; format 2 numbered sentences within the document)."""
    vec = pa.list_(pa.float16() if dtype == "float16" else pa.float32(), hidden_size)
    return pa.schema(
        [
            ("doc_id", pa.string()),
            ("paragraph_index", pa.int32()),
            ("sentence_index", pa.int32()),
            ("sentence", pa.string()),
            ("start", pa.int32()),
            ("end", pa.int32()),
            ("target", pa.string()),
            ("form", pa.string()),
        ]
        + [(layer_column(lay), vec) for lay in layers]
    )


@dataclass(frozen=True)
class ScannedChunk:
    """A chunk after its scan: what it read and the occurrences found (the documents dropped)."""

    number: int
    counts: ScanCounts
    found: list[Found]


def scan_chunk(spec: JobSpec, number: int, docs: Sequence[Document]) -> ScannedChunk:
    counts, found = scan_documents(docs, spec.matcher)
    return ScannedChunk(number, counts, found)


def encode_scanned(model, spec: JobSpec, scanned: Sequence[ScannedChunk]) -> list[tuple[int, pa.Table]]:
    """The tables of several scanned chunks from ONE extraction call: the core sorts the
    occurrences by length into batches, so chunks with few occurrences each do not pay a
    padded, part-empty batch apiece (the local engine groups chunks this way)."""
    from contextlens.core.alignment import tokenize_many  # torch: loaded where a chunk is encoded
    from contextlens.core.extraction import extract_targets

    found = [f for chunk in scanned for f in chunk.found]
    if found:
        toks = tokenize_many(model, [f.occurrence for f in found])
        hidden, _ = extract_targets(model, toks, spec.layers, spec.pooling, spec.batch_size)
        hidden = hidden.astype(DTYPES[spec.dtype])
    else:
        hidden = np.zeros((0, len(spec.layers), model.hidden_size), dtype=DTYPES[spec.dtype])
    out, at = [], 0
    for chunk in scanned:
        n = len(chunk.found)
        out.append((chunk.number, _table(model, spec, chunk, hidden[at : at + n])))
        at += n
    return out


def _table(model, spec: JobSpec, chunk: ScannedChunk, hidden: np.ndarray) -> pa.Table:
    found, counts = chunk.found, chunk.counts
    sch = schema(spec.layers, model.hidden_size, spec.dtype)
    cols = {
        "doc_id": [f.doc_id for f in found],
        "paragraph_index": [f.paragraph_index for f in found],
        "sentence_index": [f.sentence_index for f in found],
        "sentence": [f.occurrence.text for f in found],
        "start": [f.occurrence.start for f in found],
        "end": [f.occurrence.end for f in found],
        "target": [f.target for f in found],
        "form": [f.form for f in found],
    }
    arrays = [pa.array(cols[name], type=sch.field(name).type) for name in cols]
    for k in range(len(spec.layers)):
        arrays.append(pa.FixedSizeListArray.from_arrays(_values(hidden[:, k, :]), model.hidden_size))
    meta = {
        SENTENCES_KEY: str(counts.sentences).encode(),
        PARAGRAPHS_KEY: str(counts.paragraphs).encode(),
        SPLIT_KEY: str(counts.paragraphs_split).encode(),
    }
    return pa.Table.from_arrays(arrays, schema=sch.with_metadata(meta))


def _values(matrix: np.ndarray) -> pa.Array:
    """A matrix's values as one Arrow array over the same bytes: ``pa.array`` on a float16 array
    goes value by value through Python (0.76 s for 300 x 384 values, against 60 us)."""
    flat = np.ascontiguousarray(matrix).reshape(-1)
    return pa.Array.from_buffers(pa.from_numpy_dtype(flat.dtype), flat.size, [None, pa.py_buffer(flat)])


def table_counts(table_schema: pa.Schema) -> ScanCounts:
    """What the scan of the chunk a table (or shard) came from read."""
    meta = table_schema.metadata or {}
    return ScanCounts(
        int(meta.get(PARAGRAPHS_KEY, b"0")), int(meta.get(SPLIT_KEY, b"0")), int(meta.get(SENTENCES_KEY, b"0"))
    )
