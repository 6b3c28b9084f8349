"""Same sense or not? A user's two uses of a word, answered by the rule `eval wic` tunes.

Why: people ask for a threshold that says whether two uses of a word share a sense; `eval wic`
already tunes one per layer on dev lemmas (WordNet usage-example pairs, analyses/measures/
sense_threshold.py) and measures it on held-out test lemmas. Here that very rule answers the user's pair:
the layer `eval wic` picks on dev (``layer="auto"``, the shared resolver of
analyses/measures/layer_choice.py, or one given), its dev-tuned cosine threshold, and beside
the answer the rule's dev and test accuracy and chance, so the answer comes with how often the
rule is right; the decision is the threshold's, so its test accuracy is `eval wic`'s.

The probability is a logistic fit of "same" on the cosine (at that layer) over the *dev* pairs,
the very pairs that chose the layer and the threshold: Platt scaling on the validation set. Its
expected calibration error is measured on the held-out test pairs. Dev lemmas for the layer, the
threshold and the fit; test lemmas for the accuracy and the calibration. The fit needs no
encoding beyond eval wic's own (issue 30: a first same-sense encodes only the dev and test
pairs); it was a fit on 1,000 separate train pairs until 6 Dec (docs/lesson.md has both).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from contextlens.analyses.lesson.left_context import left_context_note
from contextlens.analyses.measures.layer_choice import TASKS, resolve_layer
from contextlens.analyses.measures.sense_threshold import accuracy, best_dev_layer, layer_scores
from contextlens.analyses.measures.span_encoding import MadeOn, Progress
from contextlens.analyses.measures.wic_pairs import encode_wic
from contextlens.analyses.measures.word_baseline import random_word_baseline
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
    dev_lemmas: int = 0  # the dev pairs' lemmas: the layer's, the threshold's and the logistic's
    logistic_test_accuracy: float = float("nan")  # P(same) >= 0.5 as the decision, on the test pairs
    made_on: MadeOn | None = None  # which backend encoded the pairs (fp32 on torch and ONNX Runtime share them)

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
            "logistic": {
                "coef": self.coef,
                "intercept": self.intercept,
                "fitted_on": "dev pairs: the pairs that chose the layer and threshold (Platt scaling)",
                "pairs": self.dev_pairs,
                "lemmas": self.dev_lemmas,
                "test_accuracy_of_p_at_least_half": self.logistic_test_accuracy,
            },
            "test_ece": self.test_ece,
            "reliability": self.reliability,
            **({} if self.made_on is None else {"made_on": self.made_on.to_dict()}),
        }


@dataclass
class SameSenseAnswer:
    """The rule's answer for two occurrences: decision, probability, and the rule's record."""

    occurrences: list[Occurrence]
    cosine: float
    rule: SameSenseRule
    baseline_mean: float | None = None  # random-word baseline at the rule's layer
    baseline_percentile: float | None = None
    baseline_made_on: MadeOn | None = None
    left_context_only: bool = False  # a decoder: each target sees only the words to its left

    @property
    def same(self) -> bool:
        return self.cosine >= self.rule.threshold

    @property
    def probability(self) -> float:
        return self.rule.probability(self.cosine)

    @property
    def notes(self) -> list[str]:
        out = []
        if self.same != (self.probability >= 0.5):
            out.append(
                "the decision (threshold, tuned for accuracy) and the probability (logistic fit) disagree: "
                "this pair sits between them, near the rule's boundary"
            )
        made = self.rule.made_on
        if made is not None and made.backend != f"{self.rule.backend.runtime} {self.rule.backend.precision}":
            out.append(f"the rule's pairs were {made.note} (fp32 on torch and on ONNX Runtime share them)")
        if self.left_context_only and (note := left_context_note(self.rule.model, self.occurrences)):
            out.append(note)
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
            "random_word_baseline": {
                "mean": self.baseline_mean,
                "percentile": self.baseline_percentile,
                "made_on": None if self.baseline_made_on is None else self.baseline_made_on.to_dict(),
            },
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


# In memory only: each process refits the rule from the cached encoding and layer choice, whose
# keys are unchanged by what the fit is on, so no disk entry can hold an older fit (nothing to version).
_rules: dict[tuple[ContextualModel, int, bool, str], SameSenseRule] = {}  # rules made in this process
_rules_lock = threading.Lock()


def _rule(model: ContextualModel, chosen: int, auto: bool, size: str, progress: Progress | None) -> SameSenseRule:
    key = (model, chosen, auto, size)
    with _rules_lock:
        if key in _rules:
            return _rules[key]
    rule = _make_rule(model, chosen, auto, size, progress)  # outside the lock: other models' calls go on
    with _rules_lock:
        return _rules.setdefault(key, rule)


def _make_rule(model: ContextualModel, chosen: int, auto: bool, size: str, progress: Progress | None) -> SameSenseRule:
    data, enc, _ = encode_wic(model, size, progress)  # eval wic's own encoding of its pairs
    scores = layer_scores(data.wic, data.rows, enc.hidden)  # eval wic's per-layer numbers
    if auto:  # the resolver's choice is eval wic's own
        assert chosen == best_dev_layer(scores)
    score = scores[chosen]

    pairs = data.wic.pairs
    cos = _pair_cosines(enc.hidden, data.rows, chosen)
    split = np.array([p.split for p in pairs])
    same = np.array([p.same for p in pairs], dtype=bool)
    dev, test = split == "dev", split == "test"
    coef, intercept = _fit_logistic(cos[dev], same[dev])  # Platt scaling on the pairs that tuned the rule
    prob = 1.0 / (1.0 + np.exp(-(coef * cos[test] + intercept)))
    ece, table = reliability_bins(prob, same[test])
    threshold = score.threshold
    test_accuracy = score.test_accuracy
    assert abs(accuracy(cos[test], same[test], threshold) - test_accuracy) < 1e-12  # the very rule eval wic scores
    return SameSenseRule(
        model=enc.model,
        backend=model.backend,
        size=size,
        layer=chosen,
        layer_choice=f"auto: {TASKS['sense']}" if auto else "given",
        threshold=threshold,
        dev_accuracy=score.dev_accuracy,
        test_accuracy=test_accuracy,
        chance=float(max(same[test].mean(), 1 - same[test].mean())),
        dev_pairs=int(dev.sum()),
        test_pairs=int(test.sum()),
        test_lemmas=len({p.lemma for p in pairs if p.split == "test"}),
        coef=coef,
        intercept=intercept,
        test_ece=ece,
        reliability=table,
        dev_lemmas=len({p.lemma for p in pairs if p.split == "dev"}),
        logistic_test_accuracy=float(np.mean((prob >= 0.5) == same[test])),
        made_on=enc.made_on,
    )


def _pair_cosines(hidden: np.ndarray, rows: list[tuple[int, int]], layer: int) -> np.ndarray:
    return row_cosines(hidden[[i for i, _ in rows], layer, :], hidden[[j for _, j in rows], layer, :])


def same_sense_rule(
    model: ContextualModel | str = DEFAULT_CONTEXTUAL,
    layer: int | str = "auto",
    size: str = "full",
    progress: Progress | None = None,
) -> SameSenseRule:
    """The dev-tuned rule for ``model`` at ``layer`` (``"auto"``: the layer `eval wic` picks on dev).

    The first call for a model encodes eval wic's dev and test pairs (cached on disk afterwards;
    nothing else: the logistic is fitted on the dev pairs); ``progress`` follows that encoding.
    """
    if size not in ("full", "quick"):
        raise InputError(f"`size` must be 'full' or 'quick', got {size!r}")
    model = as_contextual(model)
    chosen, choice = resolve_layer(model, layer, "sense", size=size, progress=progress)
    return _rule(model, chosen, choice is not None, size, progress)


def rule_cached(model: ContextualModel, size: str = "full") -> bool:
    """Whether the auto rule for ``model`` is read from disk: the layer choice and the one encoding
    it is tuned and fitted on (eval wic's dev and test pairs) are cached; what `contextlens prepare` reports."""
    from contextlens.analyses.measures.layer_choice import choice_cached
    from contextlens.analyses.measures.wic_pairs import wic_is_encoded

    return choice_cached(model, "sense", size) and wic_is_encoded(model, size)


def check_same_word(occurrence_a: Occurrence, occurrence_b: Occurrence) -> None:
    """The rule is tuned on pairs of uses of one word (WordNet usage examples of one lemma, in any
    of its forms), so it answers only for such a pair: ``bank`` and ``Bank``, ``bank`` and ``banks``,
    ``run`` and ``ran`` are one word; ``bank`` and ``river`` are refused (a cosine between two
    words is no sense decision)."""
    first, second = occurrence_a.word, occurrence_b.word
    if first.casefold() == second.casefold():
        return
    from contextlens.core.wordnet import base_forms

    if base_forms(first) & base_forms(second):
        return
    raise InputError(
        f"same-sense compares two uses of one word, but the targets are {first!r} and {second!r}; bracket the "
        "same word in both sentences (its forms count as one: bank, banks), e.g. 'The river [bank] flooded.' "
        "'I opened a [bank] account.'"
    )


def same_sense(
    occurrence_a: Occurrence | str,
    occurrence_b: Occurrence | str,
    model: ContextualModel | str = DEFAULT_CONTEXTUAL,
    layer: int | str = "auto",
    size: str = "full",
) -> SameSenseAnswer:
    """Do two occurrences of a word share a sense? The decision of the dev-tuned cosine threshold,
    a probability, and the rule's held-out accuracy beside chance. Two different words are refused
    (:func:`check_same_word`)."""
    occs = arguments.occurrence_list([occurrence_a, occurrence_b])
    check_same_word(*occs)
    model = as_contextual(model)
    rule = same_sense_rule(model, layer, size)
    enc = model.encode_occurrences(occs, layers=[rule.layer])
    cos = float(cosine_values(enc[0].hidden[0], enc[1].hidden[0]))
    base = random_word_baseline(model)
    return SameSenseAnswer(
        occs, cos, rule, base.layer(rule.layer).mean, base.percentile(rule.layer, cos), base.made_on,
        left_context_only=bool(getattr(model, "is_decoder", False)),
    )  # fmt: skip
