"""Same sense or not? A user's two uses of a word, answered by the rule `eval wic` tunes.

Why: people ask for a threshold that says whether two uses of a word share a sense; `eval wic`
already tunes one per layer on dev lemmas (WordNet usage-example pairs, analyses/benchmarks/
wic.py) and measures it on held-out test lemmas. Here that very rule answers the user's pair:
the layer `eval wic` picks on dev (``layer="auto"``, or one given), its dev-tuned cosine
threshold, and beside the answer the rule's dev and test accuracy and chance, so the answer
comes with how often the rule is right. The probability is a logistic fit of "same" on the
cosine over the same dev pairs (at that layer), with its expected calibration error on the
test pairs; the decision itself is the threshold's, so its accuracy is `eval wic`'s.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from contextlens.analyses.benchmarks.suite import build_suite, encode_suite
from contextlens.analyses.benchmarks.wic import accuracy, evaluate_wic
from contextlens.analyses.benchmarks.word_baseline import random_word_baseline
from contextlens.core import arguments
from contextlens.core.backend import Backend
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.jsonable import plain_json
from contextlens.core.model_kinds import model_kind
from contextlens.core.occurrences import Occurrence
from contextlens.core.resources import DEFAULT_CONTEXTUAL
from contextlens.core.similarity import cosine_values, row_cosines
from contextlens.errors import InputError

ECE_BINS = 10


@dataclass(frozen=True)
class SameSenseRule:
    """The dev-tuned rule at one layer, with its measured accuracy and calibration."""

    model: str
    backend: Backend
    size: str  # the benchmark data: "full" or "quick"
    layer: int
    layer_choice: str  # "auto: best dev accuracy (eval wic)" or "given"
    threshold: float
    dev_accuracy: float
    test_accuracy: float
    chance: float  # majority class on the test pairs
    dev_pairs: int
    test_pairs: int
    test_lemmas: int
    coef: float  # P(same) = 1 / (1 + exp(-(coef * cosine + intercept)))
    intercept: float
    test_ece: float  # expected calibration error of P(same) on the test pairs (10 equal-width bins)
    reliability: list[dict[str, float]] = field(default_factory=list, repr=False)

    def probability(self, cos: float) -> float:
        return float(1.0 / (1.0 + np.exp(-(self.coef * cos + self.intercept))))

    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            **self.backend.to_dict(),
            "data": f"WordNet 3.0 word-in-context pairs ({self.size})",
            "layer": self.layer,
            "layer_choice": self.layer_choice,
            "threshold": self.threshold,
            "dev_accuracy": self.dev_accuracy,
            "test_accuracy": self.test_accuracy,
            "chance": self.chance,
            "dev_pairs": self.dev_pairs,
            "test_pairs": self.test_pairs,
            "test_lemmas": self.test_lemmas,
            "logistic": {"coef": self.coef, "intercept": self.intercept, "fitted_on": "dev pairs"},
            "test_ece": self.test_ece,
            "reliability": self.reliability,
        }


@dataclass
class SameSenseAnswer:
    """The rule's answer for two occurrences: decision, probability, and the rule's record."""

    occurrences: list[Occurrence]
    cosine: float
    rule: SameSenseRule
    baseline_mean: float | None = None  # random-word baseline at the rule's layer
    baseline_percentile: float | None = None

    @property
    def same(self) -> bool:
        return self.cosine >= self.rule.threshold

    @property
    def probability(self) -> float:
        return self.rule.probability(self.cosine)

    @property
    def notes(self) -> list[str]:
        out = []
        words = {o.word.lower() for o in self.occurrences}
        if len(words) > 1:
            out.append(
                f"the targets are different words ({', '.join(sorted(words))}); the rule was tuned on two uses "
                "of one word, so the answer says little"
            )
        if self.same != (self.probability >= 0.5):
            out.append(
                "the decision (threshold, tuned for accuracy) and the probability (logistic fit) disagree: "
                "this pair sits between them, near the rule's boundary"
            )
        kind = model_kind(self.rule.model)
        if kind is not None:
            out.append(kind.summary)
        return out

    @plain_json
    def to_dict(self) -> dict[str, object]:
        return {
            "sentences": [o.to_dict() for o in self.occurrences],
            "same_sense": self.same,
            "probability": self.probability,
            "cosine": self.cosine,
            "layer": self.rule.layer,
            "random_word_baseline": {"mean": self.baseline_mean, "percentile": self.baseline_percentile},
            "rule": self.rule.to_dict(),
            "notes": self.notes,
        }


def _fit_logistic(cos: np.ndarray, same: np.ndarray) -> tuple[float, float]:
    """A one-feature logistic regression, practically unregularised (the cosine's scale is small)."""
    from sklearn.linear_model import LogisticRegression

    fit = LogisticRegression(C=1e4, max_iter=1000).fit(cos.reshape(-1, 1), same.astype(int))
    return float(fit.coef_[0, 0]), float(fit.intercept_[0])


def reliability_bins(prob: np.ndarray, same: np.ndarray, bins: int = ECE_BINS) -> tuple[float, list[dict[str, float]]]:
    """Expected calibration error and the reliability table (equal-width probability bins)."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(prob, edges[1:-1]), 0, bins - 1)
    ece, table = 0.0, []
    for b in range(bins):
        mask = which == b
        if not mask.any():
            continue
        mean_p, share = float(prob[mask].mean()), float(same[mask].mean())
        ece += mask.mean() * abs(mean_p - share)
        table.append({"low": float(edges[b]), "high": float(edges[b + 1]), "pairs": int(mask.sum()),
                      "mean_probability": mean_p, "share_same": share})  # fmt: skip
    return float(ece), table


@functools.lru_cache(maxsize=8)
def _rule(model: ContextualModel, layer: int | None, size: str) -> SameSenseRule:
    suite = build_suite(size)
    enc, _ = encode_suite(model, size)
    result = evaluate_wic(suite.wic, suite.wic_rows, enc.hidden, enc.input_rows, enc.model, None)
    best = result.meta["best_layer"]
    chosen = best["layer_by_dev"] if layer is None else layer

    def value(split: str, metric: str) -> float:
        return float(result.select(system=enc.model, layer=chosen, split=split, metric=metric)[0]["value"])

    pairs = suite.wic.pairs
    a = enc.hidden[[i for i, _ in suite.wic_rows], chosen, :]
    b = enc.hidden[[j for _, j in suite.wic_rows], chosen, :]
    cos = row_cosines(a, b)
    split = np.array([p.split for p in pairs])
    same = np.array([p.same for p in pairs], dtype=bool)
    dev, test = split == "dev", split == "test"
    coef, intercept = _fit_logistic(cos[dev], same[dev])
    prob = 1.0 / (1.0 + np.exp(-(coef * cos[test] + intercept)))
    ece, table = reliability_bins(prob, same[test])
    threshold = value("dev", "threshold")
    test_accuracy = value("test", "accuracy")
    assert abs(accuracy(cos[test], same[test], threshold) - test_accuracy) < 1e-12  # the very rule eval wic scores
    return SameSenseRule(
        model=enc.model,
        backend=model.backend,
        size=size,
        layer=chosen,
        layer_choice="auto: best dev accuracy (eval wic)" if layer is None else "given",
        threshold=threshold,
        dev_accuracy=value("dev", "accuracy"),
        test_accuracy=test_accuracy,
        chance=float(max(same[test].mean(), 1 - same[test].mean())),
        dev_pairs=int(dev.sum()),
        test_pairs=int(test.sum()),
        test_lemmas=len({p.lemma for p in pairs if p.split == "test"}),
        coef=coef,
        intercept=intercept,
        test_ece=ece,
        reliability=table,
    )


def same_sense_rule(
    model: ContextualModel | str = DEFAULT_CONTEXTUAL, layer: int | str = "auto", size: str = "full"
) -> SameSenseRule:
    """The dev-tuned rule for ``model`` at ``layer`` (``"auto"``: the layer `eval wic` picks on dev).

    The first call for a model encodes the benchmark sentences (cached on disk afterwards).
    """
    if size not in ("full", "quick"):
        raise InputError(f"`size` must be 'full' or 'quick', got {size!r}")
    model = as_contextual(model)
    layer = layer.strip().lower() if isinstance(layer, str) else layer
    wanted = None if layer == "auto" else model.check_layers([_layer_request(layer)])[0]
    return _rule(model, wanted, size)


def _layer_request(layer: object) -> int:
    """``"auto"`` is handled by the caller; a number, or a str holding one (a CLI or web field)."""
    if isinstance(layer, str):
        try:
            return int(layer.strip())
        except ValueError:
            raise InputError(f"`layer` must be auto or a layer number, got {layer!r}") from None
    return arguments.layer_number(layer)


def same_sense(
    occurrence_a: Occurrence | str,
    occurrence_b: Occurrence | str,
    model: ContextualModel | str = DEFAULT_CONTEXTUAL,
    layer: int | str = "auto",
    size: str = "full",
) -> SameSenseAnswer:
    """Do two occurrences of a word share a sense? The decision of the dev-tuned cosine threshold,
    a probability, and the rule's held-out accuracy beside chance."""
    occs = arguments.occurrence_list([occurrence_a, occurrence_b])
    model = as_contextual(model)
    rule = same_sense_rule(model, layer, size)
    enc = model.encode_occurrences(occs, layers=[rule.layer])
    cos = float(cosine_values(enc[0].hidden[0], enc[1].hidden[0]))
    base = random_word_baseline(model)
    return SameSenseAnswer(occs, cos, rule, base.layer(rule.layer).mean, base.percentile(rule.layer, cos))
