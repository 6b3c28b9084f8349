"""Two models side by side: the same question asked of each, never one model's vectors against the
other's.

A learner's misconception the seeds name: "I can compare contextual embeddings from different
models directly". Hidden states of minilm (384 dimensions) and mpnet (768) live in different spaces,
so a cosine between them means nothing (core.vectors refuses it). What can stand side by side is
each model's own answer, each read against that model's own random-word baseline, and the linear
CKA of the two models' layers on the same tokens (analyses/representations/cka.py), which says
which layers of one hold a geometry like which layers of the other.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from contextlens.core.jsonable import plain_json
from contextlens.errors import InputError

if TYPE_CHECKING:
    from contextlens.analyses.representations.cka import CkaResult
    from contextlens.core.contextual_models import ContextualModel

CKA_TEXTS = 120  # WordNet usage examples the CKA is measured on (MIN_TEXTS is 20; 120 take seconds)
CKA_CORPUS = "wordnet"
NOT_ACROSS = (
    "each model is read against its own random-word baseline; a cosine between two models' hidden states "
    "is not computed (different spaces): linear CKA compares the geometry each gives the same tokens"
)


@dataclass(frozen=True)
class LayerCurve:
    """One model's per-layer values of one quantity, with the layers as a share of its depth, so a
    6-layer and a 12-layer model can be drawn on one axis."""

    model: str
    label: str  # what the values are, e.g. "bank: cosine − random mean"
    layers: list[int]
    values: list[float]
    num_layers: int

    @property
    def depth(self) -> list[float]:
        return [layer / self.num_layers for layer in self.layers]


@dataclass
class TwoModels:
    """The answers of two models to one question (``compare``, ``explore`` or ``same-sense``), in
    the order the models were given, and the CKA between every layer of the first and the second."""

    question: str
    answers: list[Any]
    cka: CkaResult = field(repr=False)
    num_layers: list[int] = field(default_factory=list)  # each model's top layer

    @property
    def models(self) -> list[str]:
        return [self.cka.model_a, self.cka.model_b]

    def curves(self) -> list[LayerCurve]:
        """What each answer says per layer, against its own model's random-word mean where it has
        one (cosine − mean: Ethayarajh's adjusted value), for the figure and the summary."""
        out: list[LayerCurve] = []
        for answer, top in zip(self.answers, self.num_layers, strict=True):
            out.extend(_curves_of(answer, top))
        return out

    def matches(self) -> list[tuple[int, int, float]]:
        """Per layer of the first model: the layer of the second with the highest CKA, and that CKA."""
        best = self.cka.best_match()
        rows = self.cka.matrix
        return [
            (layer, match, float(rows[i, self.cka.layers_b.index(match)]))
            for i, (layer, match) in enumerate(zip(self.cka.layers_a, best, strict=True))
        ]

    @plain_json
    def to_dict(self) -> dict[str, object]:
        return {
            "question": self.question,
            "models": self.models,
            "answers": [a.to_dict() for a in self.answers],
            "cka": self.cka.to_dict(),
            "best_layer_matches": [{"layer_a": a, "layer_b": b, "cka": c} for a, b, c in self.matches()],
            "note": NOT_ACROSS,
        }


def _curves_of(answer: Any, top: int) -> list[LayerCurve]:
    from contextlens.analyses.lesson.divergence import Comparison
    from contextlens.analyses.lesson.polysemy import Exploration
    from contextlens.analyses.lesson.same_sense import SameSenseAnswer

    if isinstance(answer, Comparison):
        bases = answer.layer_baselines()
        if all(b is not None for b in bases):
            values, label = [b["adjusted"] for b in bases if b is not None], "cosine − its random-word mean"
        else:
            values, label = list(answer.layer_cosines), "cosine (no random-word baseline)"
        return [LayerCurve(answer.model, label, list(answer.layers), values, top)]
    if isinstance(answer, Exploration):
        curves = []
        for word in answer.words:
            if word.gaps is not None:
                curves.append(LayerCurve(answer.model, f"{word.word}: same − cross-sense cosine", list(word.layers),
                                         list(word.gaps), top))  # fmt: skip
            else:
                label = f"{word.word}: spread"
                curves.append(LayerCurve(answer.model, label, list(word.layers), list(word.spreads), top))
        return curves
    if isinstance(answer, SameSenseAnswer):
        value = answer.cosine - (answer.baseline_mean or 0.0)
        label = "cosine − its random-word mean" if answer.baseline_mean is not None else "cosine"
        return [LayerCurve(answer.rule.model, f"{label} at the rule's layer", [answer.rule.layer], [value], top)]
    raise InputError(f"two models side by side answer compare, explore or same-sense, not {type(answer).__name__}")


QUESTION_OF = {"Comparison": "compare", "Exploration": "explore", "SameSenseAnswer": "same-sense"}


def check_two_models(models: Sequence[str]) -> list[str]:
    """Exactly two different model names (cheap: before any weights load)."""
    names = list(models)
    if len(names) != 2:
        raise InputError(f"side by side takes two models, got {len(names)}; give `model` twice (e.g. minilm, mpnet)")
    if names[0] == names[1]:
        raise InputError(f"the two models are the same ({names[0]!r}); give two different models")
    return names


def side_by_side(
    models: Sequence[ContextualModel | str],
    ask: Callable[[ContextualModel], Any],
    cka_texts: int = CKA_TEXTS,
) -> TwoModels:
    """Ask ``ask`` of each of two models (``ask(model)`` returns a compare, explore or same-sense
    result) and measure the linear CKA of the two models' layers on ``cka_texts`` WordNet usage
    examples. ``side_by_side(["minilm", "mpnet"], lambda m: compare(sentences, m))``."""
    from contextlens.core.contextual_models import as_contextual

    if len(models) != 2:
        raise InputError(f"side by side takes two models, got {len(models)}")
    a, b = (as_contextual(m) for m in models)
    if a.name == b.name and a.backend == b.backend:
        raise InputError(f"the two models are the same ({a.name!r}); give two different models")
    answers = [ask(a), ask(b)]
    kind = type(answers[0]).__name__
    question = QUESTION_OF.get(kind)
    if question is None:
        raise InputError(f"two models side by side answer compare, explore or same-sense, not {kind}")
    cka = kept_cka(a, b, cka_texts)
    return TwoModels(question, answers, cka, [a.num_layers, b.num_layers])


CKA_VERSION = 1  # bump when compare_layers' alignment or measure changes: the kept results are stale
_KEPT: OrderedDict[str, CkaResult] = OrderedDict()  # this process's CKAs, newest last
_KEPT_SIZE = 8
_KEPT_LOCK = threading.Lock()
_COUNTS = ("texts", "aligned_texts", "skipped_texts", "tokens", "dropped_tokens")


def kept_cka(a: ContextualModel, b: ContextualModel, texts: int = CKA_TEXTS) -> CkaResult:
    """The CKA of ``a`` and ``b`` on ``texts`` WordNet examples, computed once: kept in this process
    (a server answers its second two-model request without a forward pass) and on disk (the next
    command too), under the two models' weights identities (precision and runtime included: an
    int8 or ONNX model's CKA is its own) and the corpus and its size."""
    from contextlens.core.disk_cache import cache_key, cached_arrays

    key = cache_key("cka", CKA_VERSION, a.name, a.identity, b.name, b.identity, CKA_CORPUS, texts)
    with _KEPT_LOCK:
        if key in _KEPT:
            _KEPT.move_to_end(key)
            return _KEPT[key]
    arrays = cached_arrays("cka", key, lambda: _cka_arrays(a, b, texts))
    result = _cka_from_arrays(arrays, a, b)
    with _KEPT_LOCK:
        _KEPT[key] = result
        while len(_KEPT) > _KEPT_SIZE:
            _KEPT.popitem(last=False)
    return result


def _cka_arrays(a: ContextualModel, b: ContextualModel, texts: int) -> dict[str, np.ndarray]:
    """The CKA measured now, as the arrays the disk cache stores (names and backends come from the models)."""
    from contextlens.analyses.representations.cka import compare_layers

    cka = compare_layers(a, b, corpus=CKA_CORPUS, limit=texts)
    return {
        "matrix": np.asarray(cka.matrix, dtype=np.float64),
        "layers_a": np.asarray(cka.layers_a, dtype=np.int64),
        "layers_b": np.asarray(cka.layers_b, dtype=np.int64),
        "counts": np.asarray([getattr(cka, name) for name in _COUNTS], dtype=np.int64),
        "seconds": np.asarray([cka.seconds]),
    }


def _cka_from_arrays(arrays: dict[str, np.ndarray], a: ContextualModel, b: ContextualModel) -> CkaResult:
    from contextlens.analyses.representations.cka import CkaResult

    counts = {name: int(value) for name, value in zip(_COUNTS, arrays["counts"], strict=True)}
    return CkaResult(
        model_a=a.name, model_b=b.name, layers_a=[int(x) for x in arrays["layers_a"]],
        layers_b=[int(x) for x in arrays["layers_b"]], matrix=arrays["matrix"], corpus=CKA_CORPUS,
        seconds=float(arrays["seconds"][0]), precision_a=a.precision, precision_b=b.precision,
        runtime_a=a.runtime, runtime_b=b.runtime, **counts,
    )  # fmt: skip
