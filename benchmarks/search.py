"""Search speed and quality of each FAISS index type against exact (flat) search.

For every index type contextlens builds (flat, hnsw, ivfpq, sq8, binary, with the defaults of
``contextlens index build``): build time, serialized size (= the arrays FAISS holds in memory),
the capacity formula beside it, queries per second, and recall@10 against exact flat search
(the fraction of the true 10 nearest neighbours by cosine that the index returns).

Vectors:
  --vectors random   N unit vectors drawn from a standard normal in D dims (no structure: the
                     hardest case for approximate indexes; the default)
  --vectors glove    real GloVe 6B 50d word vectors (the N most frequent words; queries are the
                     next words in frequency order, so no query is in the index)
  --vectors wordnet  real 384-d sentence embeddings: minilm encodings of the first N WordNet
                     definitions (file order), queried by the encodings of usage examples of a
                     seeded sample of synsets (encoded once, ~4 min on a quiet 2-core CPU; cached)

    python benchmarks/search.py                      # 100,000 x 384 random, 1,000 queries
    python benchmarks/search.py --vectors glove --count 200000
    python benchmarks/search.py --vectors wordnet     # 100,000 real 384-d sentence embeddings
    python benchmarks/search.py --json

The machine's CPU may be shared; timings are wall-clock and include that noise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import faiss
import numpy as np

from contextlens.analyses.search.capacity import estimate
from contextlens.analyses.search.index_config import (
    DEFAULT_PARAMS,
    INDEX_TYPES,
    IndexConfig,
    build_faiss_index,
    search_faiss,
)
from contextlens.errors import InputError


def random_vectors(count: int, queries: int, dim: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((count + queries, dim), dtype=np.float32)
    return x[:count], x[count:], f"{count:,} random standard-normal vectors in {dim} dims (seed {seed})"


def glove_vectors(count: int, queries: int) -> tuple[np.ndarray, np.ndarray, str]:
    from contextlens.core.static_models import load_static

    kv = load_static("glove-50d").kv
    if count + queries > len(kv.index_to_key):
        sys.exit(f"glove-50d has {len(kv.index_to_key):,} words; ask for fewer than count + queries")
    x = np.asarray(kv.vectors[: count + queries], dtype=np.float32)
    return x[:count], x[count:], f"the {count:,} most frequent GloVe 6B 50d words (queries: the next {queries:,})"


def wordnet_vectors(count: int, queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    from contextlens.analyses.search.encoders import make_encoder
    from contextlens.core.wordnet import glosses, usage_examples

    definitions = [definition for _, definition in glosses()]
    if count > len(definitions):
        sys.exit(f"WordNet has {len(definitions):,} definitions; ask for at most that many")
    examples = sorted({ex.synset: ex.text for ex in reversed(usage_examples())}.items())
    rng = np.random.default_rng(seed)
    picked = [examples[i][1] for i in sorted(rng.choice(len(examples), size=queries, replace=False))]
    encoder = make_encoder("minilm", "sentence")
    corpus = encoder.encode_cached(definitions[:count], namespace="search-benchmark", show_progress_bar=True)
    q = encoder.encode_cached(picked, namespace="search-benchmark", show_progress_bar=True)
    what = f"minilm sentence embeddings (384-d) of the first {count:,} WordNet definitions"
    return corpus, q, what + f" (queries: {queries:,} usage examples, seed {seed})"


def run(corpus: np.ndarray, queries: np.ndarray, k: int, threads: int, overrides: dict) -> tuple[list[dict], list]:
    faiss.omp_set_num_threads(threads)
    n, d = corpus.shape
    rows, skipped = [], []
    exact_ids = None
    for index_type in INDEX_TYPES:
        params = {key: v for key, v in overrides.items() if key in DEFAULT_PARAMS[index_type]}
        try:
            spec = IndexConfig(index_type, params).resolved(n, d)
        except InputError as exc:  # e.g. binary codes on 50-d GloVe (not a multiple of 8)
            skipped.append({"index": index_type, "reason": str(exc)})
            continue
        start = time.perf_counter()
        index = build_faiss_index(corpus, spec)
        build_s = time.perf_counter() - start
        search_faiss(index, spec, queries[:10], k)  # warm-up
        start = time.perf_counter()
        _, ids = search_faiss(index, spec, queries, k)
        search_s = time.perf_counter() - start
        if exact_ids is None:  # flat comes first: it is the ground truth
            exact_ids = ids
        recall = float(np.mean([len(set(a) & set(e)) / k for a, e in zip(ids, exact_ids, strict=True)]))
        blob = faiss.serialize_index_binary(index) if index_type == "binary" else faiss.serialize_index(index)
        formula = estimate(spec, n, d)  # the same configuration, so the formula prices this very index
        rows.append(
            {
                "index": index_type,
                "params": spec.params,
                "dtype": spec.code,
                "build_s": build_s,
                "bytes": int(blob.size),
                "formula_bytes": formula.bytes,
                "bytes_per_vector": blob.size / n,
                "qps": len(queries) / search_s,
                "recall@10": recall,
            }
        )
    return rows, skipped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vectors", choices=("random", "glove", "wordnet"), default="random")
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=1_000)
    ap.add_argument("--dim", type=int, default=384, help="random vectors only")
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1, help="FAISS OpenMP threads (1 = per-core numbers)")
    ap.add_argument("--ef-search", type=int, help="HNSW query beam (default: contextlens index build's)")
    ap.add_argument("--nprobe", type=int, help="IVF-PQ lists visited per query (default: contextlens index build's)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.vectors == "random":
        corpus, queries, what = random_vectors(args.count, args.queries, args.dim)
    elif args.vectors == "glove":
        corpus, queries, what = glove_vectors(args.count, args.queries)
    else:
        corpus, queries, what = wordnet_vectors(args.count, args.queries)
    overrides = {k: v for k, v in (("ef_search", args.ef_search), ("nprobe", args.nprobe)) if v is not None}
    rows, skipped = run(corpus, queries, args.k, args.threads, overrides)
    meta = {
        "vectors": what,
        "count": len(corpus),
        "dim": corpus.shape[1],
        "queries": len(queries),
        "k": args.k,
        "threads": args.threads,
        "faiss": faiss.__version__,
        "metric": "cosine (vectors normalized; binary: Hamming on sign bits)",
    }
    if args.json:
        print(json.dumps({"benchmark": "search", "meta": meta, "rows": rows, "skipped": skipped}, indent=2))
        return
    print(f"{what}; {len(queries):,} queries, k={args.k}, {args.threads} FAISS thread(s), faiss {faiss.__version__}")
    header = f"{'index':<8} {'stored as':<10} {'build s':>8} {'MiB':>8} {'formula MiB':>11} {'B/vector':>9}"
    print(header + f" {'QPS':>9} {'recall@10':>9}  params")
    for r in rows:
        params = ", ".join(f"{k}={v}" for k, v in r["params"].items())
        print(
            f"{r['index']:<8} {r['dtype']:<10} {r['build_s']:>8.2f} {r['bytes'] / 2**20:>8.1f} "
            f"{r['formula_bytes'] / 2**20:>11.1f} {r['bytes_per_vector']:>9.1f} {r['qps']:>9.0f} "
            f"{r['recall@10']:>9.3f}  {params}"
        )
    for s in skipped:
        print(f"{s['index']:<8} skipped: {s['reason']}")


if __name__ == "__main__":
    main()
