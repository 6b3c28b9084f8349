"""Extraction speed and memory: contextlens vs the seeds' loop vs the bare batched forward pass.

For each model and corpus, on N real sentences, three ways to get every layer's hidden state of
one target word per sentence. Corpora: ``lee`` - gensim's Lee background corpus (news) split into
sentences of 6-60 words, target = the longest word; ``wordnet`` - WordNet 3.0 usage examples
(short), evenly spaced, target = the lemma the example illustrates. The approaches:

  (a) seeds  - the seeds' approach: one sentence per forward pass, all hidden states kept;
  (b) ours   - ``ContextualModel.encode_occurrences`` (batched by length, targets only);
  (c) bare   - the bare batched forward pass over the same length-sorted batches, outputs
               discarded, tokenization and padding done before the clock starts: an upper
               bound for any batched extractor;
  (d) partial - ours asking for layers 0..L/2 only (blocks above are not run);
  (e) int8   - ours with ``precision="int8"`` (all layers); its drift from fp32 (per layer mean
               and minimum cosine over a fixed sentence set) is measured after the clock stops.

The machine's limit: a large fp32 matrix product (2048 x 2048, best of 5) at the same thread
count gives ``gemm_gflops``; each approach's model FLOPs per second (2 x the linear layers'
weights per token, plus attention's 4 x seq x d per layer) is reported as a share of it
(``share_of_gemm_peak``) and of the theoretical peak (threads x 32 fp32 flops per cycle - two
256-bit FMA pipes - x the clock in /proc/cpuinfo).

Each (model, approach) runs in a fresh process, so peak memory (ru_maxrss) is its own; the
model is loaded before the clock starts. Threads are pinned (default 2). Each approach is timed
``--repeats`` times and the best time is kept (other processes only ever slow a run down).

    python benchmarks/extract.py [--models minilm mpnet] [--corpus lee wordnet] [--sentences 500]
                                 [--threads 2] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import resource
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

APPROACHES = ("seeds", "ours", "bare", "partial", "int8")
TARGETS = {
    "minilm": {"ours/bare": 0.95, "ours/seeds": 2.5, "int8/fp32": 1.4},
    "mpnet": {"ours/bare": 0.95, "partial/full": 1.7},
}
FLOPS_PER_CYCLE = 32  # fp32 per core: two 256-bit FMA units (8 lanes x 2 flops each)


def lee_sentences(n: int) -> list[tuple[str, int, int]]:
    """The first ``n`` sentences of 6-60 words from gensim's Lee background corpus, each with
    the character span of its longest alphabetic word as the target."""
    from gensim.test.utils import datapath

    out: list[tuple[str, int, int]] = []
    with open(datapath("lee_background.cor"), encoding="utf-8", errors="replace") as f:
        for doc in f:
            for sent in re.split(r"(?<=[.!?])\s+", doc.strip()):
                words = list(re.finditer(r"[A-Za-z]+", sent))
                if not 6 <= len(words) <= 60:
                    continue
                best = max(words, key=lambda m: (len(m.group()), -m.start()))
                out.append((sent, best.start(), best.end()))
                if len(out) == n:
                    return out
    raise SystemExit(f"the Lee corpus has only {len(out)} usable sentences; ask for fewer")


def wordnet_sentences(n: int) -> list[tuple[str, int, int]]:
    """``n`` WordNet 3.0 usage examples, evenly spaced over all of them (deterministic), each
    with the located lemma as the target."""
    from contextlens.core.wordnet import usage_examples

    examples = usage_examples()
    if len(examples) < n:
        raise SystemExit(f"WordNet has only {len(examples)} usable examples; ask for fewer")
    step = len(examples) / n
    return [(e.text, e.start, e.end) for e in (examples[int(k * step)] for k in range(n))]


CORPORA = {"lee": lee_sentences, "wordnet": wordnet_sentences}


def _run_one(
    model_name: str, corpus: str, approach: str, n: int, threads: int, batch_size: int, repeats: int, queue
) -> None:
    import torch

    torch.set_num_threads(threads)
    from contextlens.core.contextual_models import ContextualModel, load_contextual
    from contextlens.core.occurrences import Occurrence

    model: ContextualModel = load_contextual(model_name, "int8" if approach == "int8" else "fp32")
    data = CORPORA[corpus](n)
    occs = [Occurrence(t, s, e) for t, s, e in data]
    tok = model.tokenizer
    net = model.model
    lengths = [len(tok(t)["input_ids"]) for t, _, _ in data]
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # warm-up (first-call allocations, lazy init), not timed
    with torch.inference_mode():
        net(**tok([data[0][0]], return_tensors="pt"))

    def seeds() -> None:
        kept = []
        for text, s, e in data:
            inputs = tok(text, return_tensors="pt", return_offsets_mapping=True)
            offsets = inputs.pop("offset_mapping")[0].tolist()
            with torch.inference_mode():
                out = net(**inputs, output_hidden_states=True)
            kept.append(out.hidden_states)  # every layer, every token, kept as the seed does
            idx = [i for i, (a, b) in enumerate(offsets) if b > a and a < e and b > s]
            _ = [h[0, idx].mean(0) for h in out.hidden_states]

    def ours() -> None:
        model._cache.clear()
        model.encode_occurrences(occs, batch_size=batch_size)

    def partial() -> None:
        model._cache.clear()
        model.encode_occurrences(occs, layers=range(model.num_layers // 2 + 1), batch_size=batch_size)

    encoded = [tok(t)["input_ids"] for t, _, _ in data]
    order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
    batches = [[encoded[i] for i in order[k : k + batch_size]] for k in range(0, len(order), batch_size)]
    padded = [model.pad(b) for b in batches]  # tokenization and padding excluded from "bare"

    def bare() -> None:
        for ids, mask in padded:
            with torch.inference_mode():
                net(input_ids=ids, attention_mask=mask)

    work = {"seeds": seeds, "ours": ours, "bare": bare, "partial": partial, "int8": ours}[approach]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    seconds = min(times)  # best of the repeats: the least disturbed by other processes
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    blocks = model.num_layers // 2 if approach == "partial" else model.num_layers
    flops = sum(model_flops(model, n_tok, blocks) for n_tok in lengths)
    extra = {}
    if approach == "int8":  # after the clock and the memory reading: it loads the fp32 model too
        from contextlens.core.precision import drift

        d = drift(model_name)
        extra = {"int8_mean_cosine": list(d.mean_cosine), "int8_layer_min_cosine": list(d.min_cosine)}
    queue.put(
        {
            **extra,
            "gflops_per_s": flops / seconds / 1e9,
            "model": model_name,
            "corpus": corpus,
            "approach": approach,
            "sentences": n,
            "tokens": int(sum(lengths)),
            "seconds": seconds,
            "all_seconds": times,
            "tokens_per_s": sum(lengths) / seconds,
            "peak_rss_mb": peak / 1024,
            "rss_growth_mb": (peak - base_rss) / 1024,
        }
    )


def model_flops(model, tokens: int, blocks: int) -> float:
    """Forward FLOPs of one sequence through ``blocks`` blocks: 2 per weight of the linear layers
    per token (q, k, v, out: 4 d^2; feed-forward: 2 d ff) and attention's scores and mix (4 seq d)."""
    d, ff = model.hidden_size, int(model.config.intermediate_size)
    return blocks * tokens * (2 * (4 * d * d + 2 * d * ff) + 4 * tokens * d)


def _gemm(threads: int, queue) -> None:
    import torch

    torch.set_num_threads(threads)
    n = 2048
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = min(_timed(lambda: torch.mm(a, b)) for _ in range(5))
    queue.put(2 * n**3 / best / 1e9)


def _timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def gemm_gflops(threads: int) -> float:
    """The machine's large-GEMM fp32 throughput at ``threads`` threads, in its own process."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_gemm, args=(threads, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def theoretical_gflops(threads: int) -> float:
    """threads x 32 flops per cycle x the clock /proc/cpuinfo reports (0 if it reports none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            mhz = next(float(line.split(":")[1]) for line in f if line.startswith("cpu MHz"))
    except (OSError, StopIteration, ValueError):
        return 0.0
    return threads * FLOPS_PER_CYCLE * mhz / 1000


def measure(model_name: str, corpus: str, approach: str, n: int, threads: int, batch_size: int, repeats: int) -> dict:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_run_one, args=(model_name, corpus, approach, n, threads, batch_size, repeats, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["minilm", "mpnet"])
    parser.add_argument("--corpus", nargs="+", choices=sorted(CORPORA), default=["lee", "wordnet"])
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per approach; the best is kept")
    parser.add_argument(
        "--approaches", nargs="+", choices=APPROACHES, default=list(APPROACHES), help="a subset (ours, bare always run)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()

    gemm = gemm_gflops(args.threads)
    peak = theoretical_gflops(args.threads)
    if not args.json:
        print(f"  GEMM {gemm:.1f} GFLOP/s at {args.threads} threads (theoretical peak {peak:.1f})", file=sys.stderr)
    runs, summary = [], []
    for corpus in args.corpus:
        for model_name in args.models:
            by = {}
            for approach in [a for a in APPROACHES if a in {*args.approaches, "ours", "bare"}]:
                r = measure(model_name, corpus, approach, args.sentences, args.threads, args.batch_size, args.repeats)
                by[approach] = r
                runs.append(r)
                if not args.json:
                    print(f"  {corpus:7s} {model_name:7s} {approach:5s} {r['seconds']:7.2f} s", file=sys.stderr)
            for r in by.values():
                r["share_of_gemm_peak"] = r["gflops_per_s"] / gemm
                r["share_of_theoretical_peak"] = r["gflops_per_s"] / peak if peak else None
            tps = {a: by[a]["tokens_per_s"] for a in by}
            ratios = {
                "ours/seeds": tps["ours"] / tps["seeds"] if "seeds" in tps else None,
                "ours/bare": tps["ours"] / tps["bare"],
                "bare/seeds": tps["bare"] / tps["seeds"] if "seeds" in tps else None,
                "partial/full": tps["partial"] / tps["ours"] if "partial" in tps else None,
                "int8/fp32": tps["int8"] / tps["ours"] if "int8" in tps else None,
                "int8_min_cosine": min(by["int8"]["int8_mean_cosine"]) if "int8" in by else None,
                "share_of_gemm_peak": by["ours"]["share_of_gemm_peak"],
                "bare_share_of_gemm_peak": by["bare"]["share_of_gemm_peak"],
                "rss_growth/bare": by["ours"]["rss_growth_mb"] / max(by["bare"]["rss_growth_mb"], 1e-9),
            }
            summary.append({"corpus": corpus, "model": model_name, **ratios, "targets": TARGETS.get(model_name, {})})

    if args.json:
        doc = {"threads": args.threads, "batch_size": args.batch_size, "gemm_gflops": gemm, "theoretical_gflops": peak}
        print(json.dumps({**doc, "runs": runs, "summary": summary}))
        return
    print(
        f"\n{args.sentences} sentences per corpus, {args.threads} threads, batch size {args.batch_size}, "
        f"best of {args.repeats}; GEMM {gemm:.1f} GFLOP/s, theoretical peak {peak:.1f} GFLOP/s\n"
    )
    print(
        f"{'corpus':9s}{'model':8s}{'approach':10s}{'seconds':>9s}{'tokens/s':>11s}{'GFLOP/s':>9s}{'of GEMM':>9s}"
        f"{'peak RSS MB':>13s}{'RSS growth MB':>15s}"
    )
    for r in runs:
        print(
            f"{r['corpus']:9s}{r['model']:8s}{r['approach']:10s}{r['seconds']:9.2f}{r['tokens_per_s']:11.0f}"
            f"{r['gflops_per_s']:9.1f}{r['share_of_gemm_peak']:9.2f}{r['peak_rss_mb']:13.0f}{r['rss_growth_mb']:15.0f}"
        )
    print()
    for s in summary:
        checks = "  ".join(
            f"{k} {s[k]:.2f} (target >= {v}: {'met' if s[k] >= v else 'NOT met'})"
            for k, v in s["targets"].items()
            if s[k] is not None
        )
        shown = ("ours/seeds", "ours/bare", "bare/seeds", "partial/full", "int8/fp32", "int8_min_cosine")
        shown += ("rss_growth/bare",)
        ratios = "  ".join(f"{k} {s[k]:.{4 if 'cosine' in k else 2}f}" for k in shown if s[k] is not None)
        print(f"{s['corpus']:9s}{s['model']:8s} {ratios}   {checks}")


if __name__ == "__main__":
    main()
