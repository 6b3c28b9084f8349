"""pgvector sizes on the real server, predicted vs measured, beside FAISS for the same vectors.

For each dimension and stored type (vector = float32, halfvec = float16, bit = binary_quantize with
re-ranking) and each pgvector index (HNSW m=16 ef_construction=64; IVFFlat lists=100, pgvector's
defaults): N random unit vectors are loaded into the embedded PostgreSQL 18 + pgvector 0.8.5 with
COPY and indexed; the script prints the page formula of `contextlens capacity --engine pgvector`
beside `pg_relation_size(index)`, the table formula beside `pg_table_size` (heap + TOAST), the
bytes per vector beside FAISS's serialized HNSWFlat / IndexHNSWSQ(fp16) / IndexBinaryHNSW for the
same vectors and m, the build time, and recall@10 of 200 queries against FAISS flat (exact).
With --memory, also the HNSW build memory formula beside the NOTICE point of a build given a
quarter of it (that build spills to disk, so it is slow), and the IVFFlat build memory formula beside
pgvector's own threshold (its "memory required is X MB" error 1 kB under the prediction, a built
index at it).

With --server, instead: what keeping the embedded server up between commands saves. It times the
server's use cycle in-process (enter, one query, leave) with the server stopped by each last user
(CONTEXTLENS_PG_IDLE_SECONDS=0, the behaviour before) and kept up (the default), then the same for
pgvector searches in-process (the model loaded once), then the same for whole `contextlens index
search` commands on a small minilm index:

    python benchmarks/pgvector.py --server --runs 5

    python benchmarks/pgvector.py                      # 10,000 vectors, d = 384, 768, 1024, 1536
    python benchmarks/pgvector.py --count 20000 --dims 384 768 --memory
    python benchmarks/pgvector.py --vectors wordnet      # real minilm sentence vectors (encoded once, cached)
    python benchmarks/pgvector.py --json

Random vectors are the hardest case for approximate search (no structure), so recall here is a
lower bound; tests/test_pgvector.py measures it on real minilm sentence vectors.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time

import faiss
import numpy as np

from contextlens.analyses.search import pg_server
from contextlens.analyses.search.index_config import normalize
from contextlens.analyses.search.pg_capacity import pg_estimate, pg_measure, replay_index
from contextlens.analyses.search.pg_index import PgIndexConfig, create_table, recall_at_k, search_table

NAMES = {"float32": "vector", "float16": "halfvec", "binary": "bit"}


def faiss_hnsw_bytes(x: np.ndarray, dtype: str, m: int) -> int:
    d = x.shape[1]
    if dtype == "binary":
        index = faiss.IndexBinaryHNSW(d, m)
        index.add(np.packbits(x > 0, axis=1))
        return len(faiss.serialize_index_binary(index))
    if dtype == "float16":
        index = faiss.IndexHNSWSQ(d, faiss.ScalarQuantizer.QT_fp16, m, faiss.METRIC_INNER_PRODUCT)
        index.train(x)
    else:
        index = faiss.IndexHNSWFlat(d, m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 64
    index.add(x)
    return len(faiss.serialize_index(index))


def random_sets(count: int, dims: list[int], queries: int) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for d in dims:
        rng = np.random.default_rng(d)
        x = rng.standard_normal((count, d), dtype=np.float32)
        out.append((x, rng.standard_normal((queries, d), dtype=np.float32)))
    return out


def run(
    sets: list[tuple[np.ndarray, np.ndarray]], memory: bool, kinds: tuple[str, ...] = ("hnsw", "ivfflat")
) -> list[dict]:
    rows = []
    with pg_server.embedded_server() as conninfo, pg_server.connect(conninfo) as conn:
        for corpus, query_vectors in sets:
            x, q = normalize(corpus), normalize(query_vectors)
            count, d = x.shape
            queries = len(q)
            flat = faiss.IndexFlatIP(d)
            flat.add(x)
            _, exact = flat.search(q, 10)
            for kind in kinds:
                for dtype in ("float32", "float16", "binary"):
                    config = PgIndexConfig(kind, {}, dtype).resolved(d)
                    predicted = pg_estimate(config, count, d)
                    table = f"bench_{kind}_{dtype}_{d}"
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
                    report = create_table(conn, table, x, config, maintenance_work_mem="2GB")
                    start = time.perf_counter()
                    _, ids = search_table(conn, table, config, q, 10)
                    query_s = (time.perf_counter() - start) / queries
                    # the page rule on what this build drew (HNSW levels, IVFFlat list lengths), read from its pages
                    replay = replay_index(conn, f"{table}_ann", d, config)
                    conn.execute(f"DROP TABLE {table}")
                    row = {
                        "dim": d, "type": NAMES[dtype], "index": kind, "count": count,
                        "pages_predicted": predicted.index_pages, "pages_measured": report.index_bytes // 8192,
                        "exact_formula": predicted.exact, "pages_range": predicted.index_pages_range,
                        "pages_replayed": replay.get("pages"),
                        "same_layout": replay.get("same_blocks", replay.get("same_lists")),
                        "levels": replay.get("levels"), "index_bytes": report.index_bytes,
                        "index_bytes_per_vector": report.index_bytes / count,
                        "table_predicted": predicted.table_bytes, "table_measured": report.table_bytes,
                        "total_measured": report.total_bytes, "build_s": report.seconds, "query_ms": 1e3 * query_s,
                        "recall_at_10_vs_faiss_flat": recall_at_k(ids, exact), "notices": report.notices,
                    }  # fmt: skip
                    if kind == "hnsw":
                        row["faiss_hnsw_bytes_per_vector"] = faiss_hnsw_bytes(x, dtype, 16) / count
                        row["memory_predicted"] = predicted.build_memory_bytes
                        if memory:
                            probe = pg_measure(config, count, d, max_measure=count)  # the benchmark sets its own counts
                            row["memory_measured"] = probe.measured.get("build_memory_bytes")
                            row["memory_probe_notice"] = probe.measured.get("memory_probe_notices")
                            # the same build with the probe's quarter of the memory, to its end (the probe
                            # stops at the NOTICE): 3/4 of the graph built on disk
                            budget = f"{probe.measured['memory_probe_kb']}kB"
                            row["spilled_build_s"] = create_table(conn, table, x, config, budget).seconds
                            row["memory_probe_s"] = probe.measured.get("memory_probe_seconds")
                            conn.execute(f"DROP TABLE {table}")
                            row["in_memory_build_s"] = probe.measured.get("build_seconds")
                    elif memory:  # ivfflat: pgvector's own threshold, on the real heap's page count
                        probe = pg_measure(config, count, d, max_measure=count)  # the benchmark sets its own counts
                        m = probe.measured
                        row["memory_predicted"] = m["build_memory_predicted_on_heap_pages"]["bytes"]
                        row["memory_estimate"] = probe.build_memory_bytes  # from the predicted heap
                        row["ivfflat_below"], row["ivfflat_above"] = m["build_below"], m["build_above"]
                        row["ivfflat_probe_kb"] = m["memory_probe_kb"]
                    rows.append(row)
                    print(_line(row), file=sys.stderr, flush=True)
    return rows


def _line(r: dict) -> str:
    faiss_b = f"{r['faiss_hnsw_bytes_per_vector']:>7,.0f}" if "faiss_hnsw_bytes_per_vector" in r else "      -"
    predicted, measured = r["pages_predicted"], r["pages_measured"]
    pages = "exact" if predicted == measured else f"{predicted / measured - 1:+.1%}"
    if r.get("pages_range") and not r["exact_formula"]:  # bit: a distribution over the random levels
        low, high = r["pages_range"]
        pages = f"{'in' if low <= measured <= high else 'OUT of'} {low:,}-{high:,} (95%)"
    if r.get("pages_replayed") is not None:
        drawn = "levels" if r["index"] == "hnsw" else "lists"
        same = "same layout" if r["same_layout"] else "OTHER layout"
        pages += f", replayed on its {drawn} {r['pages_replayed']:,} ({same})"
    mem = ""
    if r.get("memory_predicted"):
        mem = f"  mem {r['memory_predicted'] / 2**20:7.1f} MiB"
        if r.get("memory_measured"):
            got = r["memory_measured"]
            mem += f" vs {got / 2**20:7.1f} MiB ({r['memory_predicted'] / got - 1:+.1%})"
            mem += f", build {r['in_memory_build_s']:.1f} s in memory vs {r['spilled_build_s']:.1f} s spilled"
            mem += f" (the probe, stopped at the NOTICE: {r['memory_probe_s']:.1f} s)"
        if "ivfflat_below" in r:
            below, above = r["ivfflat_probe_kb"]
            mem += (f" (estimate {r['memory_estimate'] / 2**20:.1f} MiB); {below:,} kB: {r['ivfflat_below']};"
                    f" {above:,} kB: {r['ivfflat_above']}")  # fmt: skip
    return (
        f"d={r['dim']:>4} {r['type']:<7} {r['index']:<7} pages {predicted:>6,} vs {measured:>6,} {pages:>6}"
        f"  B/vec {r['index_bytes_per_vector']:>7,.0f} (FAISS {faiss_b})"
        f"  table {r['table_predicted'] / 2**20:6.1f} vs {r['table_measured'] / 2**20:6.1f} MiB"
        f"  build {r['build_s']:6.2f} s  query {r['query_ms']:5.2f} ms"
        f"  recall@10 {r['recall_at_10_vs_faiss_flat']:.3f}{mem}"
    )


def server_cycles(runs: int) -> dict[str, list[float]]:
    """Seconds per use of the embedded server (a private cluster in a temporary folder): stopped by
    each last user (idle 0) vs kept up between uses."""
    import shutil
    import tempfile

    root = tempfile.mkdtemp(prefix="cl-pgbench-")
    out: dict[str, list[float]] = {}
    try:
        with pg_server.embedded_server(root, idle=0):  # initdb once, outside the timings
            pass
        for label, idle in (("stopped after each use (before)", 0.0), ("kept up between uses (now)", 600.0)):
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                with pg_server.embedded_server(root, idle=idle) as conninfo, pg_server.connect(conninfo) as conn:
                    conn.execute("SELECT 1").fetchone()
                times.append(time.perf_counter() - start)
            out[label] = times
        pg_server.stop_server(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def cli_searches(runs: int) -> dict[str, list[float]]:
    """Seconds per `contextlens index search` on a 20-document minilm pgvector index, with the server
    stopped after each command (idle 0) vs kept up; the model loads in every command alike."""
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="cl-pgbench-idx-"))
    docs = folder / "docs.txt"
    docs.write_text("".join(f"Document {i} is about topic number {i % 5}.\n" for i in range(20)))
    base = [sys.executable, "-m", "contextlens"]
    env = {**os.environ, "CONTEXTLENS_PG_IDLE_SECONDS": "0"}
    subprocess.run([*base, "index", "build", str(docs), "--out", str(folder / "idx"), "--model", "minilm",
                    "--engine", "pgvector", "--index", "hnsw"], check=True, env=env, capture_output=True)  # fmt: skip
    out: dict[str, list[float]] = {}
    for label, idle in (("stopped after each command (before)", "0"), ("kept up between commands (now)", "600")):
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            command = [*base, "index", "search", str(folder / "idx"), "topic three", "-k", "3", "--json"]
            subprocess.run(command, check=True, env={**env, "CONTEXTLENS_PG_IDLE_SECONDS": idle}, capture_output=True)
            times.append(time.perf_counter() - start)
        out[label] = times
    subprocess.run([*base, "index", "server", "stop"], env=env, capture_output=True)
    return out


def searches_in_process(runs: int) -> dict[str, list[float]]:
    """Seconds per pgvector search (`search_pg_index`: the approximate search and the exact scan its
    recall is measured against, each a use of the server) with minilm loaded once, the server stopped
    after each use (idle 0) vs kept up: the server's share of an `index search`, without the model load."""
    import os
    import tempfile
    from pathlib import Path

    from contextlens.analyses.search.encoders import TextEncoder
    from contextlens.analyses.search.index import Document
    from contextlens.analyses.search.pg_index import PgVectorIndex, search_pg_index
    from contextlens.core.contextual_models import load_contextual

    model = load_contextual("minilm")
    folder = Path(tempfile.mkdtemp(prefix="cl-pgbench-idx-")) / "idx"
    docs = [Document(str(i), f"Document {i} is about topic number {i % 5}.") for i in range(20)]
    previous = os.environ.get(pg_server.IDLE_ENV)
    out: dict[str, list[float]] = {}
    try:
        os.environ[pg_server.IDLE_ENV] = "0"
        PgVectorIndex.build(docs, TextEncoder(model, "sentence"), folder, PgIndexConfig("hnsw"))
        for label, idle in (("stopped after each use (before)", "0"), ("kept up between uses (now)", "600")):
            os.environ[pg_server.IDLE_ENV] = idle
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                search_pg_index(folder, "topic three", 3, model=model)
                times.append(time.perf_counter() - start)
            out[label] = times
        pg_server.stop_server()
    finally:
        if previous is None:
            os.environ.pop(pg_server.IDLE_ENV, None)
        else:
            os.environ[pg_server.IDLE_ENV] = previous
    return out


@contextlib.contextmanager
def private_cache():
    """A cache of its own for the --server timings: the real cache's models and data linked in, but a
    pgvector cluster nobody else uses (another user holding the shared one would keep it up in the
    'before' mode too, and the timings would mean nothing)."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from contextlens.core.resources import cache_dir

    real, private = cache_dir(), Path(tempfile.mkdtemp(prefix="cl-pgbench-cache-"))
    for entry in real.iterdir():
        if entry.name != "pgvector":
            (private / entry.name).symlink_to(entry)
    previous = os.environ.get("CONTEXTLENS_CACHE")
    os.environ["CONTEXTLENS_CACHE"] = str(private)
    try:
        yield private
    finally:
        pg_server.stop_server()
        if previous is None:
            os.environ.pop("CONTEXTLENS_CACHE", None)
        else:
            os.environ["CONTEXTLENS_CACHE"] = previous
        shutil.rmtree(private, ignore_errors=True)


def _print_times(title: str, results: dict[str, list[float]]) -> None:
    print(title, file=sys.stderr)
    for label, times in results.items():
        first, rest = times[0], sorted(times[1:]) or [times[0]]
        median = rest[len(rest) // 2]
        each = ", ".join(f"{t:.2f}" for t in times)
        print(f"  {label:<40} first {first:6.2f} s, then median {median:6.2f} s  ({each})", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 768, 1024, 1536])
    parser.add_argument("--memory", action="store_true", help="also measure the HNSW build memory (slow)")
    parser.add_argument(
        "--vectors",
        choices=["random", "wordnet"],
        default="random",
        help="wordnet: minilm sentence vectors of WordNet definitions (384-d; benchmarks/search.py)",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--indexes", nargs="+", choices=["hnsw", "ivfflat"], default=["hnsw", "ivfflat"])
    parser.add_argument(
        "--server", action="store_true", help="time the embedded server kept up between commands vs stopped after each"
    )
    parser.add_argument("--runs", type=int, default=5, help="--server: uses timed per mode")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.server:
        cycles = server_cycles(args.runs)
        with private_cache():
            in_process, searches = searches_in_process(args.runs), cli_searches(args.runs)
        _print_times("embedded server: enter, SELECT 1, leave (in-process)", cycles)
        _print_times("search_pg_index on a 20-document minilm pgvector index (in-process, model loaded)", in_process)
        _print_times("contextlens index search on a 20-document minilm pgvector index (whole command)", searches)
        if args.json:
            print(json.dumps({"server_cycle_s": cycles, "search_s": in_process, "cli_search_s": searches}, indent=2))
        return
    if args.vectors == "wordnet":
        from search import wordnet_vectors  # benchmarks/search.py, beside this script

        corpus, queries, what = wordnet_vectors(args.count, args.queries)
        sets = [(corpus, queries)]
    else:
        sets, what = random_sets(args.count, args.dims, args.queries), f"{args.count:,} random unit vectors"
    print(
        f"{what}; predicted (capacity --engine pgvector) vs measured (pg_relation_size, pg_table_size); "
        f"FAISS: serialized HNSW with the same m; recall@10 of {args.queries} queries vs FAISS flat",
        file=sys.stderr,
    )
    rows = run(sets, args.memory, tuple(args.indexes))
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
