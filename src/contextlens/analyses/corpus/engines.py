"""Where chunks are encoded: ``local`` (this process) or ``ray`` (Ray Data, an actor pool).

Both engines call :func:`.extract.encode_chunk` (split, find, encode) on the same chunks of
documents and hand back the same tables; the caller writes the shards, so resumability does
not depend on the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

from contextlens.analyses.corpus.extract import ExtractStats, JobSpec, encode_chunk
from contextlens.analyses.corpus.targets import Document

ENGINES = ("local", "ray")
Written = Callable[[int, pa.Table], None]


def prepare(engine: str, address: str | None, actors: int, threads: int | None) -> int | None:
    """Check the engine can run before the job writes anything; returns the threads to use
    (Ray: per actor, settled against the cluster's CPUs)."""
    if engine == "local":
        return threads
    from contextlens.analyses.corpus.ray_engine import actor_threads

    return actor_threads(actors, threads, address)


def run(
    engine: str,
    spec: JobSpec,
    chunks: Iterator[tuple[int, list[Document]]],
    written: Written,
    loaded=None,
    address: str | None = None,
    actors: int = 1,
    threads: int | None = None,
    stats: ExtractStats | None = None,
) -> None:
    if engine == "local":
        for number, chunk in chunks:
            written(number, encode_chunk(loaded, spec, chunk))
        return
    from contextlens.analyses.corpus.ray_engine import run_ray

    run_ray(spec, chunks, written, address=address, actors=actors, threads=threads, stats=stats)
