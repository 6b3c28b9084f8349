"""Extraction speed and memory: contextlens vs the seeds' loop vs the bare batched forward pass.

For each model and corpus, on N real sentences, three ways to get every layer's hidden state of
one target word per sentence. Corpora: ``lee`` - gensim's Lee background corpus (news) split into
sentences of 6-60 words, target = the longest word; ``wordnet`` - WordNet 3.0 usage examples
(short), evenly spaced, target = the lemma the example illustrates. The approaches:

  (a) seeds  - the seeds' approach: one sentence per forward pass, all hidden states kept;
  (b) ours   - ``ContextualModel.encode_occurrences`` (batched by length, targets only);
  (c) bare   - the bare batched extractor as one would write it with Hugging Face: the same
               length-sorted batches, one tokenizer call per batch (``padding=True``, tensors)
               and the forward pass, outputs discarded;
  (f) forward - the forward pass alone over the same batches, tokenized and padded before the
               clock starts: an upper bound no extractor reaches (``ours/forward``);
  (d) partial - ours asking for layers 0..L/2 only (blocks above are not run);
  (e) int8   - ours with ``precision="int8"`` (all layers); its drift from fp32 (per layer mean
               and minimum cosine over a fixed sentence set) is measured after the clock stops.
  (g) onnx   - ours with ``runtime="onnx"`` (ONNX Runtime, fp32, all layers; the graph is exported
               and checked before the clock, once per machine): ``onnx/fp32``, and its largest
               difference from torch on the drift set (``onnx_max_abs_diff``);
  (h) onnx-int8 - ours with ONNX Runtime's int8 (``onnx-int8/fp32``, ``onnx_int8_min_cosine``).
  The two onnx approaches run only where ``pip install '.[runtimes]'`` put ONNX Runtime.

The machine's limit: a large fp32 matrix product (2048 x 2048, best of 5) at the same thread
count gives ``gemm_gflops``; each approach's model FLOPs per second (2 x the linear layers'
weights per token, plus attention's 4 x seq x d per layer) is reported as a share of it
(``share_of_gemm_peak``) and of the theoretical peak (threads x 32 fp32 flops per cycle - two
256-bit FMA pipes - x the clock in /proc/cpuinfo).

Every timed run is a fresh process (so peak memory, ru_maxrss, is its own), and the approaches
take turns: repeat r runs each approach once, in an order rotated by r, so a change in the
machine's load hits all of them alike. In each process the model is loaded, the approach's code runs once on
two sentences (library code paged in by a first call is not memory the approach keeps), then
the work runs once untimed (first-touch allocations) and twice timed (the better kept); peak RSS growth is
measured from before that untimed run. ``--repeats`` rounds; per approach the best time and the
median RSS growth are kept, with every value and the load average (1 min) at each run.

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
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

APPROACHES = ("seeds", "ours", "bare", "forward", "partial", "int8", "onnx", "onnx-int8")
ALWAYS = ("ours", "bare", "forward")
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


def _run_one(model_name: str, corpus: str, approach: str, n: int, threads: int, batch_size: int, queue) -> None:
    import torch

    torch.set_num_threads(threads)
    from contextlens.core.contextual_models import ContextualModel, load_contextual
    from contextlens.core.occurrences import Occurrence

    load_before = os.getloadavg()[0]
    precision = "int8" if approach in {"int8", "onnx-int8"} else "fp32"
    runtime = "onnx" if approach.startswith("onnx") else "torch"
    model: ContextualModel = load_contextual(model_name, precision, runtime)
    if runtime == "onnx":
        model.onnx_forward()  # exported and checked once per machine, never inside the clock
    data = CORPORA[corpus](n)
    tok = model.tokenizer
    net = model.model
    lengths = [len(tok(t)["input_ids"]) for t, _, _ in data]

    def build(data: list[tuple[str, int, int]]) -> dict:
        """Each approach's work on ``data``."""
        occs = [Occurrence(t, s, e) for t, s, e in data]
        sizes = [len(tok(t)["input_ids"]) for t, _, _ in data]
        # the same batches for bare and forward as ours makes: longest first (a stable sort)
        order = sorted(range(len(data)), key=lambda i: -sizes[i])
        text_batches = [[data[i][0] for i in order[k : k + batch_size]] for k in range(0, len(order), batch_size)]
        padded = [model.pad([tok(t)["input_ids"] for t in b]) for b in text_batches] if approach == "forward" else []

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
            model.clear_cache()
            model.encode_occurrences(occs, batch_size=batch_size)

        def partial() -> None:
            model.clear_cache()
            model.encode_occurrences(occs, layers=range(model.num_layers // 2 + 1), batch_size=batch_size)

        def bare() -> None:
            for texts in text_batches:
                inputs = tok(texts, padding=True, return_tensors="pt", return_token_type_ids=False)
                with torch.inference_mode():
                    net(**inputs)

        def forward() -> None:
            for ids, mask in padded:
                with torch.inference_mode():
                    net(input_ids=ids, attention_mask=mask)

        return {
            "seeds": seeds,
            "ours": ours,
            "bare": bare,
            "forward": forward,
            "partial": partial,
            "int8": ours,
            "onnx": ours,
            "onnx-int8": ours,
        }

    # the same code paths on two sentences first, before the memory baseline: library code paged
    # in by a first call (ru_maxrss counts it) is not memory the approach keeps alive
    build(data[:2])[approach]()
    work = build(data)
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    work[approach]()  # warm-up, untimed: first-touch allocations and lazy initialisation
    times = []
    for _ in range(2):  # two timed runs per process: the better one (a single run is at the mercy of one hiccup)
        start = time.perf_counter()
        work[approach]()
        times.append(time.perf_counter() - start)
    seconds = min(times)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    blocks = model.num_layers // 2 if approach == "partial" else model.num_layers
    flops = sum(model_flops(model, n_tok, blocks) for n_tok in lengths)
    extra = {}
    if (precision, runtime) != ("fp32", "torch"):  # after the clock and the memory reading
        from contextlens.core.drift import drift

        d = drift(model_name, precision, runtime)
        extra = {"int8_mean_cosine": list(d.mean_cosine), "int8_layer_min_cosine": list(d.min_cosine)}
        extra |= {"max_abs_diff": list(d.max_abs_diff)}
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
            "tokens_per_s": sum(lengths) / seconds,
            "peak_rss_mb": peak / 1024,
            "rss_growth_mb": (peak - base_rss) / 1024,
            "load_avg": [load_before, os.getloadavg()[0]],
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


def measure(model_name: str, corpus: str, approach: str, n: int, threads: int, batch_size: int) -> dict:
    """One timed run of ``approach`` in a fresh process."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_run_one, args=(model_name, corpus, approach, n, threads, batch_size, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def measure_interleaved(
    model_name: str, corpus: str, approaches: list[str], n: int, threads: int, batch_size: int, repeats: int
) -> dict[str, dict]:
    """``repeats`` rounds, each running every approach once in a fresh process, the order rotated
    per round; per approach the best time (other processes only ever slow a run down) and the
    median peak RSS growth, with every run's values kept."""
    runs: dict[str, list[dict]] = {a: [] for a in approaches}
    for r in range(repeats):
        for approach in approaches[r % len(approaches) :] + approaches[: r % len(approaches)]:
            runs[approach].append(measure(model_name, corpus, approach, n, threads, batch_size))
    out = {}
    for approach, rs in runs.items():
        best = min(rs, key=lambda x: x["seconds"])
        growth = [x["rss_growth_mb"] for x in rs]
        out[approach] = {
            **best,
            "all_seconds": [x["seconds"] for x in rs],
            "all_rss_growth_mb": [x["rss_growth_mb"] for x in rs],
            "rss_growth_mb": statistics.median(growth),
            "peak_rss_mb": max(x["peak_rss_mb"] for x in rs),
            "load_avg": [la for x in rs for la in x["load_avg"]],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["minilm", "mpnet"])
    parser.add_argument("--corpus", nargs="+", choices=sorted(CORPORA), default=["lee", "wordnet"])
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--repeats", type=int, default=3, help="rounds (a fresh process per approach per round); the best time is kept"
    )
    parser.add_argument(
        "--approaches", nargs="+", choices=APPROACHES, default=list(APPROACHES), help="a subset (ours, bare always run)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        if {"onnx", "onnx-int8"} & set(args.approaches):
            note = "ONNX Runtime is not installed (pip install '.[runtimes]'): onnx approaches skipped"
            print(f"  {note}", file=sys.stderr)
        args.approaches = [a for a in args.approaches if not a.startswith("onnx")]

    gemm = gemm_gflops(args.threads)
    peak = theoretical_gflops(args.threads)
    if not args.json:
        print(f"  GEMM {gemm:.1f} GFLOP/s at {args.threads} threads (theoretical peak {peak:.1f})", file=sys.stderr)
    runs, summary = [], []
    for corpus in args.corpus:
        for model_name in args.models:
            chosen = [a for a in APPROACHES if a in {*args.approaches, *ALWAYS}]
            by = measure_interleaved(
                model_name, corpus, chosen, args.sentences, args.threads, args.batch_size, args.repeats
            )
            for approach, r in by.items():
                runs.append(r)
                if not args.json:
                    print(f"  {corpus:7s} {model_name:7s} {approach:7s} {r['seconds']:7.2f} s", file=sys.stderr)
            for r in by.values():
                r["share_of_gemm_peak"] = r["gflops_per_s"] / gemm
                r["share_of_theoretical_peak"] = r["gflops_per_s"] / peak if peak else None
            tps = {a: by[a]["tokens_per_s"] for a in by}
            loads = [la for r in by.values() for la in r["load_avg"]]
            ratios = {
                "ours/seeds": tps["ours"] / tps["seeds"] if "seeds" in tps else None,
                "ours/bare": tps["ours"] / tps["bare"],
                "ours/forward": tps["ours"] / tps["forward"],
                "bare/seeds": tps["bare"] / tps["seeds"] if "seeds" in tps else None,
                "partial/full": tps["partial"] / tps["ours"] if "partial" in tps else None,
                "int8/fp32": tps["int8"] / tps["ours"] if "int8" in tps else None,
                "int8_min_cosine": min(by["int8"]["int8_mean_cosine"]) if "int8" in by else None,
                "onnx/fp32": tps["onnx"] / tps["ours"] if "onnx" in tps else None,
                "onnx/bare": tps["onnx"] / tps["bare"] if "onnx" in tps else None,
                "onnx_max_abs_diff": max(by["onnx"]["max_abs_diff"]) if "onnx" in by else None,
                "onnx-int8/fp32": tps["onnx-int8"] / tps["ours"] if "onnx-int8" in tps else None,
                "onnx_int8_min_cosine": min(by["onnx-int8"]["int8_mean_cosine"]) if "onnx-int8" in by else None,
                "share_of_gemm_peak": by["ours"]["share_of_gemm_peak"],
                "bare_share_of_gemm_peak": by["bare"]["share_of_gemm_peak"],
                "rss_growth/bare": by["ours"]["rss_growth_mb"] / max(by["bare"]["rss_growth_mb"], 1e-9),
                "rss_growth/forward": by["ours"]["rss_growth_mb"] / max(by["forward"]["rss_growth_mb"], 1e-9),
                "load_avg": [min(loads), max(loads)],
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
        shown = ("ours/seeds", "ours/bare", "ours/forward", "bare/seeds", "partial/full", "int8/fp32")
        shown += ("int8_min_cosine", "onnx/fp32", "onnx/bare", "onnx-int8/fp32", "onnx_int8_min_cosine")
        shown += ("onnx_max_abs_diff", "rss_growth/bare")
        digits = {k: ".4f" if "cosine" in k else ".1e" if "diff" in k else ".2f" for k in shown}
        ratios = "  ".join(f"{k} {s[k]:{digits[k]}}" for k in shown if s[k] is not None)
        load = f"load {s['load_avg'][0]:.1f}-{s['load_avg'][1]:.1f}"
        print(f"{s['corpus']:9s}{s['model']:8s} {ratios}   {checks}   {load}")


if __name__ == "__main__":
    main()
