"""The Ray engine: one Ray Data stream, reader -> ``map_batches`` on an actor pool -> the driver.

One dataset for the whole job: a single read task (:class:`CorpusSource`, on the driver's node,
where the corpus is) reads the corpus and yields the pending chunks as it goes, a block of
consecutive chunks at a time, sized by the matches a raw regex pass counts in them
(:func:`read_blocks`); ``map_batches`` hands each block to a fixed pool of ``actors`` actors (:class:`ChunkEncoder`),
each of which loads the model ONCE for the job (at the job's precision, ``torch`` threads set
explicitly to its CPU share, so actors never oversubscribe a node) and runs the local engine's
functions (:func:`.chunks.scan_chunk`, :func:`.chunks.encode_scanned` on the chunks of a
block): it finds the targets, splits the paragraphs that hold one and encodes them, returning
each chunk's rows as an Arrow IPC buffer with the actor's memory (peak and current RSS). Ray
Data's streaming executor bounds what is in flight between the reader, the actors and the
driver (backpressure), so memory does not grow with the corpus. The driver writes the shards,
so resuming works exactly as with the local engine; the read task's last row carries what the
reader saw (documents, lines skipped), merged into the driver's counts. Before the pool starts,
the driver reads the first blocks itself (:func:`blocks_ahead`): no actor is started for a block
that is not there, and a reader's error there needs no Ray job.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace

import pyarrow as pa

from contextlens.analyses.corpus.chunks import JobSpec, encode_scanned, scan_chunk
from contextlens.analyses.corpus.ray_placement import actor_placement, check_gpus, check_threads
from contextlens.analyses.corpus.readers import ReadStats
from contextlens.analyses.corpus.stream import PendingChunks, merge_read_stats
from contextlens.analyses.corpus.targets import Matcher
from contextlens.core.devices import is_cuda
from contextlens.core.numerals import is_digits
from contextlens.core.process_memory import rss_bytes
from contextlens.errors import ContextlensError, InputError

# A block of the stream = the chunks an actor encodes in ONE extraction call (their occurrences
# sorted into batches together, as the local engine groups chunks). Its size is a trade: a call
# of few occurrences pays a part-padded last batch (Lee, 312 occurrences, 2 threads, quiet
# machine: one call 2.7-3.0 s, blocks of 8 chunks 3.8-3.9 s, blocks of 2 chunks 5.6-7.9 s),
# and a few big blocks leave one actor idle at the end of a job (WordNet's examples with 20
# words: 52 chunks in 7 blocks of 8, 4 for one actor, 3 for the other). So the read task counts
# the raw matches (one regex pass, no splitting) and closes a block at BLOCK_OCCURRENCES
# matches (8 batches of 32) or at BLOCK_CHUNKS chunks (rare targets: 64 x 32 kB of text).
BLOCK_OCCURRENCES = 256
BLOCK_CHUNKS = 64
# the driver reads at most this many blocks' most chunks before the pool starts (blocks_ahead):
# 128 chunks, 4 MB of text at the default chunk size
AHEAD_BLOCKS = 2
END = -1  # the chunk number of the read task's last row: what the reader saw, as JSON
FAILED = -2  # the chunk number of an actor's answer that carries its contextlens error (pickled)
# (actor pid, peak RSS, RSS at its last chunk (bytes), the actor's start and model loaded (epoch s),
# the id of the Ray node it runs on)
Memory = Callable[[int, int, int, float, float, str], None]


class CorpusSource:
    """The job's pending chunks as a Ray Data source: ONE read task, on the driver's node (the
    corpus is read where the driver reads it), streaming blocks of chunks (:func:`read_blocks`;
    the block sizes are the driver's, read when the source is made)."""

    def __init__(self, pending: PendingChunks, matcher: Matcher):
        # a Ray worker does not work in the driver's folder: a relative path (`news/`) is the driver's
        local = os.path.exists(pending.source)
        self.pending = replace(pending, source=os.path.abspath(pending.source)) if local else pending
        self.matcher = matcher
        self.sizes = (BLOCK_OCCURRENCES, BLOCK_CHUNKS)

    def datasource(self):
        from ray.data.block import BlockMetadata
        from ray.data.datasource import Datasource, ReadTask

        pending, matcher, (occurrences, most) = self.pending, self.matcher, self.sizes

        class _Source(Datasource):
            supports_distributed_reads = False  # Ray: "only launch read tasks on the driver's node"

            def estimate_inmemory_data_size(self):
                return None

            def get_name(self):
                return "contextlens_corpus"

            def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
                meta = BlockMetadata(num_rows=None, size_bytes=None, exec_stats=None, input_files=None)
                return [ReadTask(lambda: read_blocks(pending, matcher, occurrences, most), meta)]

        return _Source()


def read_blocks(
    pending: PendingChunks, matcher: Matcher, occurrences: int | None = None, most: int | None = None
) -> Iterator[pa.Table]:
    """The read task: one row per block of consecutive pending chunks (their numbers, their
    documents as JSON), closed at ``occurrences`` raw matches or ``most`` chunks (default:
    :data:`BLOCK_OCCURRENCES`, :data:`BLOCK_CHUNKS`), then one row with the reader's counts."""
    occurrences = BLOCK_OCCURRENCES if occurrences is None else occurrences
    most = BLOCK_CHUNKS if most is None else most
    stats = ReadStats()
    pattern = matcher.pattern
    numbers: list[int] = []
    docs: list[str] = []
    found = 0
    for number, chunk in pending.chunks(stats):
        numbers.append(number)
        docs.append(json.dumps([[d, list(p)] for d, p in chunk]))
        found += sum(len(pattern.findall(piece)) for _, pieces in chunk for piece in pieces)
        if found >= occurrences or len(numbers) >= most:
            yield _block(numbers, docs)
            numbers, docs, found = [], [], 0
    if numbers:
        yield _block(numbers, docs)
    yield _block([END], [json.dumps(asdict(stats))])


def _block(numbers: list[int], docs: list[str]) -> pa.Table:
    return pa.table(
        {"chunks": pa.array([numbers], pa.list_(pa.int64())), "docs": pa.array([docs], pa.list_(pa.string()))}
    )


class ChunkEncoder:
    """A Ray Data actor: one model per actor, loaded once and reused for every chunk of the job."""

    def __init__(self, spec: JobSpec, threads: int):
        self.born = time.time()  # the actor's start-up, reported with each block (what a job pays first)
        import ray
        import torch

        from contextlens.core.contextual_models import load_contextual

        torch.set_num_threads(threads)
        self.spec = spec
        self.failed: ContextlensError | None = None
        try:  # the driver did not load it (torch fp32, or any GPU job: extract.ActorsModel), so a bad model shows here
            # on spec.device: cpu, or cuda:0, the one GPU Ray gave this actor (its CUDA_VISIBLE_DEVICES)
            self.model = load_contextual(spec.model, spec.precision, spec.runtime, spec.device)
        except ContextlensError as exc:  # reported with the first block (an actor that dies in its
            self.failed = exc  # constructor is retried by Ray, its error printed as tracebacks)
        self.ready = time.time()
        self.node = ray.get_runtime_context().get_node_id()

    def __call__(self, batch: dict) -> pa.Table:
        if self.failed is not None:
            return self._failure(self.failed)
        try:
            return self._encoded(batch)
        except ContextlensError as exc:
            return self._failure(exc)

    def _failure(self, exc: ContextlensError) -> pa.Table:
        """The error as a row the driver raises: Ray Data keeps only the text of an error a UDF raises."""
        return self._row([FAILED], [pickle.dumps(exc)])

    def _encoded(self, batch: dict) -> pa.Table:
        numbers: list[int] = []
        payloads: list[bytes] = []
        scanned = []
        pairs = [
            pair
            for chunks, docs in zip(batch["chunks"], batch["docs"], strict=True)
            for pair in zip(chunks, docs, strict=True)
        ]
        for number, docs in pairs:
            if int(number) == END:  # the reader's counts, passed through
                numbers.append(END)
                payloads.append(str(docs).encode())
                continue
            scanned.append(scan_chunk(self.spec, int(number), [(d, tuple(p)) for d, p in json.loads(docs)]))
        for number, table in encode_scanned(self.model, self.spec, scanned):  # one forward call per block
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            numbers.append(number)
            payloads.append(sink.getvalue().to_pybytes())
        return self._row(numbers, payloads)

    def _row(self, numbers: list[int], payloads: list[bytes]) -> pa.Table:
        """A block's answer as ONE row (its chunks' numbers and rows as lists), so one block out:
        a task that yields a block per chunk holds its actor ~60 ms a block before the next
        task starts (Ray Data's streamed task outputs: 0.43 s between the 1 s calls of 7 chunks,
        6 ms as one row), and an actor that waits is a share of the job with no forward."""
        peak, now = rss_bytes()
        return pa.table(
            {
                "chunks": pa.array([numbers], pa.list_(pa.int64())),
                "rows": pa.array([payloads], pa.list_(pa.binary())),
                "pid": [os.getpid()],
                "peak": [peak],
                "rss": [now],
                "born": [self.born],
                "ready": [self.ready],
                "node": [self.node],
            }
        )


def check_address(address: str) -> None:
    """An address that does not answer is one line, not a minute of retries."""
    if address == "auto":
        return
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not is_digits(port):
        raise InputError(f"`address` {address!r}: give host:port, ray://host:port or auto")
    try:
        with socket.create_connection((host, int(port)), timeout=3):
            pass
    except OSError as exc:
        raise InputError(
            f"Ray cluster at {address} does not answer ({exc.strerror or exc}); start it with "
            "`ray start --head` there, or drop `address` for a local Ray"
        ) from None


# A local Ray for one job: no dashboard, no metrics agent's exports, no usage report; and patience
# for a loaded machine. Ray waits a hard-coded 30 s for a raylet to register (ray._private.node), a
# deadline missed 3 times at load 5.6-10.5; each miss is tried again (the half-started processes
# stopped first) until LOCAL_START_SECONDS have gone, and health checks give a slow node minutes.
LOCAL_START_SECONDS = 240
LOCAL_START_TRIES = 4
LOCAL_RAY_ENV = {
    "RAY_enable_metrics_collection": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_health_check_timeout_ms": "60000",
    "RAY_health_check_failure_threshold": "20",
}
# While a job runs, in the driver: Ray Data records no usage of it. Its usage collection starts a
# detached actor per cluster (one more process importing ray.data)
# and a thread in the driver that polls Prometheus every 10 s, for a report that the nodes
# contextlens starts never send (RAY_USAGE_STATS_ENABLED=0 above and in scripts/ray-cluster.sh).
JOB_RAY_ENV = {"RAY_DATA_USAGE_DISABLED": "1"}
MISSED_START = "timed out during startup"
AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"
AUTH_ENABLED_NOTE = "Token authentication is enabled"


class _DropAuthEnabledNote(logging.Filter):
    """Ray's note that the node it starts is protected by a token (it finds one in ~/.ray) is not a
    problem and would be a second line above a job's own; its warning that a node is *not* protected
    is kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(AUTH_ENABLED_NOTE)


logging.getLogger(AUTH_LOGGER).addFilter(_DropAuthEnabledNote())


class RayStartError(ContextlensError):
    """A local Ray did not start within its deadline (one line: what Ray said, how long was tried)."""


def start_ray(address: str | None, cpus: int | None = None):
    """Join the Ray cluster at ``address``, or start a local one with what a job needs; an already
    connected process is reused."""
    try:
        import ray
    except ImportError:
        raise InputError("`engine` ray needs Ray: pip install 'contextlens[corpus-ray]'") from None
    if address is not None:
        check_address(address)  # also when this process is already connected: the address asked is refused
    if ray.is_initialized():
        return _quiet(ray)
    kwargs = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address is not None:
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(f"cannot join the Ray cluster at {address}: {str(exc).splitlines()[0]}") from None
    else:
        start_local_ray(ray, cpus or os.cpu_count() or 1, kwargs)
    return _quiet(ray)


def start_local_ray(ray, cpus: int, kwargs: dict, deadline: float = LOCAL_START_SECONDS) -> None:
    """``ray.init`` of a local node, tried again after a missed raylet deadline until ``deadline``
    seconds have gone (at most :data:`LOCAL_START_TRIES` tries); any other failure, or the last,
    is one :class:`RayStartError` line."""
    started, tries = time.monotonic(), 0
    with _environment(LOCAL_RAY_ENV):
        while True:
            tries += 1
            try:
                ray.init(address="local", num_cpus=cpus, **kwargs)  # a new one: never another user's running Ray
                return
            except Exception as exc:  # noqa: BLE001 - Ray raises bare Exception for a node that did not start
                ray.shutdown()  # stops what this try started
                spent = time.monotonic() - started
                if MISSED_START not in str(exc) or tries >= LOCAL_START_TRIES or spent >= deadline:
                    raise RayStartError(local_start_failure(exc, tries, spent)) from None


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in os.environ while Ray starts its processes (they inherit it), then as before; a
    variable the user set keeps the user's value."""
    unset = [k for k in values if k not in os.environ]
    os.environ.update({k: values[k] for k in unset})
    try:
        yield
    finally:
        for k in unset:
            os.environ.pop(k, None)


def local_start_failure(exc: BaseException, tries: int = 1, seconds: float | None = None) -> str:
    """One line for a local Ray that did not start (on a loaded machine: "node timed out during startup")."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    spent = f" in {tries} tries over {seconds:.0f} s" if seconds is not None and tries > 1 else ""
    return (
        f"a local Ray did not start{spent} ({first}); on a busy machine try again when it is quieter, start one "
        "apart (`ray start --head --num-cpus N`) and pass `address` auto, or use `engine` local"
    )


def _quiet(ray):
    """No progress bars nor per-dataset log lines of Ray Data: the face draws its own progress."""
    logging.getLogger("ray.data").setLevel(logging.ERROR)  # before: turning the bars off logs a warning
    ray.data.DataContext.get_current().enable_progress_bars = False
    return ray


def actor_threads(actors: int, threads: int | None, address: str | None = None, cpus: int | None = None) -> int:
    """Start (or join) Ray and settle each actor's threads: ``threads``, or the cluster's CPUs
    shared among the actors. Called before anything is written, so a Ray address that does not
    answer or too many threads leaves no folder behind."""
    if actors < 1:
        raise InputError(f"`actors` must be at least 1, got {actors}")
    ray = start_ray(address, cpus)
    total = int(ray.cluster_resources().get("CPU", 1))
    live = cluster_nodes(ray)
    nodes = [int(n["cpus"]) for n in live] or [total]
    # an actor runs on one node: more threads than the largest node's CPUs could never be scheduled
    # (a job on two 1-CPU nodes waited forever for a 2-CPU actor)
    threads = threads or max(1, min(total // actors, max(nodes) or total))
    check_threads(actors, threads, nodes)
    return threads


def cluster_nodes(ray) -> list[dict[str, object]]:
    """The cluster's live nodes as the manifest records them: id, address, CPUs, GPUs."""
    return [
        {
            "node_id": n["NodeID"],
            "address": n.get("NodeManagerAddress", ""),
            "cpus": int(n["Resources"].get("CPU", 0)),
            "gpus": int(n["Resources"].get("GPU", 0)),
        }
        for n in ray.nodes()
        if n.get("Alive")
    ]


def run_ray(
    spec: JobSpec,
    pending: PendingChunks,
    written,
    read_stats: ReadStats,
    address: str | None = None,
    actors: int = 1,
    threads: int | None = None,
    memory: Memory | None = None,
    cpus: int | None = None,
) -> dict[str, object]:
    """Encode the ``pending`` chunks on ``actors`` Ray actors of ``threads`` threads each (default:
    the cluster's CPUs shared among the actors), calling ``written`` with each chunk's rows; what
    the reader saw is added to ``read_stats``. Returns the cluster as the manifest records it
    (:func:`cluster_nodes`, what each actor asked for)."""
    threads = actor_threads(actors, threads, address, cpus)
    ray = start_ray(address, cpus)
    nodes = cluster_nodes(ray)
    if is_cuda(spec.device):
        check_gpus(actors, [int(n["gpus"]) for n in nodes])
    placement = actor_placement(threads, spec.device)
    source = CorpusSource(pending, spec.matcher)
    pool, seen = blocks_ahead(source, actors)
    if pool == 0:  # nothing pending (every shard written): no Ray job, no actor
        merge_read_stats(read_stats, seen or ReadStats())
    else:
        with _environment(JOB_RAY_ENV):  # read by Ray Data when the stream starts and ends
            for row in _rows(_dataset(ray, spec, source, pool, threads, placement)):
                _answer(row, written, read_stats, memory)
    return {
        "address": address or "local",
        "nodes": nodes,
        "actors": actors,
        "actor_resources": placement,
    }


def blocks_ahead(source: CorpusSource, actors: int) -> tuple[int, ReadStats | None]:
    """The read task's blocks, read here in the driver before the pool starts and counted up to
    ``actors``, and what the reader saw when it ended first: a job of fewer blocks starts only as
    many actors (one with no block would import torch and load the model for nothing), and a
    reader's error in them (``on_error`` stop) is raised here, before any Ray job. It stops at
    :data:`AHEAD_BLOCKS` blocks' most chunks (all ``actors`` then): a big pool's start does not
    wait for the driver to read a large part of the corpus."""
    blocks = chunks = 0
    with contextlib.closing(read_blocks(source.pending, source.matcher, *source.sizes)) as rows:
        for row in rows:
            numbers = row.column("chunks")[0].as_py()
            if numbers == [END]:
                return blocks, ReadStats(**json.loads(row.column("docs")[0].as_py()[0]))
            blocks, chunks = blocks + 1, chunks + len(numbers)
            if blocks >= actors or chunks >= AHEAD_BLOCKS * source.sizes[1]:
                return actors, None
    return actors, None  # (read_blocks ends with its END row)


def _rows(ds) -> Iterator[dict]:
    """The stream's rows; a contextlens error that a Ray task raised (the reader's) as itself."""
    try:
        yield from ds.iter_rows()
    except Exception as exc:
        cause = _our_error(exc)
        if cause is None:
            raise
        raise cause from None


def _dataset(ray, spec: JobSpec, source: CorpusSource, actors: int, threads: int, placement: dict):
    """The job's one stream: the corpus source -> ``map_batches`` on a fixed pool of ``actors``."""
    context = ray.data.DataContext.get_current()
    saved = context.target_max_block_size
    # Ray Data coalesces a task's output into blocks of up to this many bytes (128 MiB by
    # default): the whole corpus of a read task would reach the actors as one block, read to
    # the end first and then encoded by one actor. One byte: each chunk is its own block, handed
    # on as soon as it is read (the dataset keeps the setting it was created with).
    context.target_max_block_size = 1
    try:
        return ray.data.read_datasource(
            source.datasource(),
            override_num_blocks=1,
            num_cpus=0,  # reading takes no actor's CPU
        ).map_batches(
            ChunkEncoder,
            fn_constructor_kwargs={"spec": spec, "threads": threads},
            batch_size=1,  # one block (read_blocks) an extraction call
            compute=ray.data.ActorPoolStrategy(size=actors),  # fixed: each actor loads the model once
            batch_format="numpy",
            **placement,
        )
    finally:
        context.target_max_block_size = saved


def _answer(row: dict, written, read_stats: ReadStats, memory: Memory | None) -> None:
    """One actor's answer to a block: its chunks' rows written, the reader's counts merged."""
    if memory is not None and row["chunks"][0] >= 0:  # an answer of chunks (not END, not FAILED)
        memory(
            int(row["pid"]), int(row["peak"]), int(row["rss"]), float(row["born"]), float(row["ready"]),
            str(row["node"]),
        )  # fmt: skip
    for number, payload in zip(row["chunks"], row["rows"], strict=True):
        if number == END:
            merge_read_stats(read_stats, ReadStats(**json.loads(payload)))
        elif number == FAILED:
            raise pickle.loads(payload)
        else:
            written(int(number), pa.ipc.open_stream(pa.py_buffer(payload)).read_all())


def _our_error(exc: BaseException) -> ContextlensError | None:
    """The contextlens error a Ray task raised (a non-UTF-8 line with ``on_error`` stop), found in
    the chain Ray wraps it in, so the face reports its one line."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ContextlensError) and type(e).__module__.startswith("contextlens."):
            return e  # (Ray's own wrapper also subclasses it, with a traceback for a message: skipped)
        todo += [e.__cause__, e.__context__, getattr(e, "cause", None)]
    return None
