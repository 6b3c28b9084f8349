"""The Ray engine: Ray Data ``from_items`` -> ``map_batches`` on an actor pool -> the same rows.

The driver streams and splits the corpus (the readers are this package's own) and hands Ray
windows of pending chunks; each actor loads the model once (``torch`` threads set explicitly to
its CPU share, so actors never oversubscribe a node) and runs :func:`.extract.encode_chunk`,
the very function of the local engine, returning each chunk's rows as an Arrow IPC buffer. The
driver writes the shards, so resuming works exactly as with the local engine.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
from collections.abc import Iterator

import pyarrow as pa

from contextlens.analyses.corpus.extract import JobSpec, Sentence, encode_chunk
from contextlens.errors import InputError

WINDOW_CHUNKS_PER_ACTOR = 16  # chunks handed to Ray at a time, per actor (bounds driver memory)


class ChunkEncoder:
    """A Ray Data actor: one model per actor, reused for every chunk it is given."""

    def __init__(self, spec: JobSpec, threads: int):
        import torch

        from contextlens.core.contextual_models import load_contextual

        torch.set_num_threads(threads)
        self.spec = spec
        self.model = load_contextual(spec.model)

    def __call__(self, batch: dict) -> dict:
        chunks, payloads = [], []
        for number, docs, indices, sentences in zip(
            batch["chunk"], batch["doc_id"], batch["sentence_index"], batch["sentence"], strict=True
        ):
            rows: list[Sentence] = list(zip(list(docs), (int(i) for i in indices), list(sentences), strict=True))
            table = encode_chunk(self.model, self.spec, rows)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            chunks.append(int(number))
            payloads.append(sink.getvalue().to_pybytes())
        return {"chunk": chunks, "rows": payloads}


def check_address(address: str) -> None:
    """An address that does not answer is one line, not a minute of retries."""
    if address == "auto":
        return
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"--address {address!r}: give host:port, ray://host:port or auto")
    try:
        with socket.create_connection((host, int(port)), timeout=3):
            pass
    except OSError as exc:
        raise InputError(
            f"Ray cluster at {address} does not answer ({exc.strerror or exc}); start it with "
            "`ray start --head` there, or drop --address for a local Ray"
        ) from None


def start_ray(address: str | None, cpus: int | None = None):
    try:
        import ray
    except ImportError:
        raise InputError("--engine ray needs Ray: pip install 'contextlens[corpus-ray]'") from None
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


def run_ray(
    spec: JobSpec,
    chunks: Iterator[tuple[int, list[Sentence]]],
    written,
    address: str | None = None,
    actors: int = 1,
    cpus: int | None = None,
) -> None:
    if actors < 1:
        raise InputError(f"--actors must be at least 1, got {actors}")
    ray = start_ray(address, cpus)
    total = int(ray.cluster_resources().get("CPU", 1))
    threads = max(1, total // actors)
    window = WINDOW_CHUNKS_PER_ACTOR * actors
    while True:
        batch = list(itertools.islice(chunks, window))
        if not batch:
            return
        items = [
            {
                "chunk": n,
                "doc_id": [s[0] for s in rows],
                "sentence_index": [s[1] for s in rows],
                "sentence": [s[2] for s in rows],
            }
            for n, rows in batch
        ]
        ds = ray.data.from_items(items, override_num_blocks=min(len(items), 4 * actors)).map_batches(
            ChunkEncoder,
            fn_constructor_kwargs={"spec": spec, "threads": threads},
            batch_size=1,
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=threads,
            batch_format="numpy",
        )
        for row in ds.iter_rows():
            table = pa.ipc.open_stream(pa.py_buffer(row["rows"])).read_all()
            written(int(row["chunk"]), table)
