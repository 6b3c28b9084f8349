"""Fine-tuning minilm for word senses, tested: the full `contextlens tune` run, then the held-out
benchmarks on the shipped and the tuned model side by side.

Issue 32 asks whether a model tuned on WordNet lemmas that no benchmark scores does better on the
benchmarks' held-out senses. This script tunes ``--base`` (minilm) on every usable lemma with the
default settings (``--threads`` torch threads; the wall time is printed beside the load average,
since the machine may be shared), then runs, for the base and the tuned model on torch fp32:
`eval wic` (test accuracy at the dev-chosen layer: the base minilm's is 0.561; the issue's target
is >= 0.62; fine-tuned BERT-large's published 0.655 is on the original WiC data, a different data
set), `eval wsd` (nearest-sense test accuracy at the dev-chosen layer, beside the most-frequent-
sense baseline) and `same-sense`'s rule (its test accuracy, the logistic fit's, and its
calibration error). ``--json`` prints one document; ``--out FILE`` also writes it.

    python benchmarks/tune.py [--base minilm] [--name minilm-senses] [--threads 2] [--size full]
                              [--max-steps N] [--epochs 4] [--glosses] [--json] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TARGET_WIC = 0.62
SHIPPED_WIC = 0.561  # docs/benchmarks.md: minilm, layer 6 chosen on dev
PUBLISHED_WIC = 0.655  # fine-tuned BERT-large on the original WiC test set (other data)


def evaluate(name: str, size: str) -> dict:
    """The held-out numbers of one model (torch fp32, every cache keyed by its folder)."""
    from contextlens.analyses.benchmarks.suite import run_wic, run_wsd
    from contextlens.analyses.lesson.same_sense import same_sense_rule
    from contextlens.core.contextual_models import load_contextual

    model = load_contextual(name, "fp32", "torch")
    started = time.perf_counter()
    wic = run_wic(model, "glove-50d", size)
    wsd = run_wsd(model, size)
    rule = same_sense_rule(model, "auto", size)
    per_layer = {r["layer"]: r["value"] for r in wic.select(system=wic.model, split="test", metric="accuracy")}
    wsd_best = wsd.meta["best_layer"]
    return {
        "model": name,
        "wic": {**wic.meta["best_layer"], "test_accuracy_per_layer": per_layer},
        "wsd": {**wsd_best, "most_frequent_sense_test": wsd.value(system="mfs-semcor", metric="accuracy")},
        "same_sense": {
            "layer": rule.layer,
            "test_accuracy": rule.test_accuracy,
            "logistic_test_accuracy": rule.logistic_test_accuracy,
            "test_ece": rule.test_ece,
        },
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="minilm")
    parser.add_argument("--name", default="minilm-senses")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", default="full", choices=["full", "quick"])
    parser.add_argument("--max-steps", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--glosses", action="store_true", help="each sense's definition as an extra view")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import torch

    from contextlens.analyses.tuning.train import tune
    from contextlens.core.threads import set_threads

    set_threads(args.threads)
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    started = time.perf_counter()
    tuned = tune(args.base, args.name, force=True, restart=True, max_steps=args.max_steps, epochs=args.epochs,
                 glosses=args.glosses, on_step=_say)  # fmt: skip
    wall = time.perf_counter() - started
    load_after = os.getloadavg()
    doc = {
        "tune": {k: v for k, v in tuned.to_dict().items() if k != "history"},
        "history": tuned.history,
        "wall_seconds": round(wall, 1),
        "threads": args.threads,
        "load_average_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "base": evaluate(args.base, args.size),
        "tuned": evaluate(args.name, args.size),
        "reference": {"shipped_wic": SHIPPED_WIC, "target_wic": TARGET_WIC, "published_bert_large_wic": PUBLISHED_WIC},
    }
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
    if args.json:
        print(json.dumps(doc, indent=2))
        return
    _print(doc)


def _say(step) -> None:  # noqa: ANN001
    if step.dev_auc is not None or step.step == 1:
        best = f"(best step {step.best_step}: {step.best_dev_auc:.4f})"
        dev = f"  dev AUC {step.dev_auc:.4f} {best}" if step.dev_auc else ""
        print(f"step {step.step}/{step.total}  loss {step.loss:.4f}{dev}", file=sys.stderr, flush=True)


def _print(doc: dict) -> None:
    t = doc["tune"]
    print(f"tuned {t['base']} -> {t['name']}: layer {t['layer']}, {t['steps']} steps (kept step {t['best_step']}, "
          f"stopped: {t['stopped']}), dev AUC {t['dev_auc_base']:.4f} -> {t['dev_auc_best']:.4f}")  # fmt: skip
    print(f"wall {doc['wall_seconds']} s on {doc['threads']} threads (training loop {t['train_seconds']} s); "
          f"load average {doc['load_average_before_after']}")  # fmt: skip
    check = t["data"]["check"]
    print(f"data: {t['data']['counts']}; benchmark lemmas in tuning {check['benchmark_lemmas_in_tuning']}, "
          f"benchmark sentences in tuning {check['benchmark_sentences_in_tuning']}; "
          f"split {t['data']['split_hash'][:12]}")  # fmt: skip
    base, tuned = doc["base"], doc["tuned"]
    rows = [
        ("WiC test acc. at dev layer", "wic", "test_accuracy_at_dev_layer"),
        ("WiC dev-chosen layer", "wic", "layer_by_dev"),
        ("WSD nearest-sense test acc. at dev layer", "wsd", "test_accuracy_at_dev_layer"),
        ("WSD dev-chosen layer", "wsd", "layer_by_dev"),
        ("WSD most-frequent-sense (test)", "wsd", "most_frequent_sense_test"),
        ("same-sense rule test acc.", "same_sense", "test_accuracy"),
        ("same-sense P>=0.5 test acc.", "same_sense", "logistic_test_accuracy"),
        ("same-sense ECE (test)", "same_sense", "test_ece"),
    ]
    print(f"{'':44} {base['model']:>14} {tuned['model']:>14}")
    for label, part, key in rows:
        print(f"{label:44} {_fmt(base[part].get(key)):>14} {_fmt(tuned[part].get(key)):>14}")
    print("WiC test accuracy per layer:")
    for layer in base["wic"]["test_accuracy_per_layer"]:
        b, u = base["wic"]["test_accuracy_per_layer"][layer], tuned["wic"]["test_accuracy_per_layer"].get(layer)
        print(f"  layer {layer}: {_fmt(b)} -> {_fmt(u)}")
    ref = doc["reference"]
    print(f"target WiC >= {ref['target_wic']}; published fine-tuned BERT-large {ref['published_bert_large_wic']} "
          "is on the original WiC test set (different data)")  # fmt: skip


def _fmt(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    main()
