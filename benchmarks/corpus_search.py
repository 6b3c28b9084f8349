"""`corpus search` at size: an extraction folder of N occurrences, the index built once, then queries.

A real extraction (``--corpus``/``--words``, minilm) is copied shard by shard until the folder
holds ``--rows`` occurrences (copies of real rows: the index and the search do the same work as
on distinct rows), then: the first search (builds the index beside the shards), and ``--queries``
searches after it (index read from the folder each time, as a new process would, and from this
process's cache). The baseline is numpy's exact cosine over the same vectors read from the
shards (what a search without a kept index pays).

    python benchmarks/corpus_search.py [--rows 100000] [--corpus enwiki] [--words bank,spring,state]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--corpus", default="enwiki")
    ap.add_argument("--words", default="bank,spring,state")
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import numpy as np
    import torch

    from contextlens.analyses.corpus import occurrence_search as osearch
    from contextlens.analyses.corpus.chunks import layer_column
    from contextlens.analyses.corpus.extract import extract_corpus
    from contextlens.analyses.corpus.folder import layer_matrix, read_rows, shard_path, shards
    from contextlens.analyses.corpus.manifest import read_manifest
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.occurrences import parse_marked
    from contextlens.core.similarity import normalize_rows

    torch.set_num_threads(args.threads)
    model = load_contextual(args.model)
    work = Path(tempfile.mkdtemp(prefix="cl-search-"))
    source = work / "one"
    started = time.perf_counter()
    extract_corpus(args.corpus, args.words.split(","), source, model=args.model, layers=[6])
    extract_s = time.perf_counter() - started
    folder = work / "big"
    folder.mkdir()
    manifest = read_manifest(source)
    parts = shards(source)
    total, copies, n = manifest.counts["rows"], 0, 0
    while copies * total < args.rows:
        for p in parts:
            shutil.copy(p, shard_path(folder, n))
            n += 1
        copies += 1
    manifest.counts = dict(manifest.counts, rows=copies * total, shards=n)
    manifest.write(folder)
    like = "The river [bank] flooded."

    started = time.perf_counter()
    first = osearch.search_occurrences(folder, like, top=20, model=model)
    first_s = time.perf_counter() - started
    warm = []
    for _ in range(args.queries):
        osearch.clear_cache()  # as a new process would: the index read back from the folder
        started = time.perf_counter()
        osearch.search_occurrences(folder, like, top=20, model=model)
        warm.append(time.perf_counter() - started)
    cached = []
    for _ in range(args.queries):
        started = time.perf_counter()
        osearch.search_occurrences(folder, like, top=20, model=model)
        cached.append(time.perf_counter() - started)
    # baseline: no kept index, the vectors read from the shards and scored by numpy
    started = time.perf_counter()
    x = normalize_rows(layer_matrix(read_rows(folder, columns=[layer_column(6)]), layer_column(6)))
    q = normalize_rows(model.encode_occurrences([parse_marked(like)], layers=[6])[0].hidden[:1])[0]
    np.argsort(-(x @ q))[:20]
    baseline_s = time.perf_counter() - started
    index_mib = osearch.index_paths(folder, 6)[0].stat().st_size / 2**20
    rows = first.searched
    out = {
        "rows": rows, "shards": n, "extract_seconds": round(extract_s, 1), "index_mib": round(index_mib, 1),
        "first_search_s (builds the index)": round(first_s, 3),
        "search_s, index read from the folder (median)": round(sorted(warm)[len(warm) // 2], 3),
        "search_s, index cached in the process (median)": round(sorted(cached)[len(cached) // 2], 3),
        "baseline_s: shards read + numpy cosine, no index": round(baseline_s, 3),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "setup": f"{args.model} layer 6, {args.threads} thread(s), {os.cpu_count()} CPUs, copies of {args.corpus}",
    }  # fmt: skip
    print(json.dumps(out, indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
