"""`eval static`: what a static model loses and keeps against its teacher, on the same work.

Systems: static models (GloVe, the word2vec and fastText made here, a distilled one) and
contextual teachers (minilm, mpnet). Tasks, each beside its baseline:

* word similarity (SimLex-999, WordSim-353): Spearman of cosine with human ratings. A static word
  is its vector (fastText composes unseen words from n-grams, a distilled model from the teacher's
  word pieces; the others skip them, and their coverage says how many pairs were scored); a second
  score is over the pairs *every* static system covers, so that skipping is not rewarded. A teacher's
  word is its sentence embedding of the word alone: the very input a distilled vector imitates,
  with no layer to choose.
* word in context (WordNet pairs, the WiC benchmark's construction): a static model gives a word
  one vector in every sentence, so the cosine of every pair is 1 and the dev-tuned threshold can do
  no better than the majority class: chance by construction. The teacher's accuracy is at the layer
  chosen on dev (``eval wic``'s rule).
* Lee document similarity: Spearman with the 50 rated documents' human ratings and nDCG@10, beside
  random ranking; a document is the mean of its word (token) vectors, or the teacher's sentence
  embedding.
* encode speed: the 350 Lee documents (``quick``: the 50 rated ones) encoded by every system in one
  run (documents and words per second), and the memory its vectors or weights take.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from contextlens.analyses.benchmarks.encode_speed import timed_encodings, word_count
from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.analyses.benchmarks.suite import build_suite, run_wic
from contextlens.analyses.measures import word_pairs as wp
from contextlens.analyses.measures.datasets import WicPair
from contextlens.analyses.measures.retrieval_scores import lee_scores, ndcg_at_k
from contextlens.analyses.measures.sense_threshold import accuracy, tune_threshold
from contextlens.core import arguments
from contextlens.core.arguments import given
from contextlens.core.static_models import StaticModel, as_static
from contextlens.data.lee import load_lee
from contextlens.errors import InputError, OutOfVocabularyError, ParameterError

STATIC_WIC_NOTE = (
    "a static model has one vector per word, so both occurrences of a pair have cosine 1: the dev-tuned "
    "threshold can only say 'same' or 'different' for every pair, the majority class (chance by construction)"
)


def _models(values: Any, one: tuple[type, ...], name: str) -> list[Any]:
    """A list of models, or one model alone (never a str iterated as its letters)."""
    if isinstance(values, one):
        return [values]
    if values is None or isinstance(values, bytes | Mapping) or not isinstance(values, Iterable):
        raise ParameterError(name, f"must be a model or a list of models (names or loaded ones), got {given(values)}")
    return list(values)


def evaluate_static(
    statics: Sequence[StaticModel | str],
    teachers: Sequence[Any] = ("minilm",),
    size: str = "full",
    wic_teachers: bool = True,
) -> BenchmarkResult:
    """Every static model and teacher on word similarity, word in context, Lee retrieval and speed.

    ``statics`` and ``teachers`` are lists, or one model (a name or a loaded one) each; ``size`` is
    ``full`` or ``quick``."""
    from contextlens.core.contextual_models import ContextualModel, as_contextual

    if size not in ("full", "quick"):
        raise ParameterError("size", f"must be 'full' or 'quick', got {size!r}")
    wic_teachers = arguments.flag(wic_teachers, "wic_teachers")
    statics = _models(statics, (StaticModel, str, os.PathLike), "statics")
    teachers = _models(teachers, (ContextualModel, str, os.PathLike), "teachers")
    if not statics:
        raise InputError("give at least one static model (`statics`), e.g. glove-50d")
    loaded = [as_static(s) for s in statics]
    names = [s.name for s in loaded]
    if len(set(names)) != len(names):
        raise InputError(f"`statics` names a model twice: {', '.join(names)}")
    models = [as_contextual(t) for t in teachers]
    arguments.distinct([m.name for m in models], "teachers", "teacher")
    result = BenchmarkResult("static", ", ".join(m.name for m in models) or None)
    suite = build_suite(size)
    lee = load_lee()
    all_docs = lee.documents if size == "quick" else lee.documents + lee.background
    words = word_count(all_docs)
    ratings = lee.ratings
    rng = np.random.default_rng(0)
    random_ndcg = float(np.mean([ndcg_at_k(rng.random(ratings.shape), ratings) for _ in range(200)]))
    datasets = suite.similarity
    kinds: dict[str, str] = {}

    # word similarity: each system's vectors for every dataset word
    vectors: dict[str, dict[str, np.ndarray]] = {}
    for s in loaded:
        kinds[s.name] = s.how_made
        vectors[s.name] = wp.static_vectors(sorted({w for d in datasets for w in d.words}), s)
    for m in models:
        kinds[m.name] = "teacher (contextual)"
        ws = sorted({w for d in datasets for w in d.words})
        emb = m.embed_sentences(ws, batch_size=64)
        vectors[m.name] = {w: emb[i].astype(np.float64) for i, w in enumerate(ws)}
    for ds in datasets:
        common = [
            p for p in ds.pairs if all(p.first in vectors[s.name] and p.second in vectors[s.name] for s in loaded)
        ]
        shared = wp.SimilarityDataset(ds.name, tuple(common))
        unseen = {s.name: sum(1 for p in ds.pairs if p.first not in s or p.second not in s) for s in loaded}
        for system, vecs in vectors.items():
            rho, n = wp.score_pairs(ds, vecs)
            task = {"system": system, "kind": kinds[system], "task": ds.name}
            result.add(**task, metric="spearman", value=rho)
            result.add(**task, metric="coverage", value=n / len(ds.pairs))
            result.add(**task, metric="spearman_common", value=wp.score_pairs(shared, vecs)[0])
            if system in unseen:  # pairs with a word out of its vocabulary: composed (fastText, distilled) or skipped
                result.add(**task, metric="oov_pairs", value=unseen[system])
                result.add(**task, metric="skipped_pairs", value=len(ds.pairs) - n)
        result.meta.setdefault("common_pairs", {})[ds.name] = {"pairs": len(ds.pairs), "common": len(common)}

    # word in context
    wic = suite.wic
    dev = [k for k, p in enumerate(wic.pairs) if p.split == "dev"]
    test = [k for k, p in enumerate(wic.pairs) if p.split == "test"]
    same = np.asarray([p.same for p in wic.pairs], dtype=bool)
    chance = float(max(same[test].mean(), 1 - same[test].mean()))
    for s in loaded:
        cos, covered = static_pair_cosines_any(wic.pairs, s)
        th = tune_threshold(cos[dev], same[dev])
        task = {"system": s.name, "kind": kinds[s.name], "task": "wic"}
        result.add(**task, metric="accuracy", value=accuracy(cos[test], same[test], th.value))
        result.add(**task, metric="coverage", value=covered)
    for m in models if wic_teachers else ():
        wic_result = run_wic(m, loaded[0], size)
        best = wic_result.best_layer
        task = {"system": m.name, "kind": kinds[m.name], "task": "wic", "layer": best.layer_by_dev}
        result.add(**task, metric="accuracy", value=best.test_accuracy_at_dev_layer)
    result.add(system="chance", kind="baseline", task="wic", metric="accuracy", value=chance)

    # Lee documents: retrieval quality, then speed over all 350 documents in one run
    for system, enc, seconds, nbytes in timed_encodings([*loaded, *models], all_docs):
        _lee_rows(result, system, kinds[system], enc[: len(lee.documents)], ratings)
        result.add(system=system, kind=kinds[system], task="memory", metric="bytes", value=nbytes)
        task = {"system": system, "kind": kinds[system], "task": "speed"}
        result.add(**task, metric="seconds", value=seconds)
        result.add(**task, metric="documents_per_s", value=len(all_docs) / seconds)
        result.add(**task, metric="words_per_s", value=words / seconds)
    result.add(system="random", kind="baseline", task="lee", metric="ndcg@10", value=random_ndcg)
    result.meta.update(
        {
            "size": size,
            "wic_pairs": wic.counts,
            "wic_note": STATIC_WIC_NOTE,
            "lee": {"rated_documents": len(lee.documents), "timed_documents": len(all_docs), "words": words},
            "similarity_note": "static: oov_pairs have a word out of the model's vocabulary, composed by fastText "
            "(character n-grams) and a distilled model (word pieces), skipped by the others (skipped_pairs, "
            "coverage); spearman_common: the pairs every static system covers; teacher: sentence embedding of "
            "the word alone",
            "threads": _threads(),
        }
    )
    return result


def static_pair_cosines_any(pairs: Sequence[WicPair], static: StaticModel) -> tuple[np.ndarray, float]:
    """Cosine 1 for every pair whose lemma the model gives a vector (composed ones too: fastText,
    distilled), -2 (below every cosine) for the others; and the share with a vector."""
    cos = np.full(len(pairs), -2.0)
    for k, p in enumerate(pairs):
        try:
            static.vector(p.lemma)
        except OutOfVocabularyError:
            continue
        cos[k] = 1.0  # the same vector in both sentences
    return cos, float(np.mean(cos > -2)) if len(pairs) else 0.0


def _lee_rows(result: BenchmarkResult, system: str, kind: str, enc: np.ndarray, ratings: np.ndarray) -> None:
    unit = enc / np.maximum(np.linalg.norm(enc, axis=1, keepdims=True), 1e-12)
    scores = lee_scores(unit @ unit.T, ratings)
    for metric, value in scores.items():
        result.add(system=system, kind=kind, task="lee", metric=metric, value=value)


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def kept_share(result: BenchmarkResult, student: str, teacher: str) -> dict[str, float]:
    """How much of ``teacher``'s score ``student`` keeps on each task (student / teacher)."""
    out = {}
    for task, metric in (
        ("simlex999", "spearman"),
        ("wordsim353", "spearman"),
        ("lee", "spearman"),
        ("lee", "ndcg@10"),
    ):
        s = result.value(system=student, task=task, metric=metric)
        t = result.value(system=teacher, task=task, metric=metric)
        if s is not None and t:
            out[f"{task}:{metric}"] = s / t
    return out
