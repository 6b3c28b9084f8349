"""How contextual are the hidden states? Ethayarajh (2019), per layer, on real sentences.

Ethayarajh, "How Contextual are Contextualized Word Representations? Comparing the Geometry of
BERT, ELMo, and GPT-2 Embeddings", EMNLP 2019. For a word ``w`` seen in contexts ``s_1..s_n``
with representations ``f_l(s_i, w)`` at layer ``l``:

* anisotropy baseline - mean cosine of two random words from different contexts;
* self-similarity - mean pairwise cosine of ``w``'s representations across its contexts;
* intra-sentence similarity - mean cosine of each word in a sentence to the sentence's mean vector;
* maximum explainable variance (MEV) - share of the variance of ``w``'s occurrence matrix that
  its first principal component explains, three ways (``mev_paper``, :func:`paper_mev`, is what the
  paper's released per-word files hold; the two below are PCA variants): ``mev_centred``, as the paper's released code
  computes it (sklearn ``PCA(n_components=1).explained_variance_ratio_``: the occurrences are
  centred first, so it measures how much of the *spread around the word's mean* one direction
  explains; the paper's BERT means are 0.02-0.04), and ``mev`` (uncentred), contextlens's
  earlier ``sigma_1^2 / sum sigma_i^2`` of the raw matrix, which counts the shared mean
  direction as explained and so is far higher (0.75-0.95 here) - not comparable with the paper.

Each is reported raw and anisotropy-adjusted: self- and intra-sentence similarity minus the
anisotropy baseline, each MEV minus the same MEV of random words' matrices of the same size. Words are
whole words (the mean of their subword tokens), as for every other contextlens target.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contextlens.analyses.benchmarks.published import published
from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.core.occurrences import ALPHA_WORD_RE
from contextlens.core.similarity import normalize_rows

Span = tuple[int, int, int]
METRICS = ("anisotropy", "self_similarity", "intra_sentence", "mev")

# The paper's findings for BERT-base that our curves are compared with, in its own terms (text,
# not figure read-outs): the figures themselves are not reproduced here.
PAPER_FINDINGS = {
    "anisotropy": "BERT: representations are anisotropic in every layer, more so in upper layers.",
    "self_similarity": "BERT: self-similarity falls in upper layers (more context-specific).",
    "intra_sentence": "BERT: words in one sentence grow more dissimilar in upper layers.",
    "mev": (
        "all models, all layers: < 5% of a word's variance is explained by one static vector "
        "(its released files' MEV, 'MEV paper' here: TruncatedSVD's ratio; BERT 0.020-0.040)"
    ),
}
PAPER_MEV_BOUND = 0.05
MEV_DEFINITIONS = {
    "mev_centred": "PCA(n_components=1).explained_variance_ratio_ of the word's centred "
    "occurrences (another commit of the paper's analyze.py, 3865f9b; not how its released per-word files were "
    "made, see mev_paper): at least 1/(n-1) with n contexts, so not comparable with the released figures",
    "mev": "uncentred sigma_1^2 / sum sigma_i^2 of the raw occurrence matrix (contextlens before issue 19): "
    "the shared mean direction counts as explained, so it is far higher; not comparable with the paper",
    "mev_paper": "what the paper's released per-word files hold (analyze.py @84d2f97: sklearn "
    "TruncatedSVD(n_components=100).explained_variance_ratio_[0]): the variance of the occurrences along the "
    "first right singular vector of the UNCENTRED matrix (mostly the shared mean direction) over their total "
    "centred variance; it has no 1/(n-1) floor (the paper's 'render': 0.016 over 6 occurrences). The paper's "
    "random-word value is the same ratio on one matrix of 1,000 random words; `mev_paper_baseline` is it on "
    "random words' matrices of each word's own size, `mev_paper_baseline_1000` on one matrix of up to 1,000",
}
PAPER_RANDOM_WORDS = 1000  # the paper's explore_embedding_space: one random word from each of 1,000 sentences


@dataclass(frozen=True)
class ContextsPerWord:
    """On a corpus: the fewest, median and most contexts a measured word has."""

    min: int
    median: int
    max: int


@dataclass(frozen=True)
class ContextualityCounts:
    """The data behind the numbers: the words measured for self-similarity and MEV and their
    occurrences, the sentences (and their words) for intra-sentence similarity; on the WordNet
    sample the most contexts kept per word, on a corpus the contexts a word needs and has."""

    words: int
    word_occurrences: int
    sentences: int
    sentence_words: int
    max_contexts_per_word: int | None = None  # the WordNet sample's cap; None on a corpus
    min_contexts: int | None = None  # on a corpus: contexts a word needs to be measured
    contexts_per_word: ContextsPerWord | None = None  # on a corpus

    @classmethod
    def of(cls, counts: dict[str, Any]) -> ContextualityCounts:
        per = counts.get("contexts_per_word")
        return cls(**counts | {"contexts_per_word": None if per is None else ContextsPerWord(**per)})


@dataclass(frozen=True)
class CorpusChoice:
    """How a corpus's words were chosen: sentences counted, words that qualify, the cap on words,
    the sentences sampled for intra-sentence similarity, the seed."""

    sentences_scanned: int
    eligible_words: int
    max_words: int
    sampled_sentences: int
    seed: int


@dataclass
class ContextualityResult(BenchmarkResult):
    """`eval contextuality`'s result (WordNet sample or corpus): the tidy rows (one per layer and
    metric: cosines in -1..1, MEV shares in 0..1, their baselines and ``*_adjusted`` differences).
    ``meta`` stays the document `--json` prints, since callers read its keys (``counts``,
    ``paper_findings``, ``published``, ``mev_definitions``, ``warnings``; on a corpus ``words``,
    ``corpus``, ``choice``, ``cache``); the properties below are the typed reads the faces make."""

    @property
    def counts(self) -> ContextualityCounts:
        return ContextualityCounts.of(self.meta["counts"])

    @property
    def paper_findings(self) -> dict[str, str]:
        """The paper's finding per metric, in its own terms (:data:`PAPER_FINDINGS`)."""
        return self.meta.get("paper_findings", {})

    @property
    def paper_mev_bound(self) -> float | None:
        """The paper's bound on MEV (a share, 0-1), drawn as a line."""
        return self.meta.get("paper_mev_bound")

    @property
    def published_rows(self) -> list[dict[str, float | int | None]]:
        """The paper's released per-layer numbers (:data:`published.PUBLISHED_ROWS`); none when absent."""
        return (self.meta.get("published") or {}).get("rows", [])

    @property
    def warnings(self) -> list[str]:
        """What the data cannot support, said beside the numbers (a corpus's few sentences, ...)."""
        return self.meta.get("warnings") or []

    @property
    def corpus(self) -> str | None:
        """The corpus measured, as described to a reader; None on the WordNet sample."""
        return self.meta.get("corpus")

    @property
    def intra_sentence_words(self) -> str | None:
        """On a corpus: which words the intra-sentence similarity averages over."""
        return self.meta.get("intra_sentence_words")

    @property
    def word_rule(self) -> str | None:
        """On a corpus whose words contextlens chose: the rule it chose them by."""
        return self.meta.get("word_rule")

    @property
    def choice(self) -> CorpusChoice | None:
        """On a corpus whose words contextlens chose: how (None on a folder or the WordNet sample)."""
        choice = self.meta.get("choice")
        return None if choice is None else CorpusChoice(**choice)

    @property
    def cache_folder(self) -> str | None:
        """On a corpus whose words contextlens chose: the cache folder of its extractions."""
        return (self.meta.get("cache") or {}).get("folder")


@dataclass
class ContextualitySample:
    """Spans of the words measured for self-similarity/MEV, and of every word of some sentences."""

    words: dict[str, list[Span]]  # word -> its occurrences, one per text
    sentences: list[list[Span]]  # all words of each sampled sentence
    max_contexts: int = 10  # most occurrences kept per word

    def spans(self) -> list[Span]:
        out = {s for spans in self.words.values() for s in spans}
        out.update(s for sent in self.sentences for s in sent)
        return sorted(out)


def build_sample(
    texts: Sequence[str],
    *,
    n_words: int,
    n_sentences: int,
    min_contexts: int = 5,
    max_contexts: int = 10,
    seed: int = 0,
) -> ContextualitySample:
    """A seeded sample: ``n_words`` words seen in at least ``min_contexts`` texts, and ``n_sentences``
    sentences of at least three words. Ethayarajh also keeps words with five or more contexts."""
    where: dict[str, list[Span]] = defaultdict(list)
    sentence_words: list[list[Span]] = []
    for t, text in enumerate(texts):
        seen: set[str] = set()
        words = []
        for m in ALPHA_WORD_RE.finditer(text):
            w = m.group().lower()
            words.append((t, m.start(), m.end()))
            if w not in seen:
                seen.add(w)
                where[w].append((t, m.start(), m.end()))
        sentence_words.append(words)
    frequent = sorted(w for w, spans in where.items() if len(spans) >= min_contexts)
    rng = random.Random(seed)
    chosen = sorted(rng.sample(frequent, min(n_words, len(frequent))))
    words = {}
    for w in chosen:
        spans = list(where[w])
        random.Random(f"{seed}|{w}").shuffle(spans)
        words[w] = sorted(spans[:max_contexts])
    candidates = [i for i, ws in enumerate(sentence_words) if len(ws) >= 3]
    picked = sorted(rng.sample(candidates, min(n_sentences, len(candidates))))
    return ContextualitySample(words, [sentence_words[i] for i in picked], max_contexts)


# --- the metrics (each on one layer's vectors) --------------------------------------------


def self_similarity(occurrences: np.ndarray) -> float:
    """Mean cosine over all distinct pairs of rows (one word's occurrences)."""
    n = len(occurrences)
    u = normalize_rows(occurrences)
    sims = u @ u.T
    return float((sims.sum() - np.trace(sims)) / (n * (n - 1)))


def intra_sentence_similarity(words: np.ndarray) -> float:
    """Mean cosine of each row (a word of one sentence) to the mean of all rows."""
    centre = words.mean(axis=0)
    return float((normalize_rows(words) @ normalize_rows(centre)).mean())


def max_explainable_variance(occurrences: np.ndarray, *, centred: bool = False) -> float:
    """``sigma_1^2 / sum_i sigma_i^2`` of the occurrence matrix: uncentred by default (contextlens's
    ``mev``); ``centred=True`` subtracts the mean occurrence first, which is exactly sklearn's
    ``PCA(n_components=1).explained_variance_ratio_[0]``, the paper's MEV (``mev_centred``). With
    n occurrences the centred value is at least 1/(n - 1), the uncentred at least 1/n.

    The squared singular values are the eigenvalues of the smaller Gram matrix (float64), and only
    the largest is needed (Lanczos for the larger ones): the same number as an SVD to 1e-12,
    without numpy's float32 SVD that took 0.36 s on a 75 x 384 matrix (minutes on a corpus).
    """
    m = np.asarray(occurrences, dtype=np.float64)
    if centred:
        m = m - m.mean(axis=0)
    gram = m @ m.T if len(m) <= m.shape[1] else m.T @ m
    if len(gram) <= 32:
        top = np.linalg.eigvalsh(gram)[-1]
    else:
        from scipy.sparse.linalg import eigsh

        top = eigsh(gram, k=1, which="LA", return_eigenvectors=False, tol=1e-12, v0=np.ones(len(gram)))[0]
    return float(top / np.trace(gram))


def paper_mev(occurrences: np.ndarray) -> float:
    """The paper's released per-word MEV (``mev_paper``): exactly sklearn's
    ``TruncatedSVD(...).fit(X).explained_variance_ratio_[0]``, i.e. ``var(X v1) / sum_j var(X[:, j])``
    with ``v1`` the first right singular vector of the *uncentred* ``X``. Why a third MEV: the
    released ``variance_explained.csv`` was made this way, so only this one can be set beside its
    numbers (a centred PCA of n points is at least 1/(n - 1); this ratio is not bounded so)."""
    m = np.asarray(occurrences, dtype=np.float64)
    if len(m) <= m.shape[1]:
        values, vectors = np.linalg.eigh(m @ m.T)
        top = m.T @ vectors[:, -1]
    else:
        values, vectors = np.linalg.eigh(m.T @ m)
        top = vectors[:, -1]
    top /= np.linalg.norm(top)
    total = float(m.var(axis=0).sum())
    return float(np.var(m @ top) / total) if total > 0 else float("nan")


def paper_random_mev(vectors: np.ndarray, texts_of: Sequence[int], seed: int) -> float:
    """:func:`paper_mev` of one matrix of random words, one from each of up to
    :data:`PAPER_RANDOM_WORDS` different texts, as the paper's ``explore_embedding_space`` draws it."""
    rng = np.random.default_rng(seed)
    rows_of: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(texts_of):
        rows_of[int(t)].append(i)
    texts = list(rows_of)
    picked = rng.choice(len(texts), size=min(PAPER_RANDOM_WORDS, len(texts)), replace=False)
    rows = [rows_of[texts[t]][int(rng.integers(len(rows_of[texts[t]])))] for t in picked]
    return paper_mev(vectors[rows]) if len(rows) >= 2 else float("nan")


def anisotropy_baseline(vectors: np.ndarray, texts_of: Sequence[int], n_pairs: int, seed: int) -> float:
    """Mean cosine of ``n_pairs`` random pairs of rows that come from different texts."""
    rng = np.random.default_rng(seed)
    u = normalize_rows(vectors)
    n = len(vectors)
    total, count = 0.0, 0
    texts = np.asarray(texts_of)
    while count < n_pairs:
        a = rng.integers(0, n, size=n_pairs)
        b = rng.integers(0, n, size=n_pairs)
        keep = texts[a] != texts[b]
        a, b = a[keep][: n_pairs - count], b[keep][: n_pairs - count]
        total += float(np.einsum("ij,ij->i", u[a], u[b]).sum())
        count += len(a)
    return total / count


@dataclass
class LayerContextuality:
    layer: int
    anisotropy: float
    self_similarity: float
    intra_sentence: float
    mev: float
    mev_baseline: float
    mev_centred: float = float("nan")  # the paper's MEV (centred PCA)
    mev_centred_baseline: float = float("nan")
    mev_paper: float = float("nan")  # the paper's released files' MEV (TruncatedSVD's ratio)
    mev_paper_baseline: float = float("nan")
    mev_paper_baseline_1000: float = float("nan")

    @property
    def adjusted(self) -> dict[str, float]:
        return {
            "self_similarity": self.self_similarity - self.anisotropy,
            "intra_sentence": self.intra_sentence - self.anisotropy,
            "mev": self.mev - self.mev_baseline,
            "mev_centred": self.mev_centred - self.mev_centred_baseline,
            "mev_paper": self.mev_paper - self.mev_paper_baseline,
            "mev_paper_1000": self.mev_paper - self.mev_paper_baseline_1000,
        }


def measure_layer(
    layer: int,
    vectors: np.ndarray,
    span_index: dict[Span, int],
    sample: ContextualitySample,
    *,
    n_pairs: int = 2000,
    seed: int = 0,
) -> LayerContextuality:
    """All four metrics on one layer. ``vectors[span_index[span]]`` is a span's vector."""
    all_spans = sample.spans()
    rows = np.array([span_index[s] for s in all_spans])
    texts_of = [s[0] for s in all_spans]
    baseline = anisotropy_baseline(vectors[rows], texts_of, n_pairs, seed)
    word_mats = [vectors[[span_index[s] for s in spans]] for spans in sample.words.values()]
    self_sim = float(np.mean([self_similarity(m) for m in word_mats]))
    mev = float(np.mean([max_explainable_variance(m) for m in word_mats]))
    mev_centred = float(np.mean([max_explainable_variance(m, centred=True) for m in word_mats]))
    rng = np.random.default_rng(seed + 1)
    random_mats = [vectors[rng.choice(rows, size=len(m), replace=False)] for m in word_mats]
    random_mev = [max_explainable_variance(m) for m in random_mats]
    random_centred = [max_explainable_variance(m, centred=True) for m in random_mats]
    mev_paper = float(np.mean([paper_mev(m) for m in word_mats]))
    random_paper = float(np.mean([paper_mev(m) for m in random_mats]))
    random_1000 = paper_random_mev(vectors[rows], texts_of, seed + 2)
    intra = float(
        np.mean([intra_sentence_similarity(vectors[[span_index[s] for s in sent]]) for sent in sample.sentences])
    )
    return LayerContextuality(
        layer, baseline, self_sim, intra, mev, float(np.mean(random_mev)), mev_centred,
        float(np.mean(random_centred)), mev_paper, random_paper, random_1000,
    )  # fmt: skip


def evaluate_contextuality(
    vectors: np.ndarray, span_index: dict[Span, int], sample: ContextualitySample, model: str, seed: int = 0
) -> ContextualityResult:
    """The four metrics, raw and adjusted, for every layer of ``vectors`` ``(n_spans, layers + 1, d)``."""
    result = ContextualityResult(
        "contextuality",
        model,
        meta={
            "counts": {
                "words": len(sample.words),
                "word_occurrences": sum(len(v) for v in sample.words.values()),
                "max_contexts_per_word": sample.max_contexts,
                "sentences": len(sample.sentences),
                "sentence_words": sum(len(s) for s in sample.sentences),
            },
            "paper": "Ethayarajh 2019, EMNLP, Figures 1-4 (BERT-base, ELMo, GPT-2)",
            "paper_findings": PAPER_FINDINGS,
            "paper_mev_bound": PAPER_MEV_BOUND,
            "mev_definitions": MEV_DEFINITIONS,
            "published": published(),
        },
    )
    for layer in range(vectors.shape[1]):
        m = measure_layer(layer, vectors[:, layer, :], span_index, sample, seed=seed)
        common = {"system": model, "layer": layer, "split": "wordnet-examples"}
        result.add(**common, metric="anisotropy", value=m.anisotropy)
        result.add(**common, metric="self_similarity", value=m.self_similarity)
        result.add(**common, metric="intra_sentence", value=m.intra_sentence)
        result.add(**common, metric="mev", value=m.mev)
        result.add(**common, metric="mev_baseline", value=m.mev_baseline)
        result.add(**common, metric="mev_centred", value=m.mev_centred)
        result.add(**common, metric="mev_centred_baseline", value=m.mev_centred_baseline)
        result.add(**common, metric="mev_paper", value=m.mev_paper)
        result.add(**common, metric="mev_paper_baseline", value=m.mev_paper_baseline)
        result.add(**common, metric="mev_paper_baseline_1000", value=m.mev_paper_baseline_1000)
        for name, value in m.adjusted.items():
            result.add(**common, metric=f"{name}_adjusted", value=value)
    return result


def combine(results: Sequence[ContextualityResult]) -> ContextualityResult:
    """Several models' contextuality results as one tidy table (rows told apart by ``system``)."""
    first = results[0]
    rows = [r for res in results for r in res.rows]
    merged = ContextualityResult(first.benchmark, first.model, rows, dict(first.meta))
    merged.meta["models"] = [res.model for res in results]
    merged.meta["per_model"] = {
        res.model: {
            "seconds": res.seconds,
            **res.backend.to_dict(),
        }
        for res in results
    }
    return merged


TABLE_METRICS = (
    "anisotropy",
    "self_similarity",
    "self_similarity_adjusted",
    "intra_sentence",
    "intra_sentence_adjusted",
    "mev",
    "mev_adjusted",
)


# The paper's MEV (centred), beside the uncentred "mev" of TABLE_METRICS; the WordNet benchmark has it
# (a result made before issue 19, or the corpus variant, may not).
CENTRED_METRICS = ("mev_centred", "mev_centred_adjusted")
# The MEV of the paper's released files (TruncatedSVD's ratio), raw and minus random words' of the same sizes.
PAPER_MEV_METRICS = ("mev_paper", "mev_paper_adjusted")


def table_rows(result: BenchmarkResult) -> list[dict[str, object]]:
    """The contextuality table: one row per layer with each of :data:`TABLE_METRICS` (and
    :data:`CENTRED_METRICS` where the result has them)."""
    optional = CENTRED_METRICS + PAPER_MEV_METRICS
    metrics = TABLE_METRICS + tuple(m for m in optional if m in result.metrics())
    rows = result.pivot(("layer",), {m: {"metric": m} for m in metrics})
    return sorted(rows, key=lambda r: r["layer"])
