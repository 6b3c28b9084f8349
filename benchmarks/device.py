"""contextlens against the bare transformers forward, per device and precision (issue 34).

On the same sentences (WordNet usage examples, evenly spaced), each row runs two paths:

  bare         what a user writes with transformers alone: ``AutoModel`` at the precision (int8:
               the same quantized network contextlens makes, core/precision.py; fp16/bf16: the
               network cast) on the device, the texts sorted by token count, ``tokenizer(batch,
               padding=True)``, ``model(**batch).last_hidden_state`` mean-pooled over the mask
  contextlens  ``load_contextual(model, precision, "torch", device).embed_texts(texts)``: the same
               vectors (mean of the top layer), with contextlens's batching (batch_size rows on
               the CPU, a token budget on a GPU) and its layer hooks

Both clocks include tokenizing. The two paths are timed in one process, interleaved (a pass of
each in turn, the order swapped every round, best of ``--repeats`` after an untimed round), so a
change of the machine's load hits both alike. Reported per row: real (unpadded) tokens per
second, contextlens's ratio to the bare forward, peak memory (on a GPU
``torch.cuda.max_memory_allocated``; on the CPU the process's peak RSS, ``ru_maxrss``: for the
memory each path runs once more alone in its own process), and the largest |difference| between
the two paths' vectors (they compute the same thing). fp32 on the CPU is the reference row. The machine's
load average is printed with the table: on a busy machine read the ratios, not the tokens/s.

    python benchmarks/device.py [--model minilm] [--sentences 512] [--batch-size 32] [--threads 2]
                                [--repeats 3] [--devices cpu cuda] [--precisions fp32 int8 bf16 fp16] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PRECISIONS = ("fp32", "int8", "bf16", "fp16")
HALF = {"fp16": "float16", "bf16": "bfloat16"}


def sentences(n: int) -> list[str]:
    from contextlens.core.precision import drift_sentences

    return drift_sentences(n)


def bare(model_name: str, precision: str, device: str, texts: list[str], batch_size: int):  # noqa: ANN201
    """The bare forward's runner: a function that returns the (n, d) vectors of ``texts``."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from contextlens.core.precision import quantize
    from contextlens.core.resources import resolve_contextual

    _name, source, revision = resolve_contextual(model_name)
    tokenizer = AutoTokenizer.from_pretrained(str(source), revision=revision)
    net = AutoModel.from_pretrained(str(source), revision=revision, attn_implementation="sdpa").eval()
    if precision == "int8":
        net = quantize(net)
    net.to(device=device, dtype=getattr(torch, HALF[precision]) if precision in HALF else None)
    lengths = [len(ids) for ids in tokenizer(texts, truncation=True)["input_ids"]]  # before the clock
    order = sorted(range(len(texts)), key=lambda i: -lengths[i])  # longest first, as contextlens batches

    def run():  # noqa: ANN202
        out = torch.empty((len(texts), net.config.hidden_size))
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                enc = tokenizer([texts[i] for i in rows], padding=True, truncation=True, return_tensors="pt").to(device)
                states = net(**enc).last_hidden_state.float()
                mask = enc["attention_mask"].unsqueeze(-1).float()
                out[rows] = ((states * mask).sum(1) / mask.sum(1).clamp(min=1)).cpu()
        return out.numpy()

    return run


def ours(model_name: str, precision: str, device: str, texts: list[str], batch_size: int):  # noqa: ANN201
    from contextlens.core.contextual_models import load_contextual

    model = load_contextual(model_name, precision, "torch", device)
    return lambda: model.embed_texts(texts, layer=-1, mode="mean", batch_size=batch_size)


def _setup(args: argparse.Namespace) -> list[str]:
    import torch

    from contextlens.core.threads import set_threads

    torch.set_num_threads(args.threads)
    set_threads(args.threads)
    return sentences(args.sentences)


def one_path(args: argparse.Namespace) -> dict:
    """One path of one row alone in this process, for its peak memory: one pass; its vectors."""
    import numpy as np
    import torch

    texts = _setup(args)
    cuda = args.device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    make = bare if args.path == "bare" else ours
    vectors = make(args.model, args.precision, args.device, texts, args.batch_size)()
    peak = torch.cuda.max_memory_allocated() if cuda else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    np.save(args.vectors, vectors)
    return {"peak_bytes": int(peak), "memory": "device" if cuda else "rss"}


def both_timed(args: argparse.Namespace) -> dict:
    """Both paths of one row in this process, timed interleaved (one pass of each in turn, the
    order swapped every round) so a change of the machine's load hits both alike; best of each."""
    import torch

    texts = _setup(args)
    runs = {p: make(args.model, args.precision, args.device, texts, args.batch_size) for p, make in PATHS.items()}
    cuda = args.device.startswith("cuda")
    best = dict.fromkeys(runs, float("inf"))
    for n in range(args.repeats + 1):  # round 0 is the untimed pass
        for path in list(runs)[:: 1 if n % 2 else -1]:
            started = time.perf_counter()
            runs[path]()
            if cuda:
                torch.cuda.synchronize()
            if n:
                best[path] = min(best[path], time.perf_counter() - started)
    from transformers import AutoTokenizer

    from contextlens.core.resources import resolve_contextual

    tokenizer = AutoTokenizer.from_pretrained(str(resolve_contextual(args.model)[1]))
    tokens = sum(len(ids) for ids in tokenizer(texts, truncation=True)["input_ids"])
    return {"seconds": best, "tokens": tokens}


PATHS = {"bare": bare, "contextlens": ours}


def _child(args: argparse.Namespace, what: str, device: str, precision: str, vectors: str) -> dict | str:
    cmd = [sys.executable, __file__, "--one", what, "--model", args.model, "--sentences", str(args.sentences),
           "--batch-size", str(args.batch_size), "--threads", str(args.threads), "--repeats", str(args.repeats),
           "--device", device, "--precision", precision, "--vectors", vectors]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
    return json.loads(done.stdout.strip().splitlines()[-1])


def row(args: argparse.Namespace, device: str, precision: str) -> dict:
    """One row: both paths timed in one process, then each alone in its own (its own peak memory)."""
    import tempfile

    import numpy as np

    out: dict = {"device": device, "precision": precision}
    with tempfile.TemporaryDirectory() as tmp:
        timed = _child(args, "both", device, precision, os.path.join(tmp, "unused.npy"))
        if isinstance(timed, str):
            return out | {"error": timed}
        for path in PATHS:
            alone = _child(args, path, device, precision, os.path.join(tmp, f"{path}.npy"))
            if isinstance(alone, str):
                return out | {"error": alone}
            out[path] = alone | {"seconds": timed["seconds"][path], "tokens": timed["tokens"]}
        diff = np.abs(np.load(os.path.join(tmp, "bare.npy")) - np.load(os.path.join(tmp, "contextlens.npy"))).max()
    out["max_abs_diff"] = float(diff)
    out["ratio"] = out["bare"]["seconds"] / out["contextlens"]["seconds"]  # > 1: contextlens is faster
    return out


def table(rows: list[dict], load: tuple[float, float]) -> None:
    print(f"load average {load[0]:.1f} before, {load[1]:.1f} after")
    print("| device | precision | bare tokens/s | contextlens tokens/s | contextlens / bare | peak memory bare | "
          "peak memory contextlens | max abs diff |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['device']} | {r['precision']} | {r['error']} | | | | | |")
            continue
        b, c = r["bare"], r["contextlens"]
        kind = "RSS" if b["memory"] == "rss" else "device"
        print(f"| {r['device']} | {r['precision']} | {b['tokens'] / b['seconds']:,.0f} | "
              f"{c['tokens'] / c['seconds']:,.0f} | {r['ratio']:.2f}x | {b['peak_bytes'] / 2**20:,.0f} MiB {kind} | "
              f"{c['peak_bytes'] / 2**20:,.0f} MiB {kind} | {r['max_abs_diff']:.1e} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--devices", nargs="+", default=None, help="default: cpu, and cuda where torch sees one")
    parser.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", choices=("bare", "contextlens", "both"), help=argparse.SUPPRESS)  # a child's work
    parser.add_argument("--device", help=argparse.SUPPRESS)
    parser.add_argument("--precision", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        args.path = args.one
        print(json.dumps(both_timed(args) if args.one == "both" else one_path(args)))
        return
    from contextlens.core.devices import torch_cuda_count

    devices = args.devices or (["cpu"] + (["cuda:0"] if torch_cuda_count() else []))
    before = os.getloadavg()[0]
    rows = [row(args, d, p) for d in devices for p in args.precisions if not (p == "int8" and d != "cpu")]
    load = (before, os.getloadavg()[0])
    if args.json:
        print(json.dumps({"model": args.model, "sentences": args.sentences, "load": load, "rows": rows}, indent=2))
    else:
        table(rows, load)


if __name__ == "__main__":
    main()
