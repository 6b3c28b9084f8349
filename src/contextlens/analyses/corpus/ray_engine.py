"""The Ray engine: Ray Data ``from_items`` -> ``map_batches`` on an actor pool -> the same rows.

The driver only reads the corpus (the readers are this package's own) and hands Ray windows of
pending chunks of whole documents; each actor loads the model once (at the job's precision,
``torch`` threads set explicitly to its CPU share, so actors never oversubscribe a node) and
runs the local engine's functions (:func:`.chunks.scan_chunk`, :func:`.chunks.encode_scanned`,
on up to ``BATCH_CHUNKS`` chunks a call): it finds the targets, splits the paragraphs that hold
one and encodes them, returning each chunk's rows as an Arrow IPC
buffer with the actor's memory (peak and current RSS). The driver writes the shards, so
resuming works exactly as with the local engine.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import resource
import socket
from collections.abc import Callable, Iterator

import pyarrow as pa

from contextlens.analyses.corpus.chunks import JobSpec, encode_scanned, scan_chunk
from contextlens.analyses.corpus.targets import Document
from contextlens.errors import InputError

# Chunks handed to Ray at a time, per actor: bounds the driver's memory (a chunk is ~32 kB of
# text); the actor pool (and its model load) is started once per window.
WINDOW_CHUNKS_PER_ACTOR = 64
# Chunks an actor encodes in one extraction call (their occurrences sorted into batches together,
# as the local engine groups chunks): few occurrences a chunk would otherwise be a padded batch each.
BATCH_CHUNKS = 8
Memory = Callable[[int, int, int], None]  # (actor pid, peak RSS, RSS at its last chunk), bytes


def _rss_bytes() -> tuple[int, int]:
    """(peak, current) resident memory of this process, bytes (Linux: ru_maxrss and /proc;
    ru_maxrss lags the current RSS by a few pages, hence the max)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    try:
        with open("/proc/self/statm") as fh:
            now = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        now = peak
    return max(peak, now), now


class ChunkEncoder:
    """A Ray Data actor: one model per actor, reused for every chunk it is given."""

    def __init__(self, spec: JobSpec, threads: int):
        import torch

        from contextlens.core.contextual_models import load_contextual

        torch.set_num_threads(threads)
        self.spec = spec
        self.model = load_contextual(spec.model, spec.precision, spec.runtime)

    def __call__(self, batch: dict) -> dict:
        chunks, payloads = [], []
        scanned = [
            scan_chunk(self.spec, int(number), [(d, tuple(p)) for d, p in json.loads(docs)])
            for number, docs in zip(batch["chunk"], batch["docs"], strict=True)
        ]
        for number, table in encode_scanned(self.model, self.spec, scanned):  # one forward call per batch
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            chunks.append(number)
            payloads.append(sink.getvalue().to_pybytes())
        peak, now = _rss_bytes()
        n = len(chunks)
        return {"chunk": chunks, "rows": payloads, "pid": [os.getpid()] * n, "peak": [peak] * n, "rss": [now] * n}


def check_address(address: str) -> None:
    """An address that does not answer is one line, not a minute of retries."""
    if address == "auto":
        return
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"`address` {address!r}: give host:port, ray://host:port or auto")
    try:
        with socket.create_connection((host, int(port)), timeout=3):
            pass
    except OSError as exc:
        raise InputError(
            f"Ray cluster at {address} does not answer ({exc.strerror or exc}); start it with "
            "`ray start --head` there, or drop `address` for a local Ray"
        ) from None


def start_ray(address: str | None, cpus: int | None = None):
    try:
        import ray
    except ImportError:
        raise InputError("`engine` ray needs Ray: pip install 'contextlens[corpus-ray]'") from None
    if ray.is_initialized():
        return ray
    kwargs = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address is not None:
        check_address(address)
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(f"cannot join the Ray cluster at {address}: {str(exc).splitlines()[0]}") from None
    else:
        ray.init(num_cpus=cpus or os.cpu_count() or 1, **kwargs)
    ray.data.DataContext.get_current().enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    return ray


def actor_threads(actors: int, threads: int | None, address: str | None = None, cpus: int | None = None) -> int:
    """Start (or join) Ray and settle each actor's threads: ``threads``, or the cluster's CPUs
    shared among the actors. Called before anything is written, so a Ray address that does not
    answer or too many threads leaves no folder behind."""
    if actors < 1:
        raise InputError(f"`actors` must be at least 1, got {actors}")
    ray = start_ray(address, cpus)
    total = int(ray.cluster_resources().get("CPU", 1))
    threads = threads or max(1, total // actors)
    check_threads(actors, threads, total)
    return threads


def check_threads(actors: int, threads: int, total: int) -> None:
    if threads * actors > total:
        raise InputError(
            f"{actors} actor(s) x {threads} thread(s) need {threads * actors} CPUs; the Ray cluster has {total}: "
            "lower `actors` or `threads`"
        )


def run_ray(
    spec: JobSpec,
    chunks: Iterator[tuple[int, list[Document]]],
    written,
    address: str | None = None,
    actors: int = 1,
    threads: int | None = None,
    memory: Memory | None = None,
    cpus: int | None = None,
) -> None:
    """Encode ``chunks`` on ``actors`` Ray actors of ``threads`` threads each (default: the
    cluster's CPUs shared among the actors), calling ``written`` with each chunk's rows."""
    threads = actor_threads(actors, threads, address, cpus)
    ray = start_ray(address, cpus)
    window = WINDOW_CHUNKS_PER_ACTOR * actors
    while True:
        batch = list(itertools.islice(chunks, window))
        if not batch:
            return
        items = [{"chunk": n, "docs": json.dumps([[d, list(p)] for d, p in docs])} for n, docs in batch]
        ds = ray.data.from_items(items, override_num_blocks=min(len(items), 4 * actors)).map_batches(
            ChunkEncoder,
            fn_constructor_kwargs={"spec": spec, "threads": threads},
            batch_size=BATCH_CHUNKS,
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=threads,
            batch_format="numpy",
        )
        for row in ds.iter_rows():
            table = pa.ipc.open_stream(pa.py_buffer(row["rows"])).read_all()
            if memory is not None:
                memory(int(row["pid"]), int(row["peak"]), int(row["rss"]))
            written(int(row["chunk"]), table)
