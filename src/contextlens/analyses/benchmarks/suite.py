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
from dataclasses import dataclass, field
from typing import Any, TypeVar

from contextlens.analyses.benchmarks import contextuality as ctx
from contextlens.analyses.benchmarks import similarity as sim
from contextlens.analyses.benchmarks.result import BenchmarkResult, record_precision
from contextlens.analyses.benchmarks.wic import WicResult, evaluate_wic
from contextlens.analyses.benchmarks.wsd import WsdResult, evaluate_wsd
from contextlens.analyses.measures import word_pairs
from contextlens.analyses.measures.datasets import WicData, WsdData, build_wsd
from contextlens.analyses.measures.sizes import SEED, SIZES
from contextlens.analyses.measures.span_encoding import Progress, Span, SpanEncoding, SpanRows, encode_spans
from contextlens.analyses.measures.wic_pairs import WicSet, build_wic_set, encode_wic, pair_rows
from contextlens.core import wordnet as wn
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.static_models import StaticModel, as_static

Result = TypeVar("Result", bound=BenchmarkResult)


@dataclass
class Suite:
    size: str
    texts: list[str]
    spans: list[Span]
    wic: WicData
    wic_rows: list[tuple[int, int]]
    wsd: WsdData
    wsd_rows: list[int]
    similarity: list[word_pairs.SimilarityDataset]
    template_rows: dict[str, int]
    context_rows: dict[str, list[int]]
    contextuality: ctx.ContextualitySample
    span_index: dict[Span, int]
    counts: dict[str, Any] = field(default_factory=dict)


@functools.cache
def build_suite(size: str = "full") -> Suite:
    """The deterministic data of every benchmark, over one list of texts."""
    spec = SIZES[size]
    wn.check_installed()  # fail early and clearly, even when the examples are cached
    examples = wn.usage_examples()
    b = SpanRows()
    wic = build_wic_set(size).wic  # the very pairs eval wic, the sense choice and same-sense read
    wic_rows = pair_rows(wic, b)
    wsd = build_wsd(examples, max_lemmas=spec.wsd_lemmas, max_train_per_sense=spec.wsd_train_per_sense, seed=SEED)
    wsd_rows = [b.span(it.example.text, it.example.start, it.example.end) for it in wsd.items]

    datasets = [word_pairs.load_dataset(name) for name in word_pairs.DATASETS]
    if spec.similarity_pairs is not None:
        datasets = [word_pairs.SimilarityDataset(d.name, d.pairs[: spec.similarity_pairs]) for d in datasets]
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


def encode_suite(
    model: ContextualModel | str, size: str, progress: Progress | None = None
) -> tuple[SpanEncoding, float]:
    """Every span of the suite through ``model`` (disk-cached); and the seconds it took."""
    suite = build_suite(size)
    model = as_contextual(model)
    started = time.perf_counter()
    encoding = encode_spans(model, suite.texts, suite.spans, progress=progress)
    return encoding, time.perf_counter() - started


def _finish(
    result: Result, data: Suite | WicSet, model: ContextualModel | str, started: float, encode_seconds: float
) -> Result:
    """What every run_* records beside its numbers: the data's size and counts, the seconds since
    ``started`` (encoding included) and the encoding's own, and the model's precision and runtime."""
    result.meta.update(
        {
            "size": data.size,
            "suite": data.counts,
            "seconds": round(time.perf_counter() - started, 2),
            "encode_seconds": round(encode_seconds, 2),
        }
    )
    return record_precision(result, model)


@dataclass
class SuiteRun:
    """One suite benchmark's run under way: the suite, its encoding (every span, disk-cached), when
    the run started and the seconds spent encoding (a benchmark that encodes more adds its own)."""

    suite: Suite
    encoding: SpanEncoding
    started: float
    encode_seconds: float

    def finish(self, result: Result, model: ContextualModel | str) -> Result:
        """``result`` with what every run records (:func:`_finish`)."""
        return _finish(result, self.suite, model, self.started, self.encode_seconds)


def start_run(model: ContextualModel | str, size: str, progress: Progress | None = None) -> SuiteRun:
    """The first steps of every run on the suite: the clock started, the suite built, encoded."""
    started = time.perf_counter()
    suite = build_suite(size)
    encoding, seconds = encode_suite(model, size, progress)
    return SuiteRun(suite, encoding, started, seconds)


def run_wic(
    model: ContextualModel | str, static: StaticModel | str, size: str = "full", progress: Progress | None = None
) -> WicResult:
    """WiC per layer over the dev/test pairs' own encoding (:func:`encode_wic`), the one the
    sense layer choice and same-sense's rule read."""

    started = time.perf_counter()
    build_wic_set(size)
    static_model = as_static(static)  # a wrong name fails before the encoding
    wic, enc, secs = encode_wic(model, size, progress)
    result = evaluate_wic(wic.wic, wic.rows, enc.hidden, enc.input_rows, enc.model, static_model, static_model.name)
    return _finish(result, wic, model, started, secs)


def run_wsd(
    model: ContextualModel | str, size: str = "full", progress: Progress | None = None, glosses: bool = False
) -> WsdResult:
    """WSD per layer; with ``glosses`` also sense vectors that include the WordNet gloss."""

    run = start_run(model, size, progress)
    gloss_hidden, gloss_rows = None, None
    if glosses:
        texts, spans, gloss_rows = gloss_spans(run.suite.wsd)
        gloss_started = time.perf_counter()
        gloss_hidden = encode_spans(as_contextual(model), texts, spans, progress=progress).hidden
        run.encode_seconds += time.perf_counter() - gloss_started
    enc = run.encoding
    result = evaluate_wsd(
        run.suite.wsd, run.suite.wsd_rows, enc.hidden, enc.model, wn.sense_count, SEED, gloss_hidden, gloss_rows
    )
    if glosses:
        result.gloss_template = GLOSS_TEMPLATE
    return run.finish(result, model)


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
) -> sim.SimilarityResult:
    static_model = as_static(static)  # a wrong name fails before the (long) encoding
    run = start_run(model, size, progress)
    enc, suite = run.encoding, run.suite
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
    result.contexts_per_word = SIZES[size].contexts_per_word
    result.context_corpus = "WordNet 3.0 usage examples (exact word form, one span per sentence)"
    return run.finish(result, model)


def run_contextuality(
    model: ContextualModel | str, size: str = "full", progress: Progress | None = None
) -> ctx.ContextualityResult:
    run = start_run(model, size, progress)
    enc = run.encoding
    result = ctx.evaluate_contextuality(enc.hidden, run.suite.span_index, run.suite.contextuality, enc.model, SEED)
    return run.finish(result, model)
