"""A static model against its teacher: encode speed on the Lee documents, side by side in one run.

Issue 22's target: the distilled static model encodes Lee documents at least 100x faster than its
teacher. This script encodes the 350 Lee documents (50 rated + 300 background) with each static
model (a table look-up and a mean per document, no forward pass) and then with each contextual
teacher (its sentence embedding, batches of 32, after an 8-document warm-up), ``--repeats`` times
each, and prints the best time, documents/s, words/s, the ratio to the first teacher (the
baseline) and the memory of the vectors or weights.

    python benchmarks/static_speed.py --static glove-50d m2v-minilm --teacher minilm
                                      [--repeats 3] [--threads N] [--json]

Static names made with ``contextlens static train|distill`` are read from ``$CONTEXTLENS_CACHE``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--static", nargs="+", default=["glove-50d"])
    parser.add_argument("--teacher", nargs="+", default=["minilm"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import torch

    from contextlens.analyses.benchmarks.encode_speed import timed_encodings, word_count
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.static_models import load_static
    from contextlens.data.lee import load_lee

    if args.threads:
        torch.set_num_threads(args.threads)
    lee = load_lee()
    texts = lee.documents + lee.background
    words = word_count(texts)
    systems = [load_static(s) for s in args.static] + [load_contextual(t) for t in args.teacher]
    best: dict[str, tuple[float, int]] = {}
    for _ in range(max(1, args.repeats)):
        for name, _enc, seconds, nbytes in timed_encodings(systems, texts):
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, nbytes)
    baseline = best[args.teacher[0]][0]
    rows = [
        {
            "system": name,
            "seconds": round(seconds, 4),
            "documents_per_s": round(len(texts) / seconds, 1),
            "words_per_s": round(words / seconds),
            "times_faster_than_" + args.teacher[0]: round(baseline / seconds, 1),
            "megabytes": round(nbytes / 1e6, 1),
        }
        for name, (seconds, nbytes) in best.items()
    ]
    meta = {"documents": len(texts), "words": words, "torch_threads": torch.get_num_threads(), "repeats": args.repeats}
    if args.json:
        print(json.dumps({"rows": rows, "meta": meta}, indent=2))
        return
    threads = meta["torch_threads"]
    print(f"Lee: {len(texts)} documents, {words:,} words; torch threads {threads}; best of {args.repeats}")
    print(f"{'system':<14} {'seconds':>9} {'docs/s':>10} {'words/s':>11} {'x ' + args.teacher[0]:>10} {'MB':>7}")
    for r in rows:
        ratio = r["times_faster_than_" + args.teacher[0]]
        print(
            f"{r['system']:<14} {r['seconds']:>9.3f} {r['documents_per_s']:>10,.1f} {r['words_per_s']:>11,} "
            f"{ratio:>10,.1f} {r['megabytes']:>7,.1f}"
        )


if __name__ == "__main__":
    main()
