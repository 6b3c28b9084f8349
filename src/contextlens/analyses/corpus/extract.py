"""The corpus extraction job: every whole-word occurrence of the targets -> one Parquet row each.

The corpus is read as a stream of documents and cut into chunks of whole documents holding at
least ``chunk_chars`` characters, numbered in reading order (readers are deterministic). The job
checks everything it can before any model loads (the arguments, the engine, the output folder
against its manifest, the corpus), loads ONE model (``loader``: the face's, which also reports
its drift; a Ray job on torch fp32 reads only its facts, :class:`ActorsModel`), then hands the
pending chunks to an engine (:mod:`.engines`: this process or Ray actors, both running
:func:`.chunks.scan_chunk` and :func:`.chunks.encode_scanned`) and writes each chunk's rows as a
shard of the extraction folder (:mod:`.folder`). A re-run skips the chunks whose shard exists: a
job killed at any point (even ``kill -9``) finishes with no duplicated and no missing row. The
manifest (:mod:`.manifest`) is marked complete last; a complete job re-run does nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa

from contextlens.analyses.corpus import engines
from contextlens.analyses.corpus.chunks import DTYPES, JobSpec, schema, table_counts
from contextlens.analyses.corpus.folder import (
    check_fresh_folder,
    clean_temporaries,
    done_shards,
    shard_counts,
    shard_number,
    shard_scan_counts,
    write_shard,
)
from contextlens.analyses.corpus.manifest import DEFAULT_CHUNK_CHARS, FORMAT, Manifest, check_settings, read_manifest
from contextlens.analyses.corpus.readers import (
    DEFAULT_LINE_BREAKS,
    ReadStats,
    check_line_breaks,
    check_readable,
    describe,
    empty_message,
)
from contextlens.analyses.corpus.stream import PendingChunks
from contextlens.analyses.corpus.targets import Matcher, ScanCounts, form_table, parse_targets
from contextlens.core import arguments
from contextlens.core.devices import check_device_choice
from contextlens.core.model_facts import ModelFacts, check_weights, model_facts
from contextlens.core.resources import DEFAULT_CONTEXTUAL
from contextlens.errors import InputError, TargetNotFoundError

MAX_LISTED = 10  # absent targets named in an error; the rest are counted


@dataclass
class ExtractStats:
    """Live counters for the progress bar and the final summary."""

    sentences: int = 0  # of the paragraphs split (they held a match)
    paragraphs: int = 0  # every non-empty paragraph read
    paragraphs_split: int = 0
    occurrences: int = 0
    rows_written: int = 0
    chunks_written: int = 0
    chunks_skipped: int = 0
    started: float = field(default_factory=time.perf_counter)
    read: ReadStats = field(default_factory=ReadStats)
    # Ray actors' memory, by process id: (peak RSS, RSS at its last chunk), bytes
    actor_rss: dict[int, tuple[int, int]] = field(default_factory=dict)
    # Ray actors' start-up, by process id: (started, model loaded), epoch seconds (time.time())
    actor_ready: dict[int, tuple[float, float]] = field(default_factory=dict)
    # Ray actors' nodes, by process id; and the cluster the job ran on (run_ray's description)
    actor_nodes: dict[int, str] = field(default_factory=dict)
    cluster: dict[str, object] | None = None

    def add(self, counts: ScanCounts) -> None:
        self.sentences += counts.sentences
        self.paragraphs += counts.paragraphs
        self.paragraphs_split += counts.paragraphs_split

    @property
    def paragraphs_skipped(self) -> int:
        return self.paragraphs - self.paragraphs_split

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
class ExtractConfig:
    """One job's settings (what the manifest records) and how it runs (engine, threads)."""

    model: str = DEFAULT_CONTEXTUAL
    layers: tuple[int, ...] | None = None
    pooling: str = "mean"
    dtype: str = "float16"
    chunk_chars: int = DEFAULT_CHUNK_CHARS
    forms: bool = False
    precision: str = "fp32"
    runtime: str = "torch"
    engine: str = "local"
    address: str | None = None
    actors: int = 1
    threads: int | None = None
    on_error: str = "skip"
    force: bool = False  # write into a non-empty folder that holds no extraction (its files are left alone)
    # paragraphs (blank lines separate them, wrapped lines joined) or lines; None: the folder's own
    # when continuing one (an old folder's is lines), else paragraphs
    line_breaks: str | None = None
    # cpu (the reference), cuda, cuda:N or auto; on Ray the actors' (ray_placement.actor_device)
    device: str = "cpu"


Loader = Callable[[str, str, str, str], object]  # (model, precision, runtime, device) -> a loaded ContextualModel


def model_identity(name: str) -> tuple[str | None, str | None]:
    """(pinned revision, pinned weights sha256) of a registered model; None for others."""
    from contextlens.core.resources import REGISTRY

    spec = REGISTRY.get(name)
    return (spec.revision, spec.sha256) if spec is not None else (None, None)


def extract_corpus(
    source: str,
    targets: Sequence[str],
    out: Path | str,
    model: str = DEFAULT_CONTEXTUAL,
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
    force: bool = False,
    loader: Loader | None = None,
    line_breaks: str | None = None,
    device: str = "cpu",
) -> ExtractResult:
    """Extract every occurrence of ``targets`` (with ``forms``: and of their inflected forms) in
    ``source`` into Parquet shards under ``out``. ``threads``: torch threads of the local engine,
    or of each Ray actor (default there: the cluster's CPUs shared among the actors).
    ``line_breaks``: ``paragraphs`` (blank lines separate paragraphs; a wrapped line's break is a
    space) or ``lines`` (one sentence or paragraph per line); default the folder's own when it
    continues a job, else ``paragraphs``. ``device``: ``cpu`` (default, the reference), ``cuda``,
    ``cuda:N`` or ``auto``; on Ray, the actors' (a GPU each where the cluster has them, not the
    driver's). A folder continues on another device only where the vectors agree within fp32's
    printed check (fp32; never fp16/bf16 across a GPU and the CPU), and records it. The keyword
    form of :func:`run_extraction`."""
    config = ExtractConfig(
        model, None if layers is None else tuple(layers), pooling, dtype, chunk_chars, forms, precision,
        runtime, engine, address, actors, threads, on_error, force, line_breaks, device,
    )  # fmt: skip
    return run_extraction(source, targets, out, config, progress, loader)


def run_extraction(
    source: str,
    targets: Sequence[str],
    out: Path | str,
    config: ExtractConfig,
    progress: Callable[[ExtractStats], None] | None = None,
    loader: Loader | None = None,
) -> ExtractResult:
    """The job: check, load one model, encode the pending chunks, write the shards, finish."""
    config, words, folder = _checked(source, targets, out, config)
    existing = read_manifest(folder)
    if config.line_breaks is None:  # continuing a folder reads it as it was read
        config = replace(config, line_breaks=DEFAULT_LINE_BREAKS if existing is None else existing.line_breaks)
    if existing is not None:
        check_settings(existing, _known_settings(source, words, config), folder)
    else:
        check_fresh_folder(folder, config.force)
    if existing is not None and existing.complete:  # nothing to encode: check it is the same job, whole
        on_ray = None if config.engine == "local" else _named_actors_device(config.device, existing.device)
        manifest = _manifest(source, words, config, _job_model(config, loader, on_ray), on_ray)
        manifest.check_same_job(existing, folder)
        done = done_shards(folder, schema(existing.layers, existing.hidden_size, existing.dtype))
        if len(done) != existing.counts.get("shards", len(done)):
            raise InputError(
                f"{folder} holds {len(done)} shards where its finished job wrote {existing.counts['shards']}; "
                "extract into a new `out` folder"
            )
        return ExtractResult(folder, existing, True, ExtractStats())
    check_readable(source, config.on_error, config.line_breaks)
    threads = engines.prepare(config.engine, config.address, config.actors, config.threads, config.device)
    actors_device = engines.job_device(config.engine, config.address, config.actors, config.device, config.precision)
    loaded = _job_model(config, loader, actors_device)
    manifest = _manifest(source, words, config, loaded, actors_device)
    if existing is not None:
        manifest.check_same_job(existing, folder)
        manifest.continue_from(existing)
    stats = ExtractStats()
    spec = JobSpec(
        loaded.name,
        Matcher(form_table(words, config.forms)),
        tuple(manifest.layers),
        config.pooling,
        config.dtype,
        loaded.precision,
        runtime=loaded.runtime,
        device=actors_device or loaded.backend.device,
    )
    folder.mkdir(parents=True, exist_ok=True)
    clean_temporaries(folder)
    done = done_shards(folder, schema(manifest.layers, manifest.hidden_size, manifest.dtype))
    manifest.write(folder)
    _encode(source, folder, config, spec, loaded, threads, done, stats, progress)
    return _finish(source, folder, words, config, manifest, stats)


@dataclass(frozen=True)
class ActorsModel:
    """A Ray job's model as its driver knows it: the facts of its ``config.json``. The actors load
    the weights, each once; the driver needs only a name, a width and the layers, and loading
    them there too cost the job torch, transformers and the weights before any actor started."""

    facts: ModelFacts
    precision: str
    runtime: str
    device: str = "cpu"  # the actors' (ray_placement.actor_device)

    @property
    def name(self) -> str:
        return self.facts.name

    @property
    def hidden_size(self) -> int:
        return self.facts.hidden_size

    def check_layers(self, layers: Sequence[int] | None) -> tuple[int, ...]:
        return self.facts.check_layers(arguments.layer_numbers(layers))


def _job_model(config: ExtractConfig, loader: Loader | None, actors_device: str | None = None):
    """The loaded model, or for a Ray job on torch fp32 or on GPUs (``actors_device`` cuda) its
    facts alone: the driver holds no model (a head node often has no GPU). Any other Ray backend
    still loads here, on the CPU: the face reports its measured drift from torch fp32, and an ONNX
    graph is exported once, before the actors need it."""
    if config.engine == "ray":
        from contextlens.core.devices import is_cuda
        from contextlens.core.runtime_choice import resolve_runtime

        device = actors_device or "cpu"
        gpu = is_cuda(device)
        if (config.precision == "fp32" or gpu) and resolve_runtime(
            config.model, config.precision, config.runtime, device=device
        ) == "torch":
            facts = model_facts(config.model)
            if facts is not None:  # (a hub id not on disk has none: it loads, and downloads, here)
                check_weights(config.model)  # a folder without weights: refused here, not by each actor
                return ActorsModel(facts, config.precision, "torch", device)
        return _load(config, loader, "cpu")
    return _load(config, loader, config.device)


def _named_actors_device(device: str, folder_device: str) -> str:
    """A Ray job's device without starting Ray (a complete folder is checked, not continued): cpu,
    cuda:0 (each actor's own GPU), or for ``auto`` the folder's own."""
    if device == "auto":
        return folder_device
    return "cpu" if device == "cpu" else "cuda:0"


def _load(config: ExtractConfig, loader: Loader | None, device: str):
    if loader is None:
        from contextlens.core.contextual_models import load_contextual as loader  # torch: only when a job runs
    return loader(config.model, config.precision, config.runtime, device)


def _checked(
    source: str, targets: Sequence[str], out: Path | str, config: ExtractConfig
) -> tuple[ExtractConfig, tuple[str, ...], Path]:
    """The arguments checked without weights: each refusal names the parameter."""
    # core.choices, not their torch-importing re-exports: a Ray job's driver on torch fp32 imports no torch
    from contextlens.core.choices import check_pooling, check_precision, check_runtime

    if config.dtype not in DTYPES:
        raise InputError(f"unknown `dtype` {config.dtype!r}; use float16 or float32")
    if config.chunk_chars < 1:
        raise InputError(f"`chunk_chars` must be at least 1 character, got {config.chunk_chars}")
    engines.check(config.engine, config.address, config.actors, config.threads, config.device)
    if config.line_breaks is not None:
        check_line_breaks(config.line_breaks)
    check_pooling(config.pooling)
    config = replace(
        config,
        precision=check_precision(config.precision),
        runtime=check_runtime(config.runtime),
        device=check_device_choice(config.device),
    )
    words = parse_targets(targets)
    if not str(out).strip():
        raise InputError("`out` is empty; give the folder for the shards (new, or one from the same job)")
    folder = Path(out).expanduser()
    if folder.exists() and not folder.is_dir():
        raise InputError(f"`out` {folder} is a file; give a folder (new or from the same job)")
    return config, words, folder


def _known_settings(source: str, words: tuple[str, ...], config: ExtractConfig) -> dict[str, object]:
    """The job settings known before the model loads (the model's own facts come after)."""
    from contextlens.core.resources import REGISTRY

    known: dict[str, object] = {
        "format": FORMAT,
        "corpus": describe(source),
        "targets": list(words),
        "forms": config.forms,
        "line_breaks": config.line_breaks,
        "precision": config.precision,
        "runtime": config.runtime,
        "pooling": config.pooling,
        "dtype": config.dtype,
        "chunk_chars": config.chunk_chars,
    }
    spec = REGISTRY.get(config.model)
    if spec is not None:
        known["model"] = spec.name
    if config.layers is not None:
        known["layers"] = list(config.layers)
    return known


def _manifest(
    source: str, words: tuple[str, ...], config: ExtractConfig, loaded, actors_device: str | None = None
) -> Manifest:
    """The job's manifest; its device is the actors' on Ray (``actors_device``), else the loaded model's."""
    wanted = loaded.check_layers(None if config.layers is None else list(config.layers))
    device = actors_device or loaded.backend.device
    revision, sha = model_identity(loaded.name)
    return Manifest(
        corpus=describe(source),
        targets=list(words),
        model=loaded.name,
        revision=revision,
        weights_sha256=sha,
        layers=list(wanted),
        pooling=config.pooling,
        dtype=config.dtype,
        chunk_chars=config.chunk_chars,
        hidden_size=loaded.hidden_size,
        forms=config.forms,
        line_breaks=config.line_breaks,
        precision=loaded.precision,
        runtime=loaded.runtime,
        device=device,
    )


def _encode(source, folder, config, spec, loaded, threads, done, stats, progress) -> None:
    """Hand the chunks without a shard to the engine; write each one's rows as its shard."""

    for name in sorted(done):  # a resumed job: what the shards already written read
        stats.chunks_skipped += 1
        stats.add(shard_scan_counts(folder / name))
    if done and progress:
        progress(stats)
    done_numbers = frozenset(shard_number(n) for n in done)
    pending = PendingChunks(source, config.chunk_chars, config.on_error, done_numbers, config.line_breaks)

    def written(number: int, table: pa.Table) -> None:
        write_shard(folder, number, table)
        stats.add(table_counts(table.schema))
        stats.chunks_written += 1
        stats.occurrences += table.num_rows
        stats.rows_written += table.num_rows
        if progress:
            progress(stats)

    def memory(pid: int, peak: int, rss: int, born: float, ready: float, node: str) -> None:
        stats.actor_rss[pid] = (peak, rss)
        stats.actor_ready[pid] = (born, ready)
        stats.actor_nodes[pid] = node

    if config.engine == "local" and threads is not None:
        import torch

        torch.set_num_threads(threads)
    stats.cluster = engines.run(
        config.engine, spec, pending, written, stats.read, loaded=loaded, address=config.address,
        actors=config.actors, threads=threads, memory=memory,
    )  # fmt: skip


def _finish(source, folder, words, config, manifest: Manifest, stats: ExtractStats) -> ExtractResult:
    """Count the rows back from the shards; mark the job complete unless a target never occurs."""
    if stats.paragraphs == 0:
        raise InputError(empty_message(source, stats.read))
    manifest.counts = shard_counts(folder, words)
    manifest.counts.update(skipped_lines=stats.read.skipped)
    if stats.read.long_paragraphs:
        manifest.counts.update(long_paragraphs=stats.read.long_paragraphs)
    missing = [w for w in words if manifest.counts["per_target"][w] == 0]
    if missing:
        shown = ", ".join(repr(w) for w in missing[:MAX_LISTED])
        if len(missing) > MAX_LISTED:
            shown += f" and {len(missing) - MAX_LISTED:,} more"
        raise TargetNotFoundError(
            f"{shown} {'never occurs' if len(missing) == 1 else 'never occur'} "
            f"in {source!r} ({stats.paragraphs:,} paragraphs"
            f"{'' if config.forms else '; `forms` also matches inflected forms'}); "
            "drop it from `targets` (the folder is left unfinished)"
        )
    manifest.cluster = cluster_record(stats)
    manifest.complete = True
    manifest.write(folder)
    return ExtractResult(folder, manifest, False, stats)


def cluster_record(stats: ExtractStats) -> dict[str, object] | None:
    """The Ray cluster of the job's last run, for the manifest: its nodes, each with the number of
    actors that answered from it (a resumed job records the run that finished it); None: local."""
    if stats.cluster is None:
        return None
    on = [stats.actor_nodes[pid] for pid in sorted(stats.actor_nodes)]
    nodes = [dict(n, actors=on.count(n["node_id"])) for n in stats.cluster["nodes"]]  # type: ignore[union-attr]
    return dict(stats.cluster, nodes=nodes)
