"""The benchmark suite: all four benchmarks' data over one shared set of sentences.

WiC pairs, WSD examples, word-similarity contexts and the contextuality sample all point into
one list of texts (WordNet 3.0 usage examples, plus the similarity template sentences). The
first ``eval`` command for a model encodes every text once (:func:`encode_spans`, cached on
disk); the other benchmarks then read the same cached vectors. ``quick`` builds a small subset
for tests and demos; ``full`` is sized so that the whole suite fits in the time budget
(docs/benchmarks.md gives the measured times).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contextlens.analyses.benchmarks import contextuality as ctx
from contextlens.analyses.benchmarks import similarity as sim
from contextlens.analyses.benchmarks.datasets import WicData, WsdData, build_wic, build_wic_train, build_wsd
from contextlens.analyses.benchmarks.result import BenchmarkResult, record_precision
from contextlens.analyses.benchmarks.span_encoding import Progress, Span, SpanEncoding, encode_spans, is_encoded
from contextlens.analyses.benchmarks.wic import evaluate_wic
from contextlens.analyses.benchmarks.wsd import evaluate_wsd
from contextlens.core import wordnet as wn
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.static_models import StaticModel, as_static

SEED = 0


@dataclass(frozen=True)
class SuiteSize:
    wic_lemmas: int
    wsd_lemmas: int
    wsd_train_per_sense: int
    similarity_pairs: int | None  # per dataset; None = all
    contexts_per_word: int
    contextuality_words: int
    contextuality_sentences: int
    wic_train_lemmas: int = 500  # same-sense's logistic fit: lemmas in neither dev nor test


SIZES = {
    "full": SuiteSize(1000, 500, 3, None, 5, 200, 300),
    "quick": SuiteSize(30, 12, 2, 30, 2, 12, 12, wic_train_lemmas=30),
}


@dataclass
class Suite:
    size: str
    texts: list[str]
    spans: list[Span]
    wic: WicData
    wic_rows: list[tuple[int, int]]
    wsd: WsdData
    wsd_rows: list[int]
    similarity: list[sim.SimilarityDataset]
    template_rows: dict[str, int]
    context_rows: dict[str, list[int]]
    contextuality: ctx.ContextualitySample
    span_index: dict[Span, int]
    counts: dict[str, Any] = field(default_factory=dict)


class _Builder:
    """Collects texts and spans, giving each distinct one a stable row."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.text_index: dict[str, int] = {}
        self.spans: list[Span] = []
        self.span_index: dict[Span, int] = {}

    def text(self, text: str) -> int:
        if text not in self.text_index:
            self.text_index[text] = len(self.texts)
            self.texts.append(text)
        return self.text_index[text]

    def span(self, text: str, start: int, end: int) -> int:
        key = (self.text(text), start, end)
        if key not in self.span_index:
            self.span_index[key] = len(self.spans)
            self.spans.append(key)
        return self.span_index[key]


@functools.cache
def build_suite(size: str = "full") -> Suite:
    """The deterministic data of every benchmark, over one list of texts."""
    spec = SIZES[size]
    wn.check_installed()  # fail early and clearly, even when the examples are cached
    examples = wn.usage_examples()
    b = _Builder()
    wic = build_wic_set(size).wic  # the very pairs eval wic, the sense choice and same-sense read
    wic_rows = [
        (b.span(p.first.text, p.first.start, p.first.end), b.span(p.second.text, p.second.start, p.second.end))
        for p in wic.pairs
    ]
    wsd = build_wsd(examples, max_lemmas=spec.wsd_lemmas, max_train_per_sense=spec.wsd_train_per_sense, seed=SEED)
    wsd_rows = [b.span(it.example.text, it.example.start, it.example.end) for it in wsd.items]

    datasets = [sim.load_dataset(name) for name in sim.DATASETS]
    if spec.similarity_pairs is not None:
        datasets = [sim.SimilarityDataset(d.name, d.pairs[: spec.similarity_pairs]) for d in datasets]
    words = sorted({w for d in datasets for w in d.words})
    corpus = sorted({e.text for e in examples})
    already = {i for i, t in enumerate(corpus) if t in b.text_index}
    contexts = sim.find_contexts(words, corpus, spec.contexts_per_word, seed=SEED, prefer=already)
    context_rows = {w: [b.span(corpus[t], s, e) for t, s, e in spans] for w, spans in contexts.items()}

    wordnet_texts = list(b.texts)  # contextuality reads sentences that are encoded anyway
    sample = ctx.build_sample(
        wordnet_texts, n_words=spec.contextuality_words, n_sentences=spec.contextuality_sentences, seed=SEED
    )
    for span in sample.spans():
        b.span(wordnet_texts[span[0]], span[1], span[2])
    template_rows = {}
    for w in words:
        text, start, end = sim.template_occurrence(w)
        template_rows[w] = b.span(text, start, end)
    counts = {
        "texts": len(b.texts),
        "spans": len(b.spans),
        "wordnet_examples": wn.usage_example_stats(),
        "similarity_words_with_contexts": sum(1 for w in words if context_rows.get(w)),
        "similarity_words": len(words),
    }
    return Suite(
        size,
        b.texts,
        b.spans,
        wic,
        wic_rows,
        wsd,
        wsd_rows,
        datasets,
        template_rows,
        context_rows,
        sample,
        b.span_index,
        counts,
    )


@dataclass
class WicTrain:
    """Word-in-context train pairs (lemmas in neither the suite's dev nor test) over their own texts."""

    wic: WicData
    texts: list[str]
    spans: list[Span]
    rows: list[tuple[int, int]]  # each pair's two rows in ``spans``


@dataclass
class WicSet:
    """`eval wic`'s dev and test pairs (the suite's, the same WicData) over their own texts.

    Why: the sense choice of ``--layer auto``, same-sense's rule and `eval wic` need only these
    pairs' spans; encoding them alone costs a fraction of the whole suite (docs/speed.md, issue 30),
    and all three read this one encoding, so their numbers agree."""

    size: str
    wic: WicData
    texts: list[str]
    spans: list[Span]
    rows: list[tuple[int, int]]  # each pair's two rows in ``spans``
    counts: dict[str, Any] = field(default_factory=dict)


def _pair_rows(wic: WicData) -> tuple[list[str], list[Span], list[tuple[int, int]]]:
    b = _Builder()
    rows = [
        (b.span(p.first.text, p.first.start, p.first.end), b.span(p.second.text, p.second.start, p.second.end))
        for p in wic.pairs
    ]
    return b.texts, b.spans, rows


@functools.cache
def build_wic_set(size: str = "full") -> WicSet:
    """The WiC dev/test pairs of the suite at ``size`` (built as :func:`build_suite` builds them)."""
    wn.check_installed()  # fail early and clearly, even when the examples are cached
    wic = build_wic(wn.usage_examples(), max_lemmas=SIZES[size].wic_lemmas, seed=SEED)
    texts, spans, rows = _pair_rows(wic)
    counts = {"texts": len(texts), "spans": len(spans), "wordnet_examples": wn.usage_example_stats()}
    return WicSet(size, wic, texts, spans, rows, counts)


def encode_wic(
    model: ContextualModel | str, size: str, progress: Progress | None = None
) -> tuple[WicSet, SpanEncoding, float]:
    """The WiC dev/test pairs' spans through ``model`` (disk-cached); and the seconds it took."""
    wic = build_wic_set(size)
    model = as_contextual(model)
    started = time.perf_counter()
    encoding = encode_spans(model, wic.texts, wic.spans, progress=progress)
    return wic, encoding, time.perf_counter() - started


def wic_is_encoded(model: ContextualModel, size: str) -> bool:
    """Whether :func:`encode_wic` would read its cache (no encoding) for ``model``."""
    wic = build_wic_set(size)
    return is_encoded(model, wic.texts, wic.spans)


@functools.cache
def build_wic_train_set(size: str = "full") -> WicTrain:
    """The train pairs beside the suite's WiC dev/test (:func:`datasets.build_wic_train`): a set
    of its own, encoded apart, so the suite (and every cached benchmark encoding) is unchanged."""
    dev_test = build_wic_set(size).wic  # the suite's own pairs, without building the whole suite
    wic = build_wic_train(wn.usage_examples(), dev_test, max_lemmas=SIZES[size].wic_train_lemmas, seed=SEED)
    texts, spans, rows = _pair_rows(wic)
    return WicTrain(wic, texts, spans, rows)


def encode_wic_train(
    model: ContextualModel, size: str, progress: Progress | None = None
) -> tuple[WicTrain, SpanEncoding]:
    """The train pairs' spans through ``model`` (disk-cached like the suite)."""
    train = build_wic_train_set(size)
    return train, encode_spans(model, train.texts, train.spans, progress=progress)


def wic_train_is_encoded(model: ContextualModel, size: str) -> bool:
    """Whether :func:`encode_wic_train` would read its cache (no encoding) for ``model``."""
    train = build_wic_train_set(size)
    return is_encoded(model, train.texts, train.spans)


def encode_suite(
    model: ContextualModel | str, size: str, progress: Progress | None = None
) -> tuple[SpanEncoding, float]:
    """Every span of the suite through ``model`` (disk-cached); and the seconds it took."""
    suite = build_suite(size)
    model = as_contextual(model)
    started = time.perf_counter()
    encoding = encode_spans(model, suite.texts, suite.spans, progress=progress)
    return encoding, time.perf_counter() - started


def _meta(result: BenchmarkResult, suite: Suite | WicSet, seconds: float, encode_seconds: float) -> BenchmarkResult:
    result.meta.update(
        {
            "size": suite.size,
            "suite": suite.counts,
            "seconds": round(seconds, 2),
            "encode_seconds": round(encode_seconds, 2),
        }
    )
    return result


def _timed(
    model: ContextualModel | str, run: Callable[[], tuple[BenchmarkResult, Suite | WicSet, float]]
) -> BenchmarkResult:
    started = time.perf_counter()
    result, suite, encode_seconds = run()
    return record_precision(_meta(result, suite, time.perf_counter() - started, encode_seconds), model)


def run_wic(
    model: ContextualModel | str, static: StaticModel | str, size: str = "full", progress: Progress | None = None
) -> BenchmarkResult:
    """WiC per layer over the dev/test pairs' own encoding (:func:`encode_wic`), the one the
    sense layer choice and same-sense's rule read."""

    def run() -> tuple[BenchmarkResult, WicSet, float]:
        build_wic_set(size)
        static_model = as_static(static)  # a wrong name fails before the encoding
        wic, enc, secs = encode_wic(model, size, progress)
        result = evaluate_wic(wic.wic, wic.rows, enc.hidden, enc.input_rows, enc.model, static_model, static_model.name)
        return result, wic, secs

    return _timed(model, run)


def run_wsd(
    model: ContextualModel | str, size: str = "full", progress: Progress | None = None, glosses: bool = False
) -> BenchmarkResult:
    """WSD per layer; with ``glosses`` also sense vectors that include the WordNet gloss."""

    def run() -> tuple[BenchmarkResult, Suite, float]:
        suite = build_suite(size)
        enc, secs = encode_suite(model, size, progress)
        gloss_hidden, gloss_rows = None, None
        if glosses:
            texts, spans, gloss_rows = gloss_spans(suite.wsd)
            started = time.perf_counter()
            gloss_hidden = encode_spans(as_contextual(model), texts, spans, progress=progress).hidden
            secs += time.perf_counter() - started
        result = evaluate_wsd(
            suite.wsd, suite.wsd_rows, enc.hidden, enc.model, wn.sense_count, SEED, gloss_hidden, gloss_rows
        )
        if glosses:
            result.meta["gloss_template"] = GLOSS_TEMPLATE
        return result, suite, secs

    return _timed(model, run)


GLOSS_TEMPLATE = "{lemma}: {definition}"


def gloss_spans(wsd: WsdData) -> tuple[list[str], list[Span], dict[tuple[tuple[str, str], str], int]]:
    """One text per candidate sense, ``"<lemma>: <gloss>"``, with the span of the lemma (LMMS style)."""
    reader = wn.wordnet()
    senses = sorted({(item.key, item.example.synset) for item in wsd.items if item.split == "train"})
    texts, spans, rows = [], [], {}
    for key, synset in senses:
        lemma = key[0]
        text = GLOSS_TEMPLATE.format(lemma=lemma, definition=reader.synset(synset).definition())
        rows[(key, synset)] = len(spans)
        spans.append((len(texts), 0, len(lemma)))
        texts.append(text)
    return texts, spans, rows


def run_similarity(
    model: ContextualModel | str, static: StaticModel | str, size: str = "full", progress: Progress | None = None
) -> BenchmarkResult:
    def run() -> tuple[BenchmarkResult, Suite, float]:
        suite = build_suite(size)
        static_model = as_static(static)  # a wrong name fails before the (long) encoding
        enc, secs = encode_suite(model, size, progress)
        result = sim.evaluate_similarity(
            suite.similarity,
            enc.model,
            static_model,
            static_model.name,
            enc.hidden,
            suite.template_rows,
            enc.hidden,
            suite.context_rows,
        )
        result.meta["contexts_per_word"] = SIZES[size].contexts_per_word
        result.meta["context_corpus"] = "WordNet 3.0 usage examples (exact word form, one span per sentence)"
        return result, suite, secs

    return _timed(model, run)


def run_contextuality(
    model: ContextualModel | str, size: str = "full", progress: Progress | None = None
) -> BenchmarkResult:
    def run() -> tuple[BenchmarkResult, Suite, float]:
        suite = build_suite(size)
        enc, secs = encode_suite(model, size, progress)
        return (
            ctx.evaluate_contextuality(enc.hidden, suite.span_index, suite.contextuality, enc.model, SEED),
            suite,
            secs,
        )

    return _timed(model, run)
