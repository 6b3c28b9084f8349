"""`contextlens tune report NAME`: what fine-tuning changed, layer by layer, and what it cost.

Per layer: word-in-context accuracy of the base and the tuned model (the `eval wic` pairs: the
threshold chosen on dev lemmas, accuracy on test lemmas) and linear CKA between the same layer of
the two (`cka`'s analysis, tokens paired by their characters: 1.0 where tuning left a layer's
geometry as it was). The cost, measured by the existing benchmarks before and after: the sentence
embedding's Lee retrieval (nDCG@10 and Spearman against human ratings) and word similarity
(SimLex-999, WordSim-353: each system's best layer), since a model tuned on word senses may
forget what its sentence-similarity training gave it. Beside them, the lesson's "bank" pair on both
models (the per-layer cosine of "bank" in a money and a river sentence, and that cosine minus the
model's random-word mean) and each model's random-word mean per layer, its anisotropy: a tuning
that pulled every state together would raise both, and the difference shows it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from contextlens.analyses.benchmarks.retrieval import evaluate_lee
from contextlens.analyses.benchmarks.similarity import SimilarityResult
from contextlens.analyses.benchmarks.suite import run_similarity, run_wic
from contextlens.analyses.measures.word_baseline import random_word_baseline
from contextlens.analyses.representations.cka import compare_layers
from contextlens.core.contextual_models import as_contextual
from contextlens.core.occurrences import parse_marked
from contextlens.core.resources import DEFAULT_STATIC, cache_dir
from contextlens.core.similarity import cosine
from contextlens.core.tuned_store import read_record
from contextlens.errors import ParameterError, UnknownModelError

SIZES = ("full", "quick")
BANK = ("The [bank] called about my account.", "The river [bank] flooded last night.")  # the lesson's pair


@dataclass
class TuneReport:
    name: str
    base: str
    size: str
    tuned_layer: int
    wic: list[dict[str, Any]]  # per layer: base and tuned dev and test accuracy
    wic_chosen: dict[str, Any]  # each model's dev-chosen layer and its test accuracy
    cka: list[dict[str, Any]]  # per layer: linear CKA(base layer L, tuned layer L)
    cka_tokens: int
    lee: dict[str, dict[str, float]]  # {"base"|"tuned": {"ndcg@10": ..., "spearman": ...}} (sentence embedding)
    similarity: list[dict[str, Any]]  # per (dataset, system): best-layer Spearman before and after
    bank: list[dict[str, Any]] = field(default_factory=list)  # per layer: the lesson's pair, cosine and − random
    anisotropy: list[dict[str, Any]] = field(default_factory=list)  # per layer: each model's random-word mean
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tune_report(name: str, size: str = "full", cka_texts: int = 200) -> TuneReport:
    """The report of the tuned model ``name`` against the model it was tuned from."""
    if size not in SIZES:
        raise ParameterError("size", f"must be one of {', '.join(SIZES)}, got {size!r}")
    record = read_record(cache_dir(), name) if isinstance(name, str) else None
    if record is None:
        raise UnknownModelError(f"{name!r} is no tuned model; `contextlens models` lists those made here")
    started = time.perf_counter()
    base = record["base"]
    wic = {who: run_wic(model, DEFAULT_STATIC, size) for who, model in (("base", base), ("tuned", name))}
    cka = compare_layers(base, name, limit=cka_texts)
    lee = {who: _lee(evaluate_lee(model, quick=size == "quick")) for who, model in (("base", base), ("tuned", name))}
    similarity = {who: run_similarity(model, DEFAULT_STATIC, size) for who, model in (("base", base), ("tuned", name))}
    bank, anisotropy = _bank_and_anisotropy({"base": base, "tuned": name})
    return TuneReport(
        name=name,
        base=base,
        size=size,
        tuned_layer=int(record["settings"]["layer"]),
        wic=_wic_rows(wic),
        wic_chosen={who: None if r.best_layer is None else asdict(r.best_layer) for who, r in wic.items()},
        cka=[{"layer": la, "cka": float(cka.matrix[i, i])} for i, la in enumerate(cka.layers_a)],
        cka_tokens=cka.tokens,
        lee=lee,
        similarity=_similarity_rows(similarity),
        bank=bank,
        anisotropy=anisotropy,
        seconds=round(time.perf_counter() - started, 1),
        notes=[f"CKA on {cka.aligned_texts} {cka.corpus} texts ({cka.tokens} tokens)"],
    )


def _wic_rows(wic: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for layer in sorted({r["layer"] for r in wic["base"].select(system=wic["base"].model, metric="accuracy")}):
        row: dict[str, Any] = {"layer": layer}
        for who, result in wic.items():
            for split in ("dev", "test"):
                row[f"{who}_{split}"] = result.value(system=result.model, layer=layer, split=split, metric="accuracy")
        rows.append(row)
    return rows


def _lee(result: Any) -> dict[str, float]:
    """The sentence embedding's scores at full width and float32."""
    return {
        metric: result.value(kind="sentence", layer=None, reduction=None, dtype="float32", metric=metric)
        for metric in ("ndcg@10", "spearman")
    }


def _similarity_rows(results: dict[str, SimilarityResult]) -> list[dict[str, Any]]:
    """Best-layer Spearman per data set and reduction (template, pooled contexts), base vs tuned."""
    rows = []
    base, tuned = results["base"].best_layer, results["tuned"].best_layer
    for system in sorted(base):
        kind = system.split(":", 1)[1]
        match = next((s for s in tuned if s.split(":", 1)[1] == kind), None)
        for dataset, best in base[system].items():
            after = tuned[match][dataset] if match else None
            rows.append({"dataset": dataset, "reduction": kind, "base_spearman": best.spearman,
                         "base_layer": best.layer, "tuned_spearman": after and after.spearman,
                         "tuned_layer": after and after.layer})  # fmt: skip
    return rows


def _bank_and_anisotropy(models: dict[str, str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per layer: the cosine of "bank" across the lesson's two sentences and that cosine minus the
    model's random-word mean, and the random-word mean itself (anisotropy), for both models."""
    occurrences = [parse_marked(text) for text in BANK]
    bank: dict[int, dict[str, Any]] = {}
    spread: dict[int, dict[str, Any]] = {}
    for who, name in models.items():
        model = as_contextual(name)
        baseline = random_word_baseline(model)
        first, second = model.encode_occurrences(occurrences)
        for layer in first.layers:
            cos = cosine(first.hidden_state(layer), second.hidden_state(layer))
            mean = baseline.layer(layer).mean
            bank.setdefault(layer, {"layer": layer}).update({f"{who}_cosine": cos, f"{who}_minus_random": cos - mean})
            spread.setdefault(layer, {"layer": layer})[f"{who}_random_mean"] = mean
    return [bank[k] for k in sorted(bank)], [spread[k] for k in sorted(spread)]
