"""Corpus extraction throughput: the local engine vs Ray (1 and 2 actors), and memory at 10x size.

Each run is a fresh process whose peak RSS (/proc's VmHWM, ``core/process_memory.py``: a spawned
child's ``ru_maxrss`` starts at its parent's peak) is the driver's; each Ray actor reports its own
peak the same way with every block it answers.
The clock includes reading, locating, sentence splitting (of the paragraphs that hold a target
only, since issue 21), encoding and writing the shards (with Ray, locating and splitting run in
the actors), not the model load of the local engine (Ray's
actor start-up and model loads are inside the clock: that is what a job pays). Ray runs on a
local Ray with ``--threads`` CPUs; each actor gets ``threads // actors`` torch threads.

    python benchmarks/corpus.py [--corpus lee] [--words fire,government,police] [--model minilm]
                                [--engines local ray1 ray2] [--scale 10] [--threads 2] [--forms]
                                [--precision fp32] [--json]

On a quiet 2-core machine the defaults take about 4 minutes (the 10x run is most of it);
``--scale 1`` skips the 10x run.

``--scan`` measures the step before the model instead, side by side on the same documents (read
once, in memory): reading the corpus; the scan before issue 21 (every paragraph split with
pysbd, then each sentence searched); and the scan now (each raw paragraph searched, only those
with a match split). Both scans must find the same occurrences (the script checks it).

    python benchmarks/corpus.py --scan --corpus enwiki --words bank,spring,state

``--ray-scaling`` runs Ray with 1 actor and with 2 (1 torch thread each, a local Ray of 2 CPUs)
on every WordNet usage example (48,339 lines) with 20 frequent words, alternated, best of
``--repeats``: the whole job's time (actors and model loads included; ray.init timed apart) as a
ratio, and its start-up (ray.init, each actor's start and model load, the first rows) and steady
state (occurrences per second after the first rows) with their own ratio. ``--forward-bound``:
the same on 60 words (10,222 occurrences), a job where the forward pass dominates;
``--block-occurrences N``: Ray blocks of N matches instead of ray_engine's default;
``--examples-times N``: the examples written N times over, so the same start-up meets N times
the forward work (180 words x 3: 81,348 occurrences).

    python benchmarks/corpus.py --ray-scaling --repeats 2 [--forward-bound [180]] [--warm]

``--warm`` runs each Ray job on a local Ray that has first run one trivial Ray Data job (timed
apart, like ray.init): Ray Data's detached helper actors then exist, as on a running cluster that
has run Ray Data before; without it each job is the first of a fresh local Ray. Beside the job's
ratio it prints the ratio with Ray's start (ray.init + warm-up + the job) counted too.

``--write`` times writing the shards alone: an extraction's own tables written with pyarrow's
defaults (before) and with ``folder.write_shard`` (now: the vectors plain, without statistics).

``--read`` times the enwiki reader alone (decompression, XML, markup filter) with gensim's
``filter_wiki`` and with ``analyses/corpus/wiki_markup.py`` (the same documents, checked).

``--limit`` puts each engine beside its limit, measured in the same run: reading the corpus
+ the regex scan + splitting only the matched paragraphs + the bare forward pass on exactly the
matched occurrences at the job's layers, as a ratio limit / ours. ``--engines local ray1 ray2``
adds Ray (default with --limit: local only): beside the same single-process limit, and beside
the limit with the forward split across the N actors (read + scan + forward / N), with Ray's
fixed start-up (ray.init, actor start and model load, first rows) apart.

    python benchmarks/corpus.py --limit --corpus enwiki --words bank,spring,state --engines local ray1 ray2
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from contextlens.core.process_memory import rss_bytes

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


MIB = 1024 * 1024


def _one(engine: str, corpus: str, words: list[str], model: str, threads: int, opts: dict, queue) -> None:
    """One engine in this (fresh) process. ``opts["actor_threads"]``: torch threads per Ray actor
    (default: ``threads`` shared among the actors)."""
    from contextlens.analyses.corpus.extract import extract_corpus

    if engine == "local":  # the local clock leaves the model load out; a Ray driver loads no model
        import torch

        from contextlens.core.contextual_models import load_contextual

        torch.set_num_threads(threads)
        load_contextual(model, opts["precision"])
    out = Path(tempfile.mkdtemp(prefix="cl-bench-"))
    actors = {"local": 1, "ray1": 1, "ray2": 2}[engine]
    opts = dict(opts)
    actor_threads = opts.pop("actor_threads", None)
    warm = opts.pop("warm", False)
    if "block_occurrences" in opts:  # Ray: matches per block of the stream (an actor's call)
        from contextlens.analyses.corpus import ray_engine

        ray_engine.BLOCK_OCCURRENCES = opts.pop("block_occurrences")
    ray_start_s = ray_warm_s = None
    if engine != "local":
        import ray

        t0 = time.perf_counter()
        ray.init(num_cpus=threads, include_dashboard=False, log_to_driver=False)
        ray_start_s = time.perf_counter() - t0
        ray_warm_s = warm_ray_data() if warm else None
    timeline: list[tuple[float, int]] = []  # (when, occurrences written) at each chunk written

    def progress(stats) -> None:
        timeline.append((time.perf_counter(), stats.occurrences))

    start, epoch = time.perf_counter(), time.time()
    result = extract_corpus(
        corpus,
        words,
        out / "x",
        model=model,
        layers=None,
        engine="local" if engine == "local" else "ray",
        actors=actors,
        threads=threads if engine == "local" else actor_threads,
        progress=progress,
        **opts,
    )
    seconds = time.perf_counter() - start
    if engine != "local":
        import ray

        ray.shutdown()
    shutil.rmtree(out, ignore_errors=True)
    queue.put(
        {
            "engine": engine,
            "corpus": corpus,
            "seconds": round(seconds, 2),
            **phases(timeline, start, start + seconds, epoch, result.stats.actor_ready),
            "ray_start_s": None if ray_start_s is None else round(ray_start_s, 2),  # ray.init, outside "seconds"
            "ray_warm_s": None if ray_warm_s is None else round(ray_warm_s, 2),  # Ray Data's helpers, outside too
            "chunks": result.stats.chunks_written,
            "sentences": result.stats.sentences,  # split (now: only the paragraphs holding a target)
            "paragraphs": getattr(result.stats, "paragraphs", None),  # read (None before issue 21)
            "paragraphs_skipped": getattr(result.stats, "paragraphs_skipped", None),  # never split
            "occurrences": result.manifest.counts["rows"],
            "sentences_per_s": round(result.stats.sentences / seconds, 1),
            "occurrences_per_s": round(result.manifest.counts["rows"] / seconds, 1),
            "driver_peak_rss_mib": round(rss_bytes()[0] / MIB, 1),  # VmHWM: ru_maxrss starts at the parent's
            # each actor's own peak (one entry per actor process: the pool lives for the whole job)
            "actor_peak_rss_mib": [round(peak / MIB, 1) for peak, _ in result.stats.actor_rss.values()],
            "load_average": [round(x, 2) for x in os.getloadavg()],
        }
    )


def warm_ray_data() -> float:
    """Seconds to run one trivial Ray Data job on an actor pool: it starts the detached actors Ray
    Data keeps on a cluster for every later job (its stats, autoscaling and actor-location
    helpers, each a process importing ray.data and pandas). A job on a running cluster that has
    run Ray Data before finds them there; a fresh local Ray makes them during its first job."""
    import ray

    class Echo:
        def __call__(self, batch):
            return batch

    t0 = time.perf_counter()
    ds = ray.data.from_items([{"x": 1}]).map_batches(Echo, compute=ray.data.ActorPoolStrategy(size=1), num_cpus=0)
    ray.data.DataContext.get_current().enable_progress_bars = False
    list(ds.iter_rows())
    return time.perf_counter() - t0


def phases(timeline: list[tuple[float, int]], start: float, end: float, epoch: float, ready: dict) -> dict:
    """A job's start-up and steady state: when the first rows came back, the occurrences per second
    after that (the steady state), and each Ray actor's start and model load (seconds from the
    job's start; ``ready``: pid -> (started, loaded), epoch seconds)."""
    if not timeline:
        return {"to_first_rows_s": None, "steady_occurrences_per_s": None, "actors_started_s": [],
                "actors_ready_s": []}  # fmt: skip
    t_first, occ_first = timeline[0]
    occ_end = timeline[-1][1]
    steady = (occ_end - occ_first) / (end - t_first) if end > t_first and occ_end > occ_first else None
    return {
        "to_first_rows_s": round(t_first - start, 2),
        "steady_occurrences_per_s": None if steady is None else round(steady, 1),
        "steady_seconds": round(end - t_first, 2),
        "actors_started_s": sorted(round(b - epoch, 2) for b, _ in ready.values()),
        "actors_ready_s": sorted(round(r - epoch, 2) for _, r in ready.values()),  # model loaded
    }


def run(engine: str, corpus: str, words: list[str], model: str, threads: int, opts: dict) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_one, args=(engine, corpus, words, model, threads, opts, queue))
    proc.start()
    row = queue.get()
    proc.join()
    return row


def repeated(corpus: str, times: int) -> str:
    """The corpus written ``times`` times into one gzipped text file (one document per line)."""
    import gzip

    from contextlens.analyses.corpus.readers import read_corpus

    path = Path(tempfile.gettempdir()) / f"cl-bench-{corpus}-x{times}.txt.gz"
    if not path.exists():
        lines = [" ".join(d.pieces) for d in read_corpus(corpus)]
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            for _ in range(times):
                fh.write("\n".join(lines) + "\n")
    return str(path)


def scan_benchmark(corpus: str, words: list[str], forms: bool, as_json: bool) -> None:
    """Reading, then the old scan (split everything) beside the new one (find, then split)."""
    from contextlens.analyses.corpus.readers import read_corpus
    from contextlens.analyses.corpus.sentences import split_sentences
    from contextlens.analyses.corpus.targets import Matcher, form_table, scan_documents
    from contextlens.core.occurrences import find_all

    matcher = Matcher(form_table(words, forms))
    load_before = os.getloadavg()
    start = time.perf_counter()
    docs = [(d.doc_id, d.pieces) for d in read_corpus(corpus)]
    read_s = time.perf_counter() - start
    chars = sum(len(p) for _, pieces in docs for p in pieces)

    start = time.perf_counter()
    before_sentences, before = 0, []
    for doc_id, pieces in docs:  # the scan before: every paragraph split, every sentence searched
        for p, piece in enumerate(pieces):
            split = split_sentences(piece)
            before_sentences += len(split)
            for k, sentence in enumerate(split):
                before += [(doc_id, p, k, o.start, o.end) for o in find_all(sentence, matcher.pattern)]
    before_s = time.perf_counter() - start

    start = time.perf_counter()
    counts, found = scan_documents(docs, matcher)
    after_s = time.perf_counter() - start
    after = [(f.doc_id, f.paragraph_index, f.sentence_index, f.occurrence.start, f.occurrence.end) for f in found]
    same = after == before
    rows = [
        {"scan": "read only", "seconds": read_s, "paragraphs": counts.paragraphs, "split": 0, "sentences": 0},
        {"scan": "before: split all", "seconds": before_s, "paragraphs": counts.paragraphs,
         "split": counts.paragraphs, "sentences": before_sentences},
        {"scan": "now: find, split", "seconds": after_s, "paragraphs": counts.paragraphs,
         "split": counts.paragraphs_split, "sentences": counts.sentences},
    ]  # fmt: skip
    for r in rows:
        r["occurrences"] = len(found) if r["split"] else 0
        r["seconds"] = round(r["seconds"], 2)
        # "sentences read per second": the corpus's sentences (as splitting all of them counts) per second
        r["corpus_sentences_per_s"] = round(before_sentences / max(r["seconds"], 1e-9), 1)
    if as_json:
        json.dump({"corpus": corpus, "words": words, "same_occurrences": same, "rows": rows}, sys.stdout, indent=2)
        return
    print(f"{corpus}: {len(docs):,} documents, {counts.paragraphs:,} paragraphs, {chars:,} characters; "
          f"targets {','.join(words)}{' + inflected forms' if forms else ''}")  # fmt: skip
    print(f"{'scan':20} {'s':>8} {'paragraphs split':>17} {'sentences split':>16} {'occ':>6} {'corpus sent/s':>14}")
    for r in rows:
        print(f"{r['scan']:20} {r['seconds']:8} {r['split']:17,} {r['sentences']:16,} {r['occurrences']:6,} "
              f"{r['corpus_sentences_per_s']:14,}")  # fmt: skip
    print(
        f"# speed-up of the scan {before_s / max(after_s, 1e-9):.1f}x; with reading "
        f"{(read_s + before_s) / max(read_s + after_s, 1e-9):.1f}x; same occurrences: {same}"
    )
    print(f"# load average (1/5/15 min) before {'/'.join(f'{x:.1f}' for x in load_before)}, after "
          f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")  # fmt: skip
    if not same:
        raise SystemExit("the two scans found different occurrences")


def read_benchmark(repeats: int) -> None:
    """The enwiki reader alone: with gensim's ``filter_wiki`` (before) and with ours
    (:mod:`contextlens.analyses.corpus.wiki_markup`), alternated, best of ``repeats``; the same
    documents required."""
    from gensim.corpora.wikicorpus import filter_wiki as gensim_filter

    from contextlens.analyses.corpus.readers import _enwiki

    load_before = os.getloadavg()
    times: dict[str, list[float]] = {"gensim filter_wiki (before)": [], "wiki_markup (now)": []}
    docs = {}
    for _ in range(repeats):
        for name, fn in zip(times, (gensim_filter, None), strict=True):
            start = time.perf_counter()
            docs[name] = list(_enwiki(fn))
            times[name].append(time.perf_counter() - start)
    same = len({tuple(d) for d in docs.values()}) == 1
    chars = sum(len(p) for d in docs["wiki_markup (now)"] for p in d.pieces)
    n = len(docs["wiki_markup (now)"])
    print(f"enwiki reader (bz2 + XML + markup filter): {n} documents, {chars:,} characters")
    for name, runs in times.items():
        print(f"{name:28} best {min(runs):6.2f} s  (runs {', '.join(f'{x:.2f}' for x in runs)})")
    before, now = (min(r) for r in times.values())
    loads = [load_before, os.getloadavg()]
    print(f"# reader speed-up {before / now:.2f}x; same documents: {same}; load average before "
          f"{'/'.join(f'{x:.1f}' for x in loads[0])}, after {'/'.join(f'{x:.1f}' for x in loads[1])}")  # fmt: skip
    if not same:
        raise SystemExit("the two filters gave different documents")


def write_benchmark(corpus: str, words: list[str], model: str, repeats: int) -> None:
    """Writing the shards alone: an extraction's own tables (the local engine, then read back)
    written with pyarrow's defaults (before: every column dictionary-encoded and with min/max
    statistics, the float vectors too) and with ``folder.write_shard`` (now), best of
    ``repeats``; each written shard must read back equal to its table."""
    import pyarrow.parquet as pq

    from contextlens.analyses.corpus.extract import extract_corpus
    from contextlens.analyses.corpus.folder import shards, write_shard

    work = Path(tempfile.mkdtemp(prefix="cl-bench-write-"))
    try:
        extract_corpus(corpus, words, work / "x", model=model, layers=None, engine="local")
        tables = [pq.read_table(p) for p in shards(work / "x")]
        rows = sum(t.num_rows for t in tables)
        out = work / "out"
        out.mkdir()

        def defaults(i, table):
            pq.write_table(table, out / f"part-{i:06d}.parquet")

        def ours(i, table):
            write_shard(out, i, table)

        ways = {"pyarrow defaults (before)": defaults, "write_shard (now)": ours}
        best: dict[str, float] = {}
        size: dict[str, int] = {}
        for _ in range(repeats):
            for name, write in ways.items():
                start = time.perf_counter()
                for i, table in enumerate(tables):
                    write(i, table)
                best[name] = min(best.get(name, 1e9), time.perf_counter() - start)
                size[name] = sum(p.stat().st_size for p in shards(out))
                if not all(pq.read_table(p).equals(t) for p, t in zip(shards(out), tables, strict=True)):
                    raise SystemExit(f"{name}: a shard did not read back equal to its table")
        layers = sum(1 for f in tables[0].schema if f.name.startswith("layer_"))
        kind = tables[0].schema.field("layer_0").type
        print(f"{corpus}, {','.join(words)}: {rows:,} rows in {len(tables)} shards, {layers} layers of {kind} "
              f"(model {model}); best of {repeats}")  # fmt: skip
        for name in ways:
            print(f"{name:26} {best[name] * 1000:8.1f} ms  {best[name] * 1e6 / rows:6.1f} us/row  "
                  f"{size[name] / 1e6:7.2f} MB")  # fmt: skip
        before, now = best["pyarrow defaults (before)"], best["write_shard (now)"]
        smaller = size["write_shard (now)"] / size["pyarrow defaults (before)"]
        print(f"# writing {before / now:.2f}x faster; size {smaller:.3f} of before; every shard read back equal; "
              f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


def limit_benchmark(
    corpus: str, words: list[str], model_name: str, threads: int, opts: dict, repeats: int, engines: list[str],
    block_occurrences: int | None = None,
) -> None:  # fmt: skip
    """Each engine beside its limit, measured in the same run. The limit, in this process: reading +
    the regex scan + splitting the matched paragraphs + the bare forward on exactly the matched
    occurrences at the job's layers (no Parquet, no shards, no manifest), with ``threads`` torch
    threads and with 1. The local engine runs here too (model load excluded from both). Each Ray
    engine runs in a fresh process with its own local Ray of ``threads`` CPUs (:func:`run`), beside
    the same single-process limit and beside the limit with the forward split across its N actors
    (read + scan + forward at the actor's threads / N), its fixed start-up given apart: ray.init,
    the actors' start and model load, the first rows."""
    import torch

    from contextlens.analyses.corpus.extract import extract_corpus
    from contextlens.analyses.corpus.readers import read_corpus
    from contextlens.analyses.corpus.targets import Matcher, form_table, scan_documents
    from contextlens.core.alignment import tokenize_many
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.extraction import extract_targets
    from contextlens.core.occurrences import in_template

    torch.set_num_threads(threads)
    model = load_contextual(model_name, opts["precision"])
    layers = model.check_layers(None)
    matcher = Matcher(form_table(words, opts["forms"]))
    model.encode_occurrences([in_template("bank")])  # one forward before the clocks: both start warm
    import contextlens.core.extraction as extraction

    inner = {"wall": 0.0, "cpu": 0.0}
    bare = extraction.extract_targets

    def timed_forward(*args, **kwargs):  # the forward inside ours, on the same clocks
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return bare(*args, **kwargs)
        finally:
            inner["wall"] += time.perf_counter() - wall
            inner["cpu"] += time.process_time() - cpu

    limits, ours = [], []
    for _ in range(repeats):  # alternated, best of each: the machine's load moves between runs
        cpu0 = time.process_time()
        start = time.perf_counter()
        docs = [(d.doc_id, d.pieces) for d in read_corpus(corpus)]
        read_s = time.perf_counter() - start
        start = time.perf_counter()
        counts, found = scan_documents(docs, matcher)
        scan_s = time.perf_counter() - start
        start, cpu1 = time.perf_counter(), time.process_time()
        toks = tokenize_many(model, [f.occurrence for f in found])
        extract_targets(model, toks, layers, "mean", 32)
        forward_s = time.perf_counter() - start
        cpu2 = time.process_time()
        torch.set_num_threads(1)  # a Ray actor's forward with 2 actors on 2 CPUs
        start = time.perf_counter()
        extract_targets(model, toks, layers, "mean", 32)
        forward_1 = time.perf_counter() - start
        torch.set_num_threads(threads)
        limits.append((read_s + scan_s + forward_s, read_s, scan_s, forward_s, cpu2 - cpu0, cpu2 - cpu1, forward_1))
        if "local" not in engines:
            continue
        out = Path(tempfile.mkdtemp(prefix="cl-limit-"))
        inner.update(wall=0.0, cpu=0.0)
        extraction.extract_targets = timed_forward
        start, cpu0 = time.perf_counter(), time.process_time()
        try:
            result = extract_corpus(corpus, words, out / "x", model=model_name, loader=lambda *_: model, **opts)
        finally:
            extraction.extract_targets = bare
        ours.append((time.perf_counter() - start, inner["wall"], time.process_time() - cpu0, inner["cpu"]))
        shutil.rmtree(out, ignore_errors=True)
    limit_s, read_s, scan_s, forward_s, limit_cpu, forward_cpu, _ = min(limits)
    forward_1 = min(x[6] for x in limits)
    print(f"{corpus}: {counts.paragraphs:,} paragraphs, {counts.paragraphs_split:,} split, {len(found):,} "
          f"occurrences; {model_name} {opts['precision']}, layers 0-{layers[-1]}, {threads} thread(s)")  # fmt: skip
    print(f"limit: read {read_s:.2f} s + scan {scan_s:.2f} s + bare forward {forward_s:.2f} s = {limit_s:.2f} s "
          f"(best of {len(limits)}: {', '.join(f'{x[0]:.1f}' for x in limits)} s); the forward at 1 thread "
          f"{forward_1:.2f} s; peak RSS of this process "
          f"{rss_bytes()[0] / MIB:,.0f} MiB; load average "
          f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}")  # fmt: skip
    ray_rows = [e for e in engines if e != "local"]
    if ray_rows:
        ray_opts = opts | ({"block_occurrences": block_occurrences} if block_occurrences else {})
        ray_beside_limit(corpus, words, model_name, threads, ray_opts, repeats, ray_rows, len(found),
                         (limit_s, read_s + scan_s, forward_s, forward_1))  # fmt: skip
    if "local" not in engines:
        return
    ours_s, ours_forward, ours_cpu, ours_forward_cpu = min(ours)
    print(f"local, best of {repeats}, alternated with the limit; all runs: ours "
          f"{', '.join(f'{x[0]:.1f}' for x in ours)} s")  # fmt: skip
    print(f"ours (extract_corpus, local, shards written): {ours_s:.2f} s, {result.manifest.counts['rows']:,} rows; "
          f"its forward {ours_forward:.2f} s, everything else {ours_s - ours_forward:.2f} s "
          f"(the limit's read + scan: {read_s + scan_s:.2f} s)")  # fmt: skip
    print(f"limit / ours = {limit_s / ours_s:.2f} wall clock (1.0 = nothing spent beyond the limit); "
          f"load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")  # fmt: skip
    print(f"CPU seconds of this process (less moved by other processes' load): limit {limit_cpu:.2f} "
          f"(forward {forward_cpu:.2f}), ours {ours_cpu:.2f} (forward {ours_forward_cpu:.2f}); "
          f"limit / ours = {limit_cpu / ours_cpu:.2f}")  # fmt: skip


def ray_beside_limit(
    corpus: str, words: list[str], model: str, threads: int, opts: dict, repeats: int, engines: list[str],
    occurrences: int, limit: tuple[float, float, float, float],
) -> None:  # fmt: skip
    """Each Ray engine (a fresh process each run, best of ``repeats``) beside the single-process
    limit and the limit with the forward split across its actors, its start-up apart."""
    limit_s, read_scan_s, forward_s, forward_1 = limit
    print(f"{'engine':7} {'runs s':12} {'job s':>6} {'ray.init':>8} {'started s':>9} {'loaded s':>8} {'1st rows':>8} "
          f"{'limit s':>7} "
          f"{'limit/job':>9} {'limit_N s':>9} {'limit_N/job':>11} {'limit_N/after load':>18} {'sent/s':>7} "
          f"{'occ/s':>6} {'driver MiB':>10} {'actors MiB':>11}  load")  # fmt: skip
    for engine in engines:
        rows = [run(engine, corpus, words, model, threads, opts) for _ in range(repeats)]
        b = min(rows, key=lambda r: r["seconds"])
        assert b["occurrences"] == occurrences, f"{engine}: {b['occurrences']} occurrences, the limit {occurrences}"
        n = {"ray1": 1, "ray2": 2}[engine]
        per_actor = max(1, threads // n)
        # the forward split across N actors of `per_actor` threads (measured at `threads` and at 1)
        limit_n = read_scan_s + (forward_s if per_actor == threads else forward_1) / n
        loaded = max(b["actors_ready_s"]) if b["actors_ready_s"] else 0.0
        actors = "/".join(f"{x:,.0f}" for x in b["actor_peak_rss_mib"])
        times = ",".join(f"{r['seconds']:.1f}" for r in rows)
        started = min(b["actors_started_s"]) if b["actors_started_s"] else 0.0
        print(f"{engine:7} {times:12} {b['seconds']:6.1f} {b['ray_start_s']:8.1f} {started:9.1f} "
              f"{loaded:8.1f} {b['to_first_rows_s']:8.1f} {limit_s:7.1f} {limit_s / b['seconds']:9.2f} {limit_n:9.1f} "
              f"{limit_n / b['seconds']:11.2f} {limit_n / max(b['seconds'] - loaded, 1e-9):18.2f} "
              f"{b['sentences_per_s']:7,.0f} {b['occurrences_per_s']:6,.0f} {b['driver_peak_rss_mib']:10,.0f} "
              f"{actors:>11}  {b['load_average'][0]:.1f}")  # fmt: skip
    print(
        f"# Ray blocks of {opts.get('block_occurrences') or 'the default'} matches; job s: extract_corpus on Ray "
        "(actor start and model loads inside, ray.init not: its own column); "
        "limit: the single-process limit above; limit_N: read + scan + the forward at each actor's threads / N "
        "actors; 'after load': the job's time once every actor had loaded its model"
    )


SCALING_WORDS = "time,make,take,give,get,go,come,run,set,put,line,point,light,work,hold,turn,break,head,play,cut"
# --ray-scaling --forward-bound: 40 more frequent words, 60 in all (10,222 occurrences, 3.4x the
# forward work of the 20 words): a job where the forward pass, not the start-up, dominates
MORE_WORDS = (
    "man,day,year,way,hand,house,water,life,money,world,place,part,side,home,word,book,eye,face,door,car,"
    "body,night,city,war,old,good,new,long,little,great,high,small,large,hard,young,keep,leave,call,show,find"
)

# --ray-scaling --forward-bound 180: the next 120 most frequent content words of the examples, 180 in
# all (27,116 occurrences, 9x the 20 words' forward work)
MOST_WORDS = (
    "children,two,made,well,people,child,gave,took,every,must,like,room,left,got,first,around,back,years,used,"
    "always,air,job,right,went,last,away,now,still,three,country,between,students,behavior,several,came,"
    "president,never,government,food,mind,men,let,system,against,felt,law,see,eyes,words,company,party,family,"
    "problem,hair,found,school,said,cold,mother,state,tried,woman,business,dress,full,cannot,news,bad,please,"
    "called,person,hot,town,ball,looked,big,fire,often,voice,open,paper,white,sun,blood,table,music,fell,even,"
    "heart,turned,thought,horse,rather,black,teacher,wife,days,road,together,short,wall,ship,use,lost,dead,"
    "land,held,speech,police,tree,clear,without,love,office,deep,game,heavy,end,won,played"
)


def wordnet_examples(times: int = 1) -> str:
    """Every usage example of WordNet 3.0, one a line, ``times`` times over (a file: reading it
    costs next to nothing, so the job is the scan and the forward pass; repeated, the same
    start-up meets ``times`` times the forward work)."""
    path = Path(tempfile.gettempdir()) / f"cl-bench-wordnet-examples{'' if times == 1 else f'-x{times}'}.txt"
    if not path.exists():
        from contextlens.core.wordnet import wordnet

        lines = [e.strip() for s in wordnet().all_synsets() for e in s.examples() if e.strip()]
        path.write_text("\n".join(lines * times) + "\n", encoding="utf-8")
    return str(path)


TARGET = 1.6  # issue 21: Ray with 2 actors at least 1.6x Ray with 1 actor on the whole job


def start_up_allowed(one_s: float, two_s: float, target: float) -> float:
    """The longest start-up S, the same for both, that lets a job reach ``target``: the work after
    the first rows takes ``one_s`` on 1 actor and ``two_s`` on 2, so (S + one_s) / (S + two_s) >=
    target needs S <= (one_s - target * two_s) / (target - 1) (negative: not even at S = 0)."""
    return round((one_s - target * two_s) / (target - 1), 2)


def _with_start(row: dict) -> float:
    return row["seconds"] + (row["ray_start_s"] or 0) + (row["ray_warm_s"] or 0)


def ray_scaling(words: list[str], model: str, opts: dict, repeats: int, as_json: bool, times: int = 1) -> None:
    """Ray with 1 actor against Ray with 2 on the same job (each actor 1 torch thread, a local Ray
    of 2 CPUs), alternated, each run a fresh process with its own Ray; best of ``repeats``. Beside
    the whole job's ratio, its start-up (Ray start, actor start, model load, first rows) and its
    steady state (occurrences per second after the first rows came back) with their own ratio."""
    corpus = wordnet_examples(times)
    opts = {**opts, "actor_threads": 1}
    warm = opts.get("warm", False)
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {"ray1": [], "ray2": []}
    for _ in range(repeats):
        for engine in ("ray1", "ray2"):
            runs[engine].append(run(engine, corpus, words, model, 2, opts))
    best = {e: min(rows, key=lambda r: r["seconds"]) for e, rows in runs.items()}
    one, two = best["ray1"], best["ray2"]
    assert one["occurrences"] == two["occurrences"], "the two runs found different occurrences"
    steady = {e: max(r["steady_occurrences_per_s"] or 0 for r in rows) for e, rows in runs.items()}
    result = {
        "corpus": "WordNet 3.0 usage examples (one a line)" + (f", {times} times over" if times > 1 else ""),
        "words": words,
        "model": model,
        "block_occurrences": opts.get("block_occurrences"),
        "occurrences": one["occurrences"],
        "chunks": one["chunks"],
        "runs": runs,
        "ray": "a running local Ray that has run a Ray Data job before" if warm else "a fresh local Ray",
        "speedup_2_over_1": round(one["seconds"] / two["seconds"], 2),
        # the whole run as one `corpus extract` with a local Ray pays it: Ray's start (+ warm-up) + the job
        "with_start_speedup_2_over_1": round(_with_start(one) / _with_start(two), 2),
        "steady_speedup_2_over_1": round(steady["ray2"] / steady["ray1"], 2) if steady["ray1"] else None,
        "start_up_allowed_s": start_up_allowed(one["steady_seconds"], two["steady_seconds"], TARGET),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    if as_json:
        json.dump(result, sys.stdout, indent=2)
        return
    block = opts.get("block_occurrences") or "default"
    print(f"{result['corpus']}: {one['occurrences']:,} occurrences of {len(words)} words, {one['chunks']} chunks "
          f"(blocks of {block} matches); model {model} {opts['precision']}, all layers; 1 torch thread per actor, "
          f"local Ray of 2 CPUs")  # fmt: skip
    warmups = ", ".join(str(r["ray_warm_s"]) for r in runs["ray1"] + runs["ray2"])
    print(f"on {result['ray']}" + (f" (warm-up {warmups} s, outside the job's clock)" if warm else ""))
    print(f"{'engine':8} {'runs (s)':20} {'best s':>7} {'ray.init s':>10} {'actors start-loaded s':>22} "
          f"{'first rows s':>12} {'steady occ/s':>12} {'occ/s':>7} {'driver MiB':>10}  "
          "actors' peak MiB  load 1 min")  # fmt: skip
    for engine, rows in runs.items():
        b = best[engine]
        peaks = ", ".join(f"{x:,.0f}" for x in b["actor_peak_rss_mib"])
        loaded = ", ".join(f"{s}-{r}" for s, r in zip(b["actors_started_s"], b["actors_ready_s"], strict=True))
        print(f"{engine:8} {', '.join(str(r['seconds']) for r in rows):20} {b['seconds']:7} {b['ray_start_s']:10} "
              f"{loaded:>22} {b['to_first_rows_s']:12} {b['steady_occurrences_per_s']:12} {b['occurrences_per_s']:7} "
              f"{b['driver_peak_rss_mib']:10,.0f}  {peaks:16}  {b['load_average'][0]}")  # fmt: skip
    print(f"# 2 actors / 1 actor: {result['speedup_2_over_1']}x on the whole job (actor start and model loads "
          f"included, ray.init not: it is its own column); {result['steady_speedup_2_over_1']}x in the steady state "
          f"(occurrences/s after the first rows, best run of each); target {TARGET}x")  # fmt: skip
    allowed = result["start_up_allowed_s"]
    print(f"# after the first rows 1 actor worked {one['steady_seconds']} s, 2 actors {two['steady_seconds']} s: "
          f"with the same start-up for both, {TARGET}x needs a start-up under {allowed} s; the first rows came at "
          f"{one['to_first_rows_s']} s and {two['to_first_rows_s']} s")  # fmt: skip
    print(f"# with Ray's start (ray.init{' + warm-up' if warm else ''} + the job: {_with_start(one):.2f} s vs "
          f"{_with_start(two):.2f} s): {result['with_start_speedup_2_over_1']}x")  # fmt: skip
    print(f"# load average (1/5/15 min) before {'/'.join(f'{x:.1f}' for x in load_before)}, after "
          f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="lee")
    ap.add_argument("--words", default="fire,government,police")
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--engines", nargs="+", default=["local", "ray1", "ray2"])
    ap.add_argument("--scale", type=int, default=10, help="also run the local engine on the corpus repeated N times")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--scale-engine", default="local", choices=["local", "ray1", "ray2"], help="engine of the Nx run")
    ap.add_argument("--forms", action="store_true", help="also match inflected forms (WordNet)")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "int8"])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--scan", action="store_true", help="time reading and the scan before vs now (no model)")
    ap.add_argument("--limit", action="store_true", help="the local engine beside its limit (read+scan+bare forward)")
    ap.add_argument(
        "--repeats", type=int, default=3, help="--limit/--ray-scaling: runs of each, alternated (best kept)"
    )
    ap.add_argument("--read", action="store_true", help="the enwiki reader alone: gensim's markup filter vs ours")
    ap.add_argument("--write", action="store_true", help="writing the shards alone: pyarrow's defaults vs write_shard")
    ap.add_argument("--ray-scaling", action="store_true", help="Ray 2 actors vs 1 on WordNet's examples (20 words)")
    ap.add_argument("--forward-bound", type=int, nargs="?", const=60, choices=[60, 180],
                    help="--ray-scaling on 60 words (MORE_WORDS added) or 180 (MOST_WORDS too)")  # fmt: skip
    ap.add_argument("--warm", action="store_true",
                    help="Ray: run each job on a local Ray that has run one Ray Data job (timed apart), as a "
                    "running cluster has")  # fmt: skip
    ap.add_argument("--examples-times", type=int, default=1,
                    help="--ray-scaling on the examples N times over (N times the forward work)")  # fmt: skip
    ap.add_argument("--block-occurrences", type=int, help="Ray: matches per block of the stream (ray_engine's default)")
    args = ap.parse_args()
    words = args.words.split(",")
    if args.read:
        read_benchmark(args.repeats)
        return
    if args.write:
        write_benchmark(args.corpus, words, args.model, args.repeats)
        return
    if args.ray_scaling:
        words = words if "--words" in sys.argv else SCALING_WORDS.split(",")
        if args.forward_bound:
            words = SCALING_WORDS.split(",") + MORE_WORDS.split(",")
            words += MOST_WORDS.split(",") if args.forward_bound == 180 else []
        opts = {"forms": args.forms, "precision": args.precision, "warm": args.warm}
        if args.block_occurrences:
            opts["block_occurrences"] = args.block_occurrences
        ray_scaling(words, args.model, opts, args.repeats, args.json, args.examples_times)
        return
    if args.scan:
        scan_benchmark(args.corpus, words, args.forms, args.json)
        return
    if args.limit:
        limit_benchmark(
            args.corpus,
            words,
            args.model,
            args.threads,
            {"forms": args.forms, "precision": args.precision},
            args.repeats,
            args.engines if "--engines" in sys.argv else ["local"],
            args.block_occurrences,
        )
        return
    opts = {"forms": args.forms, "precision": args.precision}
    started, load_before = time.perf_counter(), os.getloadavg()
    rows = [run(e, args.corpus, words, args.model, args.threads, opts) for e in args.engines]
    if args.scale > 1:
        row = run(args.scale_engine, repeated(args.corpus, args.scale), words, args.model, args.threads, opts)
        row["corpus"] = f"{args.corpus} x{args.scale}"
        rows.append(row)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        return
    print(
        f"{'engine':8} {'corpus':12} {'sent':>7} {'occ':>6} {'s':>7} {'sent/s':>8} {'occ/s':>7} "
        f"{'driver MiB':>10}  actors' peak MiB  load avg (1 min, at the end)"
    )
    for r in rows:
        actors = ", ".join(f"{x:,.0f}" for x in r["actor_peak_rss_mib"]) or "-"
        print(
            f"{r['engine']:8} {r['corpus']:12} {r['sentences']:7} {r['occurrences']:6} {r['seconds']:7} "
            f"{r['sentences_per_s']:8} {r['occurrences_per_s']:7} {r['driver_peak_rss_mib']:10,.0f}  "
            f"{actors:16}  {r['load_average'][0]}"
        )
    load_after = os.getloadavg()
    print(
        f"# {time.perf_counter() - started:.0f} s in all; load average (1/5/15 min) before "
        f"{'/'.join(f'{x:.1f}' for x in load_before)}, after {'/'.join(f'{x:.1f}' for x in load_after)}; "
        f"{os.cpu_count()} CPUs, {args.threads} threads, model {args.model} {args.precision}"
        f"{', inflected forms' if args.forms else ''}"
    )


if __name__ == "__main__":
    main()
