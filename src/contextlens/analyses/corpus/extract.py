"""Corpus extraction: every whole-word occurrence of the targets -> one Parquet row per occurrence.

The corpus is read as a stream of documents and cut into chunks of whole documents holding at
least ``chunk_chars`` characters, numbered in reading order (readers are deterministic). Chunk
``i`` becomes shard ``part-<i>.parquet``, written under a temporary name and renamed into
place, so a shard is either absent or whole. A re-run skips the chunks whose shard exists: a
job killed at any point (even ``kill -9``) finishes with no duplicated and no missing row. The
manifest (:mod:`.manifest`) is marked complete last; a complete job re-run does nothing.

The reader only reads: sentence splitting and locating the targets happen with the encoding,
in :func:`encode_chunk` (:func:`.targets.scan_documents`), wherever the engine runs it (this
process, or a Ray actor: :mod:`.engines`). Vectors come from the core's extraction path
(:func:`contextlens.core.extraction.extract_targets`). Each shard records how many sentences
its chunk had (Parquet metadata), so a resumed job counts the sentences it skipped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from contextlens.analyses.corpus.manifest import DEFAULT_CHUNK_CHARS, Manifest, read_manifest
from contextlens.analyses.corpus.readers import ReadStats, check_readable, describe, read_corpus
from contextlens.analyses.corpus.targets import Document, Matcher, form_table, parse_targets, scan_documents
from contextlens.errors import InputError, TargetNotFoundError

DTYPES = {"float16": np.float16, "float32": np.float32}
SHARD_GLOB = "part-*.parquet"
SENTENCES_KEY = b"contextlens.sentences"  # shard metadata: sentences in the shard's chunk


@dataclass
class ExtractStats:
    """Live counters for the progress bar and the final summary."""

    sentences: int = 0
    occurrences: int = 0
    rows_written: int = 0
    chunks_written: int = 0
    chunks_skipped: int = 0
    started: float = field(default_factory=time.perf_counter)
    read: ReadStats = field(default_factory=ReadStats)
    # Ray actors' memory, by process id: (peak RSS, RSS at its last chunk), bytes
    actor_rss: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started


@dataclass(frozen=True)
class ExtractResult:
    folder: Path
    manifest: Manifest
    already_complete: bool
    stats: ExtractStats


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


def chunked(docs: Iterator[Document], min_chars: int) -> Iterator[tuple[int, list[Document]]]:
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


def schema(layers: Sequence[int], hidden_size: int, dtype: str) -> pa.Schema:
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

    The table's metadata says how many sentences the chunk had (see :func:`shard_sentences`)."""
    from contextlens.core.alignment import tokenize_many
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


def shard_sentences(path: Path) -> int:
    return table_sentences(pq.read_schema(path))


def shard_path(folder: Path, chunk: int) -> Path:
    return folder / f"part-{chunk:06d}.parquet"


def write_shard(folder: Path, chunk: int, table: pa.Table) -> None:
    """Write a shard whole or not at all (temporary name, then an atomic rename)."""
    final = shard_path(folder, chunk)
    tmp = folder / f".{final.name}.tmp-{os.getpid()}"
    pq.write_table(table, tmp)
    os.replace(tmp, final)


def _clean_temporaries(folder: Path) -> None:
    for tmp in folder.glob(".part-*.parquet.tmp-*"):
        tmp.unlink(missing_ok=True)


def model_identity(name: str) -> tuple[str | None, str | None]:
    """(pinned revision, pinned weights sha256) of a registered model; None for others."""
    from contextlens.core.resources import REGISTRY

    spec = REGISTRY.get(name)
    return (spec.revision, spec.sha256) if spec is not None else (None, None)


def extract_corpus(
    source: str,
    targets: Sequence[str],
    out: Path,
    model: str = "mpnet",
    layers: Sequence[int] | None = None,
    pooling: str = "mean",
    dtype: str = "float16",
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
    engine: str = "local",
    address: str | None = None,
    actors: int = 1,
    on_error: str = "skip",
    forms: bool = False,
    precision: str = "fp32",
    threads: int | None = None,
    progress: Callable[[ExtractStats], None] | None = None,
    runtime: str = "torch",
) -> ExtractResult:
    """Extract every occurrence of ``targets`` (with ``forms``: and of their inflected forms) in
    ``source`` into Parquet shards under ``out``. ``threads``: torch threads of the local engine,
    or of each Ray actor (default there: the cluster's CPUs shared among the actors)."""
    from contextlens.analyses.corpus import engines
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.extraction import check_pooling

    if dtype not in DTYPES:
        raise InputError(f"unknown --dtype {dtype!r}; use float16 or float32")
    if chunk_chars < 1:
        raise InputError(f"chunk size must be at least 1 character, got {chunk_chars}")
    if engine not in engines.ENGINES:
        raise InputError(f"unknown --engine {engine!r}; use {' or '.join(engines.ENGINES)}")
    if threads is not None and threads < 1:
        raise InputError(f"--threads must be at least 1, got {threads}")
    check_pooling(pooling)
    words = parse_targets(targets)
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; give a folder (new or from the same job)")
    loaded = load_contextual(model, precision, runtime)
    wanted = loaded.check_layers(None if layers is None else list(layers))
    revision, sha = model_identity(loaded.name)
    manifest = Manifest(
        corpus=describe(source),
        targets=list(words),
        model=loaded.name,
        revision=revision,
        weights_sha256=sha,
        layers=list(wanted),
        pooling=pooling,
        dtype=dtype,
        chunk_chars=chunk_chars,
        hidden_size=loaded.hidden_size,
        forms=forms,
        precision=loaded.precision,
        runtime=loaded.runtime,
    )
    stats = ExtractStats()
    existing = read_manifest(out)
    if existing is not None:
        manifest.check_same_job(existing, out)
        if existing.complete:
            return ExtractResult(out, existing, True, stats)
    spec = JobSpec(
        loaded.name, Matcher(form_table(words, forms)), wanted, pooling, dtype, loaded.precision, runtime=loaded.runtime
    )
    check_readable(source, on_error)
    threads = engines.prepare(engine, address, actors, threads)
    out.mkdir(parents=True, exist_ok=True)
    _clean_temporaries(out)
    manifest.write(out)
    done = {p.name for p in out.glob(SHARD_GLOB)}

    def pending() -> Iterator[tuple[int, list[Document]]]:
        docs = ((d.doc_id, d.pieces) for d in read_corpus(source, stats.read, on_error))
        for number, chunk in chunked(docs, chunk_chars):
            path = shard_path(out, number)
            if path.name in done:
                stats.chunks_skipped += 1
                stats.sentences += shard_sentences(path)
                if progress:
                    progress(stats)
                continue
            yield number, chunk

    def written(number: int, table: pa.Table) -> None:
        write_shard(out, number, table)
        stats.sentences += table_sentences(table.schema)
        stats.chunks_written += 1
        stats.occurrences += table.num_rows
        stats.rows_written += table.num_rows
        if progress:
            progress(stats)

    if engine == "local" and threads is not None:
        import torch

        torch.set_num_threads(threads)
    engines.run(
        engine, spec, pending(), written, loaded=loaded, address=address, actors=actors, threads=threads, stats=stats
    )
    if stats.sentences == 0:
        raise InputError(f"corpus {source!r} is empty: no sentence to read")
    manifest.counts = shard_counts(out, words)
    manifest.counts.update(skipped_lines=stats.read.skipped)
    missing = [w for w in words if manifest.counts["per_target"][w] == 0]
    if missing:
        raise TargetNotFoundError(
            f"{', '.join(repr(w) for w in missing)} {'never occurs' if len(missing) == 1 else 'never occur'} "
            f"in {source!r} ({stats.sentences} sentences"
            f"{'' if forms else '; --forms also matches inflected forms'}); "
            "drop it from --words (the folder is left unfinished)"
        )
    manifest.complete = True
    manifest.write(out)
    return ExtractResult(out, manifest, False, stats)


def shard_counts(folder: Path, targets: Sequence[str]) -> dict[str, object]:
    """Rows per target and per form, shards and sentences, read back from the shards themselves."""
    per: dict[str, int] = dict.fromkeys(targets, 0)
    per_form: dict[str, int] = {}
    sentences = 0
    shards = sorted(folder.glob(SHARD_GLOB))
    for path in shards:
        table = pq.read_table(path, columns=["target", "form"])
        sentences += table_sentences(table.schema)
        for t, f in zip(table.column("target").to_pylist(), table.column("form").to_pylist(), strict=True):
            per[t] = per.get(t, 0) + 1
            per_form[f] = per_form.get(f, 0) + 1
    return {
        "rows": sum(per.values()),
        "shards": len(shards),
        "sentences": sentences,
        "per_target": per,
        "per_form": dict(sorted(per_form.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def read_rows(folder: Path, target: str | None = None, columns: Sequence[str] | None = None) -> pa.Table:
    """All rows of an extraction folder (optionally one target's), in chunk order."""
    shards = sorted(Path(folder).glob(SHARD_GLOB))
    tables = []
    for path in shards:
        filters = [("target", "==", target)] if target is not None else None
        tables.append(pq.read_table(path, columns=list(columns) if columns else None, filters=filters))
    if not tables:
        raise InputError(f"{folder} holds no shards; run `contextlens corpus extract` into it first")
    return pa.concat_tables(tables)
