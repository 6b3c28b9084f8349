"""What an executor runs on one chunk: split, find the targets, encode them, one row each.

The local engine and every Ray actor call :func:`encode_chunk` with the same :class:`JobSpec`
(picklable: names and the form table, not a loaded model), so their rows are the same. A chunk's
table records how many sentences the chunk had (schema metadata), so a resumed job can count
the sentences of the shards it skips.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from contextlens.analyses.corpus.targets import Document, Matcher, scan_documents

DTYPES = {"float16": np.float16, "float32": np.float32}
SENTENCES_KEY = b"contextlens.sentences"  # shard metadata: sentences in the shard's chunk


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


def layer_column(layer: int) -> str:
    return f"layer_{layer}"


def schema(layers: Sequence[int], hidden_size: int, dtype: str) -> pa.Schema:
    """The columns of every shard of a job (format 2)."""
    vec = pa.list_(pa.float16() if dtype == "float16" else pa.float32(), hidden_size)
    return pa.schema(
        [
            ("doc_id", pa.string()),
            ("sentence_index", pa.int32()),
            ("sentence", pa.string()),
            ("start", pa.int32()),
            ("end", pa.int32()),
            ("target", pa.string()),
            ("form", pa.string()),
        ]
        + [(layer_column(lay), vec) for lay in layers]
    )


def encode_chunk(model, spec: JobSpec, docs: Sequence[Document]) -> pa.Table:
    """The rows of one chunk: split, locate the targets, run the core's extraction, one row each.

    The table's metadata says how many sentences the chunk had (see :func:`table_sentences`)."""
    from contextlens.core.alignment import tokenize_many  # torch: loaded where a chunk is encoded
    from contextlens.core.extraction import extract_targets

    sentences, found = scan_documents(docs, spec.matcher)
    sch = schema(spec.layers, model.hidden_size, spec.dtype)
    cols = {
        "doc_id": [f.doc_id for f in found],
        "sentence_index": [f.sentence_index for f in found],
        "sentence": [f.occurrence.text for f in found],
        "start": [f.occurrence.start for f in found],
        "end": [f.occurrence.end for f in found],
        "target": [f.target for f in found],
        "form": [f.form for f in found],
    }
    arrays = [pa.array(cols[name], type=sch.field(name).type) for name in cols]
    if found:
        toks = tokenize_many(model, [f.occurrence for f in found])
        hidden, _ = extract_targets(model, toks, spec.layers, spec.pooling, spec.batch_size)
        hidden = hidden.astype(DTYPES[spec.dtype])
    else:
        hidden = np.zeros((0, len(spec.layers), model.hidden_size), dtype=DTYPES[spec.dtype])
    for k in range(len(spec.layers)):
        flat = pa.array(np.ascontiguousarray(hidden[:, k, :]).reshape(-1))
        arrays.append(pa.FixedSizeListArray.from_arrays(flat, model.hidden_size))
    return pa.Table.from_arrays(arrays, schema=sch.with_metadata({SENTENCES_KEY: str(sentences).encode()}))


def table_sentences(table_schema: pa.Schema) -> int:
    """Sentences in the chunk a table (or shard) came from."""
    return int((table_schema.metadata or {}).get(SENTENCES_KEY, b"0"))
