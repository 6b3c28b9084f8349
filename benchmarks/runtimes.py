"""Other runtimes against the bare torch forward: ONNX Runtime (fp32 and int8) and torch.compile.

Issue 11 adopts another runtime only if it runs at >= 1.2x the bare torch forward on this
machine with every hidden state exact to 1e-4; for int8, whichever of torch's and ONNX Runtime's
dynamic quantization is faster at comparable drift. This script measures that, on the inputs of
``benchmarks/extract.py`` (Lee and WordNet sentences, sorted by length, batches of 32, padded
before the clock, 2 threads), every layer's hidden states returned by every backend:

  torch           the baseline: ``model(ids, mask, output_hidden_states=True)``, sdpa, fp32
  ort             ONNX Runtime, fp32: ``torch.onnx.export`` (TorchScript exporter, dynamic batch
                  and sequence axes, one output per layer) + ``onnxruntime.transformers.optimizer``
                  (model type bert: fused layer norms, gelu, attention where its pattern is found)
  compile         ``torch.compile`` (inductor, CPU, ``dynamic=True``) of the same forward; the
                  compile time is reported apart (``setup_s``: first call; ``first_pass_s``)
  torch-int8      contextlens's int8 (core/precision.py: dynamic int8 of every linear layer but
                  the feed-forward down projection)
  torch-int8-all  torch's dynamic int8 of every linear layer
  ort-int8        ``onnxruntime.quantization.quantize_dynamic`` of the weight MatMuls of the
                  optimized graph, the down projections kept fp32 (contextlens's rule)
  ort-int8-all    the same, every weight MatMul

Backends run interleaved in one process (one pass over all batches each, in turn, the order
rotated every round), best of ``--repeats``, after one untimed pass that is also the exactness
check: the largest absolute difference from the torch fp32 forward over every layer's states of
every real (non-padding) token of every batch (``max_abs_diff``; padding rows are meaningless).
int8 backends get their drift the way core/precision.py measures it: 64 WordNet usage examples,
per layer the mean and minimum cosine between fp32 and int8 states of every real token.
The machine's load average (``os.getloadavg``) is taken before and after and printed with the
table; on a busy machine, read the ratios, not the tokens/s.

Needs the optional extra: ``pip install '.[runtimes]'`` (onnx, onnxruntime).

    python benchmarks/runtimes.py [--models minilm mpnet] [--corpus lee wordnet] [--sentences 200]
                                  [--threads 2] [--batch-size 32] [--repeats 3] [--backends ...] [--json]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BACKENDS = ("torch", "ort", "compile", "torch-int8", "torch-int8-all", "ort-int8", "ort-int8-all")
INT8 = {"torch-int8", "torch-int8-all", "ort-int8", "ort-int8-all"}
EXACT = 1e-4  # the bar for "exact" (fp32 backends)
ADOPT = 1.2  # the bar for speed, x the bare torch forward

Run = Callable[[object, object], list]  # (ids, mask) -> hidden states 0..L, numpy or torch

# the export, fusion and quantization are contextlens's own (--runtime onnx); this script times them
from contextlens.core.onnx_runtime import HiddenStates, export_onnx, optimize_onnx, quantize_onnx  # noqa: E402


def runtime_versions() -> dict[str, str]:
    out = {}
    for name in ("onnx", "onnxruntime"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            continue
    return out


def load_avg() -> tuple[float, float, float]:
    return os.getloadavg()


def torch_run(module: torch.nn.Module) -> Run:
    def run(ids, mask):
        with torch.inference_mode():
            return list(module(ids, mask))

    return run


def compiled_run(net: torch.nn.Module) -> Run:
    """torch.compile of the forward (inductor, dynamic shapes). Nothing compiles here: the first
    call does, and :func:`check_and_warm` times it as the backend's ``setup_s``."""
    return torch_run(torch.compile(HiddenStates(net), backend="inductor", dynamic=True))


def ort_run(path: str, threads: int) -> Run:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

    def run(ids, mask):
        return session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})

    return run


def as_numpy(states: list) -> list:
    return [s.numpy() if hasattr(s, "numpy") else s for s in states]


def max_abs_diff(ref: list, got: list, mask) -> float:
    real = mask.bool().numpy()
    return max(float(abs(a[real] - b[real]).max()) for a, b in zip(as_numpy(ref), as_numpy(got), strict=True))


def corpus_batches(model, corpus: str, n: int, batch_size: int) -> tuple[list, int]:
    """extract.py's 'bare' inputs: tokenized, sorted longest first, padded before the clock."""
    from extract import CORPORA

    encoded = [model.tokenizer(t)["input_ids"] for t, _, _ in CORPORA[corpus](n)]
    encoded.sort(key=len, reverse=True)
    return [model.pad(encoded[k : k + batch_size]) for k in range(0, len(encoded), batch_size)], sum(map(len, encoded))


def build_backends(model, names: list[str], threads: int, workdir: str) -> tuple[dict[str, Run], dict[str, dict]]:
    """Every requested backend for one model, with what setting it up cost and produced."""
    from contextlens.core.precision import quantize

    net, config = model.model, model.config
    runs: dict[str, Run] = {"torch": torch_run(HiddenStates(net))}
    info: dict[str, dict] = {"torch": {"setup_s": 0.0}}
    ff, d = int(config.intermediate_size), int(config.hidden_size)
    for label, down in (("torch-int8", False), ("torch-int8-all", True)):
        if label in names:
            start = time.perf_counter()
            runs[label] = torch_run(HiddenStates(quantize(copy.deepcopy(net), down_projection=down)))
            info[label] = {"setup_s": time.perf_counter() - start}
    if any(n.startswith("ort") for n in names):
        from contextlens.core.precision import drift_sentences

        sample = model.pad([model.tokenizer(t)["input_ids"] for t in drift_sentences(2)])
        raw, opt = os.path.join(workdir, f"{model.name}.onnx"), os.path.join(workdir, f"{model.name}-opt.onnx")
        start = time.perf_counter()
        export_onnx(net, model.num_layers, sample, raw)
        exported = time.perf_counter()
        fused = optimize_onnx(raw, opt, config)
        ort_setup = {"export_s": exported - start, "optimize_s": time.perf_counter() - exported, "fused": fused}
        if "ort" in names:
            runs["ort"] = ort_run(opt, threads)
            info["ort"] = {**ort_setup, "setup_s": time.perf_counter() - start}
        for label, down in (("ort-int8", False), ("ort-int8-all", True)):
            if label in names:
                q = os.path.join(workdir, f"{model.name}-{label}.onnx")
                begin = time.perf_counter()
                count = quantize_onnx(opt, q, ff, d, down)
                runs[label] = ort_run(q, threads)
                info[label] = {**ort_setup, "quantize_s": time.perf_counter() - begin, "quantized_nodes": count}
                info[label]["setup_s"] = ort_setup["export_s"] + ort_setup["optimize_s"] + info[label]["quantize_s"]
    if "compile" in names:
        runs["compile"] = compiled_run(net)
        info["compile"] = {"setup_s": None}  # the first call, timed in check_and_warm
    return {k: runs[k] for k in names if k in runs}, info


def check_and_warm(runs: dict[str, Run], info: dict[str, dict], batches: list) -> dict[str, dict]:
    """One untimed pass per backend: its first-pass time (torch.compile's compile included) and
    its largest difference from the torch fp32 states on real tokens."""
    out = {label: {"first_pass_s": 0.0, "max_abs_diff": 0.0} for label in runs}
    for k, (ids, mask) in enumerate(batches):
        ref = runs["torch"](ids, mask)
        for label, run in runs.items():
            start = time.perf_counter()
            got = run(ids, mask)
            took = time.perf_counter() - start
            out[label]["first_pass_s"] += took
            if k == 0 and info[label].get("setup_s") is None:
                info[label]["setup_s"] = took  # torch.compile: the first call compiles
            out[label]["max_abs_diff"] = max(out[label]["max_abs_diff"], max_abs_diff(ref, got, mask))
    return out


def timed_rounds(runs: dict[str, Run], batches: list, repeats: int) -> dict[str, list[float]]:
    """Every backend in turn, ``repeats`` rounds, the order rotated each round."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    order = list(runs)
    for r in range(repeats):
        for label in order[r % len(order) :] + order[: r % len(order)]:
            start = time.perf_counter()
            for ids, mask in batches:
                runs[label](ids, mask)
            times[label].append(time.perf_counter() - start)
    return times


def drift_of(model, runs: dict[str, Run]) -> dict[str, dict]:
    """Per int8 backend: per-layer mean/min cosine with the torch fp32 states on the drift set."""
    from contextlens.core.precision import compare_states, drift_batch, drift_sentences

    ids, mask = drift_batch(model, drift_sentences())
    ref = runs["torch"](ids, mask)
    out = {}
    for label in runs:
        if label in INT8:
            got = [torch.as_tensor(state) for state in runs[label](ids, mask)]  # ONNX Runtime's are numpy
            compared = compare_states(ref, got, mask)
            means, mins = compared["mean_cosine"], compared["min_cosine"]
            out[label] = {"drift_mean_cosine": means, "drift_min_cosine": mins, "drift_lowest_mean": min(means)}
    return out


def bench_model(name: str, args, workdir: str) -> list[dict]:
    from contextlens.core.contextual_models import load_contextual

    model = load_contextual(name)
    runs, info = build_backends(model, args.backends, args.threads, workdir)
    drift = drift_of(model, runs)
    rows = []
    for corpus in args.corpus:
        batches, tokens = corpus_batches(model, corpus, args.sentences, args.batch_size)
        checked = check_and_warm(runs, info, batches)
        load = load_avg()
        times = timed_rounds(runs, batches, args.repeats)
        base = min(times["torch"])
        for label in runs:
            best = min(times[label])
            row = {"model": name, "corpus": corpus, "backend": label, "sentences": args.sentences, "tokens": tokens}
            row |= {"seconds": best, "all_seconds": times[label], "tokens_per_s": tokens / best}
            row |= {"ratio_to_torch": base / best, **checked[label], **info[label], **drift.get(label, {})}
            row |= {"exact": checked[label]["max_abs_diff"] <= EXACT, "load_at_start": load}
            rows.append(row)
            print(f"  {name:7s} {corpus:8s} {label:15s} {best:7.2f} s  x{base / best:.2f}", file=sys.stderr)
    return rows


def decide(rows: list[dict]) -> dict:
    """The issue's rule: an fp32 runtime needs >= 1.2x torch and exactness on every model and
    corpus; int8: the faster of torch's and ONNX Runtime's at the same quantization rule."""
    out = {}
    for label in {r["backend"] for r in rows} - {"torch"} - INT8:
        mine = [r for r in rows if r["backend"] == label]
        low = min(r["ratio_to_torch"] for r in mine)
        ok = low >= ADOPT and all(r["exact"] for r in mine)
        worst = max(r["max_abs_diff"] for r in mine)
        out[label] = {"lowest_ratio": low, "worst_diff": worst, "meets_bar_in_this_run": ok}
    for rule, (t, o) in {"keep-down": ("torch-int8", "ort-int8"), "all": ("torch-int8-all", "ort-int8-all")}.items():
        best = {(r["backend"], r["model"], r["corpus"]): r["seconds"] for r in rows}
        ratios = [s / best[(o, m, c)] for (b, m, c), s in best.items() if b == t and (o, m, c) in best]
        if ratios:
            out[f"int8 {rule}: ort/torch speed"] = {"min": min(ratios), "max": max(ratios)}
    return out


def print_table(rows: list[dict], args, load_before, load_after, decision: dict) -> None:
    print(
        f"\n{args.sentences} sentences per corpus, {args.threads} threads, batch {args.batch_size}, best of "
        f"{args.repeats}, interleaved; load average before {load_before[0]:.2f} {load_before[1]:.2f} "
        f"{load_before[2]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} (1/5/15 min)\n"
    )
    head = f"{'model':8s}{'corpus':9s}{'backend':16s}{'best s':>8s}{'tokens/s':>10s}{'x torch':>9s}"
    print(head + f"{'max |diff|':>12s}{'exact':>7s}{'setup s':>9s}{'1st pass s':>11s}  int8 drift (lowest mean / min)")
    for r in rows:
        drift = f"  {r['drift_lowest_mean']:.4f} / {min(r['drift_min_cosine']):.4f}" if "drift_lowest_mean" in r else ""
        exact = "-" if r["backend"] in INT8 else "yes" if r["exact"] else "no"
        setup = f"{r['setup_s']:9.1f}" if r.get("setup_s") is not None else f"{'':9s}"
        print(
            f"{r['model']:8s}{r['corpus']:9s}{r['backend']:16s}{r['seconds']:8.2f}{r['tokens_per_s']:10.0f}"
            f"{r['ratio_to_torch']:9.2f}{r['max_abs_diff']:12.1e}{exact:>7s}{setup}"
            f"{r['first_pass_s']:11.2f}{drift}"
        )
    print()
    if max(load_before[0], load_after[0]) > 1:
        print("load average above 1: ratios from a busy machine are not a verdict (see docs/speed.md)")
    for k, v in decision.items():
        print(f"{k}: " + ", ".join(f"{a} {b:.3g}" if isinstance(b, float) else f"{a} {b}" for a, b in v.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["minilm", "mpnet"])
    parser.add_argument("--corpus", nargs="+", choices=["lee", "wordnet"], default=["lee", "wordnet"])
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2, help="torch and ONNX Runtime intra-op threads")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds; the best of each backend is kept")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS), help="torch always runs")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    args.backends = ["torch", *(b for b in BACKENDS if b in args.backends and b != "torch")]

    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        if any(b.startswith("ort") for b in args.backends):
            msg = "ONNX Runtime is not installed: pip install '.[runtimes]' (or drop the ort backends)"
            raise SystemExit(msg) from exc
    torch.set_num_threads(args.threads)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # extract.py's corpora
    started, load_before = time.time(), load_avg()
    with tempfile.TemporaryDirectory(prefix="contextlens-runtimes-") as workdir:
        rows = [row for name in args.models for row in bench_model(name, args, workdir)]
    load_after = load_avg()
    decision = decide(rows)
    if args.json:
        setup = {"threads": args.threads, "batch_size": args.batch_size, "repeats": args.repeats}
        versions = {"torch": torch.__version__, **runtime_versions()}
        doc = {**setup, **versions, "load_before": load_before, "load_after": load_after}
        doc |= {"wall_s": time.time() - started, "runs": rows, "decision": decision}
        print(json.dumps(doc))
        return
    print_table(rows, args, load_before, load_after, decision)
    versions = ", ".join(f"{k} {v}" for k, v in {"torch": torch.__version__, **runtime_versions()}.items())
    print(f"\n{time.time() - started:.0f} s in all ({versions})")


if __name__ == "__main__":
    main()
