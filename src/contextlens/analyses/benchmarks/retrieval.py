"""Retrieval quality of the three kinds of embedding, and what each dimension and dtype costs.

Two benchmarks on real data, both in the shared :class:`BenchmarkResult` shape:

* ``retrieval-lee`` - gensim's Lee corpus: 50 news documents (``lee.cor``) and the mean human
  similarity rating of every pair (``similarities0-1.txt``). That file is a 50x50 matrix whose
  upper triangle (diagonal included, diagonal = 1) holds the ratings and whose lower triangle is
  zero; the values run from 0.2 to 1.0, i.e. mean ratings on the study's 1-5 scale divided by 5.
  Metrics: Spearman between the model's document-document cosines and the ratings over the
  1,225 pairs, and nDCG@10 with each document as the query, the other 49 ranked by cosine and
  the ratings as graded relevance (linear gain).
* ``retrieval-wordnet`` - WordNet 3.0: the usage example of a synset is the query, and the task
  is to find that synset's definition among the definitions of a seeded sample of synsets.
  Metrics: MRR, Recall@1, Recall@10 (one relevant definition per query).

Each benchmark runs every encoder kind (``input-row``, ``hidden-mean`` at every layer,
``sentence``) at full dimension in float32, then a cost sweep for ``input-row`` and ``sentence``:
dimensions cut by truncation (the first k coordinates) and by PCA (fitted on the corpus side:
Lee's 300-document background corpus ``lee_background.cor``; WordNet's sampled definitions), each
stored as float32, float16, int8 (FAISS scalar quantization, ranges trained on the same corpus
side) and binary (one sign bit per dimension, scored by Hamming distance).

Static models given as ``statics`` (GloVe, a word2vec or fastText model made here, a model distilled
from a transformer) add one row each, kind ``static`` (the mean of the text's word vectors, full
dimension, float32), and the encode speed of each beside the contextual model's sentence embedding,
timed one after the other on the task's texts in the same run (``meta["speed"]``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import faiss
import numpy as np

from contextlens.analyses.benchmarks.encode_speed import EncodeSpeed, speed_rows, timed_encodings, word_count
from contextlens.analyses.benchmarks.result import BenchmarkResult, record_precision
from contextlens.analyses.measures.retrieval_scores import lee_scores, ndcg_at_k, wordnet_scores
from contextlens.analyses.measures.wordnet_task import load_wordnet_task
from contextlens.analyses.search.encoders import TextEncoder, hidden_means_every_layer
from contextlens.core.contextual_models import ContextualModel, as_contextual, sentence_config
from contextlens.core.resources import DEFAULT_CONTEXTUAL
from contextlens.core.similarity import normalize_rows
from contextlens.core.static_models import StaticModel, as_static
from contextlens.data.lee import load_lee
from contextlens.errors import InputError

DTYPES: tuple[str, ...] = ("float32", "float16", "int8", "binary")
BYTES_PER_VALUE = {"float32": 4.0, "float16": 2.0, "int8": 1.0, "binary": 1 / 8}
LEE_METRICS = ("spearman", "ndcg@10")
WORDNET_METRICS = ("mrr", "recall@1", "recall@10")


@dataclass
class RetrievalResult(BenchmarkResult):
    """`eval retrieval`'s result: the tidy rows (one per ``kind``, ``layer``, ``reduction``, ``dim``,
    ``dtype``, ``bytes_per_vector`` and metric; Spearman in -1..1, nDCG@10, MRR and recall in 0..1).
    ``meta`` stays the document `--json` prints, since callers read its keys (``documents`` or
    ``queries``, ``random_<metric>``, ``speed``, ``num_layers``, ...); the properties below are the
    typed reads the faces make."""

    @property
    def quick(self) -> bool:
        return bool(self.meta.get("quick"))

    @property
    def scale(self) -> str:
        """What was searched, with its count: ``"20 documents"`` (Lee) or ``"100 queries"`` (WordNet)."""
        if "documents" in self.meta:
            return f"{self.meta['documents']} documents"
        return f"{self.meta.get('queries')} queries"

    @property
    def chance(self) -> dict[str, float]:
        """Random ranking's value per metric (``random_ndcg@10`` as ``ndcg@10``)."""
        return {k.removeprefix("random_"): float(v) for k, v in self.meta.items() if k.startswith("random_")}

    @property
    def fit_on(self) -> str | None:
        """The texts PCA and the int8 ranges were fitted on."""
        return self.meta.get("fit_on")

    @property
    def speed(self) -> EncodeSpeed | None:
        """With static models: their encode speed beside the model's sentence embedding, this run."""
        speed: dict[str, Any] | None = self.meta.get("speed")
        return None if speed is None else EncodeSpeed.of(speed)


# --- dimension and dtype ----------------------------------------------------------------------


@dataclass(frozen=True)
class Coding:
    """How a vector is stored: its dimension, how it was cut, and the dtype of its values."""

    dim: int
    reduction: str | None  # "truncate", "pca" or None (full dimension)
    dtype: str

    @property
    def bytes_per_vector(self) -> float:
        return self.dim * BYTES_PER_VALUE[self.dtype]


def codings(full_dim: int, fit_count: int) -> list[Coding]:
    """Full dimension in every dtype, then powers of two from 16 below it, cut both ways, in every dtype.

    PCA cannot give more components than it has fitting vectors, so larger PCA dims are skipped.
    """
    out = [Coding(full_dim, None, dt) for dt in DTYPES]
    dims = [2**p for p in range(4, 16) if 2**p < full_dim]
    for reduction in ("truncate", "pca"):
        for dim in dims:
            if reduction == "pca" and dim > min(fit_count, full_dim):
                continue
            out += [Coding(dim, reduction, dt) for dt in DTYPES]
    return out


class Coder:
    """Applies a :class:`Coding` to vectors; PCA and int8 ranges are fitted on the corpus side."""

    def __init__(self, coding: Coding, fit: np.ndarray):
        self.coding = coding
        x = normalize_rows(fit, np.float32)
        self.mean = self.components = None
        if coding.reduction == "pca":
            self.mean = x.mean(axis=0)
            _, _, vt = np.linalg.svd(x - self.mean, full_matrices=False)
            self.components = vt[: coding.dim].T.astype(np.float32)
        self.sq = None
        if coding.dtype == "int8":
            self.sq = faiss.IndexScalarQuantizer(coding.dim, faiss.ScalarQuantizer.QT_8bit)
            self.sq.train(np.ascontiguousarray(self._reduce(x), dtype=np.float32))

    def _reduce(self, x: np.ndarray) -> np.ndarray:
        if self.coding.reduction == "truncate":
            return normalize_rows(x[:, : self.coding.dim], np.float32)
        if self.coding.reduction == "pca":
            return normalize_rows((x - self.mean) @ self.components, np.float32)
        return x

    def __call__(self, vectors: np.ndarray) -> np.ndarray:
        """Rows whose dot products are the similarities the stored codes give."""
        x = self._reduce(normalize_rows(vectors, np.float32))
        dtype = self.coding.dtype
        if dtype == "float16":
            x = x.astype(np.float16).astype(np.float32)
        elif dtype == "int8":
            x = self.sq.sa_decode(self.sq.sa_encode(np.ascontiguousarray(x, dtype=np.float32)))
        elif dtype == "binary":
            return np.where(x > 0, 1.0, -1.0).astype(np.float32) / math.sqrt(x.shape[1])
        return normalize_rows(x, np.float32)


# --- encodings --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Encodings:
    """Every system's vectors for one task: ``systems[(kind, layer)] = (queries, corpus, fit)``;
    ``cost`` names the systems that get the dimension and dtype sweep."""

    systems: dict[tuple[str, int | None], tuple[np.ndarray, np.ndarray, np.ndarray]]
    cost: tuple[tuple[str, int | None], ...]


def encode_task(
    model: ContextualModel,
    queries: Sequence[str],
    corpus: Sequence[str],
    fit: Sequence[str] | None,
    show_progress_bar: bool = False,
) -> Encodings:
    """Input rows, hidden means at every layer (one forward pass) and sentence embeddings.

    The cost sweep covers the input rows and the model's sentence embedding; a model without one
    (a decoder such as smollm2) gets its last-layer hidden mean instead. ``fit`` texts (PCA and
    int8 fitting) are encoded only for those two systems; None means the corpus itself is the
    fitting set. Encodings are cached on disk.
    """
    same = list(queries) == list(corpus)
    texts = list(corpus) if same else list(queries) + list(corpus)

    def split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (x, x) if same else (x[: len(queries)], x[len(queries) :])

    def fitted(encoder: TextEncoder, corpus_vectors: np.ndarray) -> np.ndarray:
        if fit is None:
            return corpus_vectors
        return encoder.encode_cached(list(fit), show_progress_bar=show_progress_bar)

    systems: dict[tuple[str, int | None], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    has_sentence = sentence_config(model.source) is not None
    for kind in ["input-row", "sentence"] if has_sentence else ["input-row"]:
        encoder = TextEncoder(model, kind)
        q, c = split(encoder.encode_cached(texts, show_progress_bar=show_progress_bar))
        systems[(kind, None)] = (q, c, fitted(encoder, c))
    layers = hidden_means_every_layer(model, texts, show_progress_bar=show_progress_bar)
    for layer in range(layers.shape[0]):
        q, c = split(layers[layer])
        systems[("hidden-mean", layer)] = (q, c, c)
    top = ("hidden-mean", model.num_layers)
    if not has_sentence:
        q, c, _ = systems[top]
        systems[top] = (q, c, fitted(TextEncoder(model, "hidden-mean"), c))
    order = sorted(systems, key=lambda s: (("input-row", "hidden-mean", "sentence").index(s[0]), s[1] or 0))
    cost = (("input-row", None), ("sentence", None) if has_sentence else top)
    return Encodings({s: systems[s] for s in order}, cost)


# --- the benchmark ----------------------------------------------------------------------------


Scorer = Callable[[np.ndarray], dict[str, float]]


def sweep(result: BenchmarkResult, encodings: Encodings, score: Scorer) -> None:
    """Rows for every system at full float32, then the dimension/dtype sweep for the cost systems."""
    for system, (q, c, fit) in encodings.systems.items():
        kind, layer = system
        full = Coding(q.shape[1], None, "float32")
        plan = codings(q.shape[1], fit.shape[0]) if system in encodings.cost else [full]
        for coding in plan:
            coder = Coder(coding, fit)
            sims = coder(q) @ coder(c).T
            for metric, value in score(sims).items():
                result.add(
                    kind=kind,
                    layer=layer,
                    dim=coding.dim,
                    reduction=coding.reduction,
                    dtype=coding.dtype,
                    bytes_per_vector=coding.bytes_per_vector,
                    metric=metric,
                    value=value,
                )


def check_statics(statics: Sequence[StaticModel | str]) -> list[StaticModel]:
    """The static models asked for, loaded (a wrong name fails before any forward pass), each once."""
    if isinstance(statics, str | StaticModel):
        statics = [statics]
    loaded = [as_static(s) for s in statics]
    names = [s.name for s in loaded]
    if len(set(names)) != len(names):
        raise InputError(f"`statics` names a model twice: {', '.join(names)}")
    return loaded


def add_static_systems(
    result: BenchmarkResult,
    model: ContextualModel,
    statics: Sequence[StaticModel],
    queries: Sequence[str],
    corpus: Sequence[str],
    score: Scorer,
) -> None:
    """One row per static model and metric (kind ``static``), then the encode speed of each beside
    the model's sentence embedding, timed in this run on the task's texts (``meta["speed"]``)."""
    if not statics:
        return
    same = list(queries) == list(corpus)
    texts = list(corpus) if same else list(queries) + list(corpus)
    for s in statics:
        x = s.encode(texts)
        q, c = (x, x) if same else (x[: len(queries)], x[len(queries) :])
        for metric, value in score(q @ c.T).items():
            result.add(
                kind="static",
                static=s.name,
                static_kind=s.how_made,
                layer=None,
                dim=s.dim,
                reduction=None,
                dtype="float32",
                bytes_per_vector=s.dim * BYTES_PER_VALUE["float32"],
                metric=metric,
                value=value,
            )
    if sentence_config(model.source) is None:
        result.meta["speed"] = {"note": f"{model.name} has no sentence embedding to time the static models against"}
        return
    timed = timed_encodings([*statics, model], texts)
    rows = speed_rows([(name, seconds) for name, _, seconds, _ in timed], len(texts), word_count(texts), model.name)
    for row, (_, _, _, nbytes) in zip(rows, timed, strict=True):
        row["bytes"] = nbytes
    result.meta["speed"] = {
        "texts": len(texts),
        "words": word_count(texts),
        "baseline": f"{model.name} sentence",
        "rows": rows,
        "note": "encoded one system after another in this run (the contextual model warmed up on 8 texts first, "
        "then batches of 32); words counted by one tokenizer for every system",
    }


def evaluate_lee(
    model: ContextualModel | str = DEFAULT_CONTEXTUAL,
    quick: bool = False,
    show_progress_bar: bool = False,
    statics: Sequence[StaticModel | str] = (),
) -> RetrievalResult:
    """Document-document similarity on the Lee corpus against human ratings (see module docstring).

    ``quick`` uses the first 20 rated documents and 60 background documents (for tests). Each of
    ``statics`` adds its row and its encode speed beside the model's.
    """
    statics = check_statics(statics)
    lee = load_lee()
    n, n_fit = (20, 60) if quick else (len(lee.documents), len(lee.background))
    docs, ratings, background = lee.documents[:n], lee.ratings[:n, :n], lee.background[:n_fit]
    m = as_contextual(model)
    encodings = encode_task(m, docs, docs, background, show_progress_bar)
    result = RetrievalResult("retrieval-lee", m.name)
    sweep(result, encodings, lambda sims: lee_scores(sims, ratings))
    add_static_systems(result, m, statics, docs, docs, lambda sims: lee_scores(sims, ratings))
    rng = np.random.default_rng(0)
    random_ndcg = float(np.mean([ndcg_at_k(rng.random((n, n)), ratings) for _ in range(200)]))
    result.meta = {
        **result.meta,
        "documents": n,
        "pairs": n * (n - 1) // 2,
        "fit_documents": n_fit,
        "fit_on": f"lee_background.cor ({n_fit} documents)",
        "quick": quick,
        "num_layers": m.num_layers,
        "random_ndcg@10": random_ndcg,
        "ratings": "similarities0-1.txt: upper triangle of mean human ratings (1-5 scale / 5), symmetrized",
        "ndcg_gain": "linear: the mean rating of the pair",
    }
    return record_precision(result, m)


def evaluate_wordnet(
    model: ContextualModel | str = DEFAULT_CONTEXTUAL,
    sample: int = 1000,
    seed: int = 0,
    quick: bool = False,
    show_progress_bar: bool = False,
    statics: Sequence[StaticModel | str] = (),
) -> RetrievalResult:
    """Usage example -> its synset's definition among ``sample`` definitions (100 with ``quick``);
    each of ``statics`` adds its row and its encode speed beside the model's."""
    statics = check_statics(statics)
    if quick:
        sample = min(sample, 100)
    task = load_wordnet_task(sample, seed)
    m = as_contextual(model)
    encodings = encode_task(m, task.examples, task.definitions, None, show_progress_bar)
    result = RetrievalResult("retrieval-wordnet", m.name)
    sweep(result, encodings, wordnet_scores)
    add_static_systems(result, m, statics, task.examples, task.definitions, wordnet_scores)
    result.meta = {
        **result.meta,
        "queries": len(task.examples),
        "definitions": len(task.definitions),
        "sample_seed": seed,
        "fit_on": f"the {len(task.definitions)} sampled definitions",
        "quick": quick,
        "num_layers": m.num_layers,
        "random_mrr": float(np.mean(1.0 / np.arange(1, sample + 1))),
        "source": "WordNet 3.0 (Debian wordnet-base): first located usage example of each synset",
    }
    return record_precision(result, m)
