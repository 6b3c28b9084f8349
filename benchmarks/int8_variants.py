"""int8 variants side by side: fp32, torch dynamic int8 on every linear layer, and contextlens's
int8 (every linear layer but the feed-forward down projection), on the same batches.

Runs are interleaved (fp32, all, ours, fp32, ...) and the best of ``--repeats`` kept, so a busy
machine slows all three alike; the drift of each against fp32 is measured on the fixed set of
:mod:`contextlens.core.precision` (per layer mean cosine; the lowest is printed).

    python benchmarks/int8_variants.py [--model minilm] [--sentences 200] [--repeats 3] [--threads 2]
"""

from __future__ import annotations

import argparse
import copy
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.drift import measure_drift
    from contextlens.core.precision import drift_sentences, quantize
    from extract import lee_sentences

    fp32 = load_contextual(args.model)
    variants = {"fp32": fp32}
    for label, down in (("int8 all linear", True), ("int8 contextlens", False)):
        twin = copy.copy(fp32)
        twin.model = quantize(copy.deepcopy(fp32.model), down_projection=down)
        variants[label] = twin
    encoded = [fp32.tokenizer(t)["input_ids"] for t, _, _ in lee_sentences(args.sentences)]
    encoded.sort(key=len, reverse=True)
    batches = [fp32.pad(encoded[k : k + 32]) for k in range(0, len(encoded), 32)]
    tokens = sum(map(len, encoded))
    best = dict.fromkeys(variants, float("inf"))
    for _ in range(args.repeats):
        for label, model in variants.items():
            start = time.perf_counter()
            with torch.inference_mode():
                for ids, mask in batches:
                    model.model(input_ids=ids, attention_mask=mask)
            best[label] = min(best[label], time.perf_counter() - start)
    texts = drift_sentences()
    setup = f"{args.sentences} Lee sentences ({tokens} tokens), {args.threads} threads, best of {args.repeats}"
    print(f"{args.model}, {setup}")
    for label, model in variants.items():
        low = min(measure_drift(fp32, model, texts).mean_cosine) if label != "fp32" else 1.0
        print(
            f"  {label:17s} {best[label]:6.2f} s  {tokens / best[label]:7.0f} tokens/s  "
            f"x{best['fp32'] / best[label]:.2f} of fp32  lowest per-layer mean cosine {low:.4f}"
        )


if __name__ == "__main__":
    main()
