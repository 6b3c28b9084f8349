"""Which layer knows what? Per-layer linear probes for part of speech and for sense.

Tests the seeds' "layers 1-6: syntactic; layers 7-12: semantic contextualization" the way
Tenney, Das & Pavlick ("BERT Rediscovers the Classical NLP Pipeline", ACL 2019) did: train a
linear probe on each layer's hidden state and see where each task's accuracy is gained.

* ``pos`` - part of speech of the target, noun vs verb, on word forms WordNet illustrates as both
  ("run", "light", "spring"): one word, two labels, so the context must decide.
* ``sense`` - the target's coarse sense within one part of speech: the WordNet supersense
  (lexicographer file, e.g. noun.artifact, noun.person) of the example's synset, on the WSD
  split's polysemous noun lemmas; the most frequent supersenses are kept.
* ``pos-control`` / ``sense-control`` - Hewitt & Liang (2019): each word type gets a random
  label drawn from the task's label distribution; a probe that scores on it is memorising types.

Probes: scikit-learn logistic regression on standardised features, GroupKFold by lemma, so a
probe is always scored on words it never saw. Baselines without layers: the static model's vector
of the word form, and the input row (mean of the target tokens' rows of the embedding table).
Expected layer (Tenney et al.): ``sum_l l * delta_l / sum_l delta_l`` with ``delta_l`` the
accuracy gained from layer l-1 to l (negative gains clipped to 0).
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextlens.analyses.benchmarks.result import BenchmarkResult, record_precision
from contextlens.analyses.measures.datasets import build_wsd
from contextlens.analyses.measures.span_encoding import encode_spans
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.jsonable import plain_json
from contextlens.core.static_models import StaticModel, load_static
from contextlens.core.wordnet import UsageExample, usage_examples, wordnet
from contextlens.errors import InputError

TASKS = ("pos", "sense")
FOLDS = 5
MIN_EXAMPLES = 40  # per task; fewer and a 5-fold probe has nothing to learn from
SIZES = {  # lemmas, examples per (lemma, label), supersense classes kept
    "quick": (24, 2, 4),
    "full": (120, 3, 8),
}
PAPER = (  # the paper's own words (abstract); its per-task expected layers are in its Figure 1, not copied here
    "Tenney et al. 2019, BERT: part-of-speech tags are processed earliest, followed by constituents, "
    "dependencies, semantic roles, and coreference"
)


@dataclass(frozen=True)
class ProbeCounts:
    """One task's examples: how many, of how many lemmas, the count per label, and the majority
    label's share (the accuracy of always answering it, 0-1)."""

    examples: int
    lemmas: int
    labels: dict[str, int]
    majority: float


@dataclass
class LayerProbeResult(BenchmarkResult):
    """`eval layers`' result: the tidy rows (probe accuracy, 0-1, per system, layer and task, the
    controls' splits ``<task>-control``), each task's counts, the expected layer per split (Tenney
    et al.'s centre of gravity of the per-layer gains, in layers; None when nothing is gained), the
    model's number of layers (the rows run 0..num_layers) and the paper's finding; ``meta`` holds
    what every run records (size, seconds, encode seconds, precision, runtime). :meth:`to_dict` is
    the JSON `eval layers --json` prints, the same keys in the same order as before these fields."""

    paper: str = PAPER
    counts: dict[str, ProbeCounts] = field(default_factory=dict)  # per task: pos, sense
    expected_layer: dict[str, float | None] = field(default_factory=dict)  # per split: pos, pos-control, ...
    num_layers: int = 0

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        run = dict(self.meta)
        meta = {
            "size": run.pop("size", None),
            "paper": self.paper,
            "counts": {task: dataclasses.asdict(c) for task, c in self.counts.items()},
            "expected_layer": self.expected_layer,
            "seconds": run.pop("seconds", None),
            "encode_seconds": run.pop("encode_seconds", None),
            "num_layers": self.num_layers,
            **run,
        }
        return {"benchmark": self.benchmark, "model": self.model, "rows": self.rows, "meta": meta}


@dataclass
class ProbeData:
    task: str
    examples: list[UsageExample]
    labels: list[str]
    groups: list[str]  # lemma: kept apart between folds


def pos_data(examples: list[UsageExample], lemmas: int, per_label: int, seed: int = 0) -> ProbeData:
    """Noun vs verb examples of lemmas that WordNet illustrates as both, balanced per lemma."""
    by: dict[str, dict[str, list[UsageExample]]] = defaultdict(lambda: defaultdict(list))
    for e in examples:
        if e.pos in ("n", "v"):
            by[e.lemma][e.pos].append(e)
    both = sorted(lemma for lemma, p in by.items() if len(p["n"]) >= per_label and len(p["v"]) >= per_label)
    rng = random.Random(seed)
    chosen = sorted(rng.sample(both, min(lemmas, len(both))))
    out = ProbeData("pos", [], [], [])
    for lemma in chosen:
        for pos in ("n", "v"):
            for e in rng.sample(by[lemma][pos], per_label):
                out.examples.append(e)
                out.labels.append("noun" if pos == "n" else "verb")
                out.groups.append(lemma)
    return out


def sense_data(examples: list[UsageExample], lemmas: int, classes: int, seed: int = 0) -> ProbeData:
    """Supersense of polysemous nouns (the WSD split's noun lemmas), the ``classes`` commonest kept."""
    wsd = build_wsd(examples, seed=seed)
    nouns = sorted({i.example.lemma for i in wsd.items if i.example.pos == "n"})
    chosen = set(random.Random(seed).sample(nouns, min(lemmas, len(nouns))))
    reader = wordnet()
    items = [(i.example, reader.synset(i.example.synset).lexname()) for i in wsd.items]
    items = [(e, lex) for e, lex in items if e.pos == "n" and e.lemma in chosen]
    common = {lex for lex, _ in Counter(lex for _, lex in items).most_common(classes)}
    out = ProbeData("sense", [], [], [])
    for e, lex in items:
        if lex in common:
            out.examples.append(e)
            out.labels.append(lex.removeprefix("noun."))
            out.groups.append(e.lemma)
    return out


def control_labels(data: ProbeData, seed: int = 0) -> list[str]:
    """Hewitt & Liang: one random label per word type, drawn from the task's label distribution."""
    rng = random.Random(seed)
    by_type: dict[str, str] = {}
    for group in sorted(set(data.groups)):
        by_type[group] = rng.choice(data.labels)
    return [by_type[g] for g in data.groups]


def probe_accuracy(x: np.ndarray, labels: list[str], groups: list[str]) -> float:
    """Mean accuracy of a linear probe over GroupKFold folds (lemmas never shared).

    One BLAS thread: these fits are small, and threads fighting over busy cores made them 15x slower.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500, C=0.1))
    folds = GroupKFold(n_splits=min(FOLDS, len(set(groups))))
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        scores = cross_val_score(probe, x, np.asarray(labels), groups=np.asarray(groups), cv=folds)
    return float(np.mean(scores))


def expected_layer(scores: list[float]) -> float | None:
    """Tenney et al.'s centre of gravity of per-layer gains (None when nothing is gained)."""
    gains = np.clip(np.diff(np.asarray(scores)), 0, None)
    if gains.sum() <= 0:
        return None
    return float(np.sum(np.arange(1, len(scores)) * gains) / gains.sum())


def run_layer_probes(
    model: ContextualModel | str,
    static: StaticModel | str = "glove-50d",
    size: str = "full",
    progress: Callable[[int, int], None] | None = None,
) -> LayerProbeResult:
    """Per-layer probe accuracy for pos, sense and their controls, with layer-free baselines."""
    if size not in SIZES:
        raise InputError(f"unknown size {size!r}; use one of {', '.join(SIZES)}")
    started = time.perf_counter()
    m = as_contextual(model)
    s = static if isinstance(static, StaticModel) else load_static(static)
    lemmas, per_label, classes = SIZES[size]
    examples = usage_examples()
    datasets = [pos_data(examples, lemmas, per_label), sense_data(examples, lemmas * 2, classes)]
    result = LayerProbeResult("layers", m.name, meta={"size": size}, num_layers=m.num_layers)
    encode_seconds = 0.0
    for data in datasets:
        if len(data.examples) < MIN_EXAMPLES:
            raise InputError(f"the {data.task} probe needs at least {MIN_EXAMPLES} examples, got {len(data.examples)}")
        texts = sorted({e.text for e in data.examples})
        where = {t: i for i, t in enumerate(texts)}
        spans = [(where[e.text], e.start, e.end) for e in data.examples]
        t0 = time.perf_counter()
        enc = encode_spans(m, texts, spans, progress=progress)
        encode_seconds += time.perf_counter() - t0
        control = control_labels(data)
        result.counts[data.task] = ProbeCounts(
            len(data.examples),
            len(set(data.groups)),
            dict(Counter(data.labels)),
            max(Counter(data.labels).values()) / len(data.labels),
        )
        for split, labels in ((data.task, data.labels), (f"{data.task}-control", control)):
            scores = [probe_accuracy(enc.layer(layer), labels, data.groups) for layer in range(m.num_layers + 1)]
            for layer, acc in enumerate(scores):
                result.add(system=m.name, layer=layer, split=split, metric="accuracy", value=acc)
            result.expected_layer[split] = expected_layer(scores)
            result.add(
                system=f"{m.name} input row",
                layer=None,
                split=split,
                metric="accuracy",
                value=probe_accuracy(enc.input_rows, labels, data.groups),
            )
            static_x = np.stack([_static_vector(s, e.word) for e in data.examples])
            result.add(
                system=s.name,
                layer=None,
                split=split,
                metric="accuracy",
                value=probe_accuracy(static_x, labels, data.groups),
            )
    result.meta["seconds"] = time.perf_counter() - started
    result.meta["encode_seconds"] = encode_seconds
    return record_precision(result, m)


def _static_vector(static: StaticModel, word: str) -> np.ndarray:
    """The word form's static vector; zeros when out of vocabulary (counted as no information)."""
    key = word.lower() if static.lowercase else word
    index = static.kv.key_to_index.get(key, static.kv.key_to_index.get(word.lower()))
    return np.zeros(static.dim, dtype=np.float32) if index is None else static.kv.vectors[index]
