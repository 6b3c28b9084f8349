"""Where chunks are encoded: ``local`` (this process) or ``ray`` (Ray Data, an actor pool).

Both engines run the same :mod:`.chunks` functions (find, split where found, encode) on the same
chunks of documents and hand back the same tables (the local engine encodes the occurrences of a
few consecutive chunks in one call, a Ray actor those of its chunk); the job (:mod:`.extract`)
writes the shards, so resumability does not depend on the engine. :func:`check` refuses a wrong combination before
anything starts (Ray included), :func:`prepare` starts what the engine needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pyarrow as pa

from contextlens.analyses.corpus import ray_engine, ray_placement
from contextlens.analyses.corpus.chunks import JobSpec, ScannedChunk, encode_scanned, scan_chunk
from contextlens.analyses.corpus.readers import ReadStats
from contextlens.analyses.corpus.stream import Chunk, PendingChunks
from contextlens.core.devices import CPU, check_device_choice, is_cuda, resolve_device
from contextlens.errors import InputError

ENGINES = ("local", "ray")
# The local engine encodes the occurrences of consecutive chunks together, up to this many
# batches' worth or this many chunks: rare targets give a few occurrences a chunk, and a batch
# per chunk would be mostly padding and overhead. The core sorts a call's occurrences by length
# into batches, so each call pays for one long-tailed, part-padded last batch: with 8 batches a
# group, Lee's 312 occurrences went in groups of 267 + 45 and the forward padded to 24,940
# tokens against 17,940 in one call (+39%, +42% CPU time, benchmarks/corpus.py --limit). A kill
# loses at most one group's shards.
GROUP_BATCHES = 32
GROUP_CHUNKS = 256
Written = Callable[[int, pa.Table], None]


def check(engine: str, address: str | None, actors: int, threads: int | None, device: str = CPU) -> None:
    """Refuse an engine setting that cannot run, or one the engine would ignore, before any start
    (a GPU asked of a local Ray on a machine without one too: the local Ray's GPUs are this one's)."""
    if engine not in ENGINES:
        raise InputError(f"unknown `engine` {engine!r}; use {' or '.join(ENGINES)}")
    if threads is not None and threads < 1:
        raise InputError(f"`threads` must be at least 1, got {threads}")
    if actors < 1:
        raise InputError(f"`actors` must be at least 1, got {actors}")
    if engine == "local":
        if actors != 1:
            raise InputError(f"`actors` {actors} is for `engine` ray; the local engine runs one model here")
        if address is not None:
            raise InputError(f"`address` {address!r} is a Ray cluster; pass `engine` ray with it, or drop it")
        return
    if address is None:  # a local Ray gets this machine's CPUs (and GPUs): check them before starting it
        total = os.cpu_count() or 1
        ray_placement.check_threads(actors, threads or max(1, total // actors), [total])
        if is_cuda(check_device_choice(device)):
            resolve_device(device, "torch")  # the one-line refusal of a GPU that is not there


def job_device(engine: str, address: str | None, actors: int, device: str, precision: str) -> str | None:
    """The device a Ray job's actors load the model on (:func:`.ray_placement.actor_device`, from the
    cluster's GPUs: Ray is started by :func:`prepare` first); None for the local engine, whose
    device is its loaded model's. ``cpu`` needs no cluster."""
    if engine == "local":
        return None
    if check_device_choice(device) == CPU:
        return CPU
    ray = ray_engine.start_ray(address)  # the connection :func:`prepare` made
    gpus = [int(n["gpus"]) for n in ray_engine.cluster_nodes(ray)]
    where = "the Ray cluster" if address is None else f"the Ray cluster at {address}"
    return ray_placement.actor_device(device, precision, actors, gpus, where)


def prepare(engine: str, address: str | None, actors: int, threads: int | None, device: str = CPU) -> int | None:
    """Start what the engine needs; returns the threads to use (Ray: per actor, settled against
    the cluster's CPUs)."""
    check(engine, address, actors, threads, device)
    if engine == "local":
        return threads
    return ray_engine.actor_threads(actors, threads, address)


def grouped(spec: JobSpec, chunks: Iterator[Chunk]) -> Iterator[list[ScannedChunk]]:
    """Consecutive chunks, scanned, in groups of about ``GROUP_BATCHES`` batches of occurrences."""
    group: list[ScannedChunk] = []
    found = 0
    for number, docs in chunks:
        group.append(scan_chunk(spec, number, docs))
        found += len(group[-1].found)
        if found >= GROUP_BATCHES * spec.batch_size or len(group) >= GROUP_CHUNKS:
            yield group
            group, found = [], 0
    if group:
        yield group


def run(
    engine: str,
    spec: JobSpec,
    pending: PendingChunks,
    written: Written,
    read_stats: ReadStats,
    loaded=None,
    address: str | None = None,
    actors: int = 1,
    threads: int | None = None,
    memory: ray_engine.Memory | None = None,
) -> dict[str, object] | None:
    """Encode the ``pending`` chunks and call ``written`` with each chunk's rows (``read_stats``:
    what the reader saw; ``memory``: Ray actors' RSS). Returns the Ray cluster the job ran on
    (:func:`.ray_engine.run_ray`), None for the local engine."""
    if engine == "local":
        for group in grouped(spec, pending.chunks(read_stats)):
            for number, table in encode_scanned(loaded, spec, group):
                written(number, table)
        return None
    return ray_engine.run_ray(
        spec, pending, written, read_stats, address=address, actors=actors, threads=threads, memory=memory
    )
