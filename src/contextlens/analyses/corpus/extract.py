"""Corpus extraction: every whole-word occurrence of the targets -> one Parquet row per occurrence.

The corpus is read as a stream and cut into chunks of ``chunk_sentences`` sentences, numbered in
reading order (readers are deterministic). Chunk ``i`` becomes shard ``part-<i>.parquet``,
written under a temporary name and renamed into place, so a shard is either absent or whole.
A re-run skips the chunks whose shard exists: a job killed at any point (even ``kill -9``)
finishes with no duplicated and no missing row. The manifest (:mod:`.manifest`) is marked
complete last; a complete job re-run does nothing.

Vectors come from the core's extraction path (:func:`contextlens.core.extraction.extract_targets`)
on occurrences located with the core's :func:`~contextlens.core.occurrences.word_pattern`; the
engines (:mod:`.engines`) only decide where :func:`encode_chunk` runs.
"""

from __future__ import annotations

import os
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from contextlens.analyses.corpus.manifest import Manifest, read_manifest
from contextlens.analyses.corpus.readers import ReadStats, describe, read_corpus
from contextlens.analyses.corpus.sentences import split_sentences
from contextlens.core.occurrences import find_all, word_pattern
from contextlens.errors import InputError, TargetNotFoundError

DTYPES = {"float16": np.float16, "float32": np.float32}
SHARD_GLOB = "part-*.parquet"
Sentence = tuple[str, int, str]  # (doc_id, sentence index in the document, sentence)


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
    targets: tuple[str, ...]
    layers: tuple[int, ...]
    pooling: str
    dtype: str
    batch_size: int = 32


def layer_column(layer: int) -> str:
    return f"layer_{layer}"


def parse_targets(words: Sequence[str]) -> tuple[str, ...]:
    """Lower-case NFC targets, de-duplicated in order; single words only."""
    out: list[str] = []
    for w in words:
        w = unicodedata.normalize("NFC", w.strip()).lower()
        if not w:
            continue
        if any(ch.isspace() for ch in w):
            raise InputError(f"target {w!r} is not a single word; give words like bank,spring")
        if w not in out:
            out.append(w)
    if not out:
        raise InputError("no target words given; pass --words bank,spring or --words-file")
    return tuple(out)


def sentence_stream(source: str, stats: ExtractStats, on_error: str = "skip") -> Iterator[Sentence]:
    """``(doc_id, index, sentence)`` of every sentence of the corpus, in reading order."""
    for doc in read_corpus(source, stats.read, on_error):
        index = 0
        for piece in doc.pieces:
            for sentence in split_sentences(piece):
                yield doc.doc_id, index, sentence
                index += 1


def chunked(stream: Iterator[Sentence], size: int) -> Iterator[tuple[int, list[Sentence]]]:
    chunk: list[Sentence] = []
    number = 0
    for item in stream:
        chunk.append(item)
        if len(chunk) == size:
            yield number, chunk
            number, chunk = number + 1, []
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
        ]
        + [(layer_column(lay), vec) for lay in layers]
    )


def encode_chunk(model, spec: JobSpec, sentences: Sequence[Sentence]) -> pa.Table:
    """The rows of one chunk: locate the targets, run the core's extraction, one row each."""
    from contextlens.core.alignment import tokenize_many
    from contextlens.core.extraction import extract_targets

    pattern = word_pattern(list(spec.targets))
    found = [(doc, idx, occ) for doc, idx, text in sentences for occ in find_all(text, pattern)]
    cols: dict[str, list] = {"doc_id": [], "sentence_index": [], "sentence": [], "start": [], "end": [], "target": []}
    for doc, idx, occ in found:
        cols["doc_id"].append(doc)
        cols["sentence_index"].append(idx)
        cols["sentence"].append(occ.text)
        cols["start"].append(occ.start)
        cols["end"].append(occ.end)
        cols["target"].append(unicodedata.normalize("NFC", occ.word).lower())
    sch = schema(spec.layers, model.hidden_size, spec.dtype)
    arrays = [pa.array(cols[name], type=sch.field(name).type) for name in cols]
    if found:
        toks = tokenize_many(model, [occ for _, _, occ in found])
        hidden, _ = extract_targets(model, toks, spec.layers, spec.pooling, spec.batch_size)
        hidden = hidden.astype(DTYPES[spec.dtype])
    else:
        hidden = np.zeros((0, len(spec.layers), model.hidden_size), dtype=DTYPES[spec.dtype])
    for k in range(len(spec.layers)):
        flat = pa.array(np.ascontiguousarray(hidden[:, k, :]).reshape(-1))
        arrays.append(pa.FixedSizeListArray.from_arrays(flat, model.hidden_size))
    return pa.Table.from_arrays(arrays, schema=sch)


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
    chunk_sentences: int = 256,
    engine: str = "local",
    address: str | None = None,
    actors: int = 1,
    on_error: str = "skip",
    progress: Callable[[ExtractStats], None] | None = None,
) -> ExtractResult:
    """Extract every occurrence of ``targets`` in ``source`` into Parquet shards under ``out``."""
    from contextlens.analyses.corpus import engines
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.extraction import check_pooling

    if dtype not in DTYPES:
        raise InputError(f"unknown --dtype {dtype!r}; use float16 or float32")
    if chunk_sentences < 1:
        raise InputError(f"chunk size must be at least 1 sentence, got {chunk_sentences}")
    if engine not in engines.ENGINES:
        raise InputError(f"unknown --engine {engine!r}; use {' or '.join(engines.ENGINES)}")
    check_pooling(pooling)
    words = parse_targets(targets)
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; give a folder (new or from the same job)")
    loaded = load_contextual(model)
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
        chunk_sentences=chunk_sentences,
        hidden_size=loaded.hidden_size,
    )
    stats = ExtractStats()
    existing = read_manifest(out)
    if existing is not None:
        manifest.check_same_job(existing, out)
        if existing.complete:
            return ExtractResult(out, existing, True, stats)
    out.mkdir(parents=True, exist_ok=True)
    _clean_temporaries(out)
    manifest.write(out)
    spec = JobSpec(loaded.name, words, wanted, pooling, dtype)
    done = {p.name for p in out.glob(SHARD_GLOB)}

    def pending() -> Iterator[tuple[int, list[Sentence]]]:
        for number, chunk in chunked(sentence_stream(source, stats, on_error), chunk_sentences):
            stats.sentences += len(chunk)
            if shard_path(out, number).name in done:
                stats.chunks_skipped += 1
                if progress:
                    progress(stats)
                continue
            yield number, chunk

    def written(number: int, table: pa.Table) -> None:
        write_shard(out, number, table)
        stats.chunks_written += 1
        stats.occurrences += table.num_rows
        stats.rows_written += table.num_rows
        if progress:
            progress(stats)

    engines.run(engine, spec, pending(), written, loaded=loaded, address=address, actors=actors)
    if stats.sentences == 0:
        raise InputError(f"corpus {source!r} is empty: no sentence to read")
    manifest.counts = shard_counts(out, words)
    manifest.counts.update(sentences=stats.sentences, skipped_lines=stats.read.skipped)
    missing = [w for w in words if manifest.counts["per_target"][w] == 0]
    if missing:
        raise TargetNotFoundError(
            f"{', '.join(repr(w) for w in missing)} never occur(s) in {source!r} ({stats.sentences} sentences); "
            "drop it from --words (the folder is left unfinished)"
        )
    manifest.complete = True
    manifest.write(out)
    return ExtractResult(out, manifest, False, stats)


def shard_counts(folder: Path, targets: Sequence[str]) -> dict[str, object]:
    """Rows per target and shards, read back from the shards themselves."""
    per: dict[str, int] = dict.fromkeys(targets, 0)
    shards = sorted(folder.glob(SHARD_GLOB))
    for path in shards:
        col = pq.read_table(path, columns=["target"]).column("target").to_pylist()
        for t in col:
            per[t] = per.get(t, 0) + 1
    return {"rows": sum(per.values()), "shards": len(shards), "per_target": per}


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
