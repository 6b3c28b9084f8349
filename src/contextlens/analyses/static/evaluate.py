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

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextlens.analyses.benchmarks.encode_speed import timed_encodings, word_count
from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.analyses.benchmarks.suite import build_suite, run_wic
from contextlens.analyses.measures import word_pairs as wp
from contextlens.analyses.measures.datasets import WicData, WicPair
from contextlens.analyses.measures.retrieval_scores import lee_scores, ndcg_at_k
from contextlens.analyses.measures.sense_threshold import accuracy, tune_threshold
from contextlens.core import arguments
from contextlens.core.arguments import given
from contextlens.core.jsonable import plain_json
from contextlens.core.static_models import StaticModel, as_static
from contextlens.data.lee import load_lee
from contextlens.errors import InputError, ParameterError

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


SIMILARITY_NOTE = (
    "static: oov_pairs have a word out of the model's vocabulary, composed by fastText "
    "(character n-grams) and a distilled model (word pieces), skipped by the others (skipped_pairs, "
    "coverage); spearman_common: the pairs every static system covers; teacher: sentence embedding of "
    "the word alone"
)


@dataclass(frozen=True)
class CommonPairs:
    """A similarity data set's pairs, and how many of them every static system covers."""

    pairs: int
    common: int


@dataclass(frozen=True)
class LeeCounts:
    """The Lee documents: the rated ones (retrieval scores), the ones timed for speed, their words."""

    rated_documents: int
    timed_documents: int
    words: int


@dataclass
class StaticEvalResult(BenchmarkResult):
    """`eval static`'s result: the tidy rows (per system, ``kind`` and ``task``: Spearman, coverage
    0-1, accuracy 0-1, nDCG@10, bytes, seconds, documents and words per second), the common pairs
    per similarity data set, the WiC pairs' counts, the Lee counts, the notes and the torch threads
    the timings ran with; ``meta`` holds the size. :meth:`to_dict` is the JSON `eval static --json`
    prints, the same keys in the same order as before these fields."""

    common_pairs: dict[str, CommonPairs] = field(default_factory=dict)  # per data set: simlex999, wordsim353
    wic_pairs: dict[str, Any] = field(default_factory=dict)  # WicData.counts: dev/test splits, lemma counts
    wic_note: str = STATIC_WIC_NOTE
    lee: LeeCounts | None = None
    similarity_note: str = SIMILARITY_NOTE
    threads: int = 0  # torch threads during the timings

    @property
    def systems(self) -> dict[str, str]:
        """Each system's kind (``teacher (contextual)``, ``baseline``, how a static model was made), in row order."""
        return {r["system"]: r["kind"] for r in self.rows}

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        common = {n: dataclasses.asdict(c) for n, c in self.common_pairs.items()}
        meta: dict[str, Any] = {"common_pairs": common} if common else {}
        meta |= self.meta
        meta |= {
            "wic_pairs": self.wic_pairs,
            "wic_note": self.wic_note,
            "lee": None if self.lee is None else dataclasses.asdict(self.lee),
            "similarity_note": self.similarity_note,
            "threads": self.threads,
        }
        return {"benchmark": self.benchmark, "model": self.model, "rows": self.rows, "meta": meta}


def evaluate_static(
    statics: Sequence[StaticModel | str],
    teachers: Sequence[Any] = ("minilm",),
    size: str = "full",
    wic_teachers: bool = True,
) -> StaticEvalResult:
    """Every static model and teacher on word similarity, word in context, Lee retrieval and speed.

    ``statics`` and ``teachers`` are lists, or one model (a name or a loaded one) each; ``size`` is
    ``full`` or ``quick``."""
    if size not in ("full", "quick"):
        raise ParameterError("size", f"must be 'full' or 'quick', got {size!r}")
    wic_teachers = arguments.flag(wic_teachers, "wic_teachers")
    loaded, models = _systems(statics, teachers)
    result = StaticEvalResult("static", ", ".join(m.name for m in models) or None, meta={"size": size})
    suite = build_suite(size)
    kinds = {s.name: s.how_made for s in loaded} | {m.name: "teacher (contextual)" for m in models}
    _similarity_rows(result, suite.similarity, loaded, models, kinds)
    _wic_rows(result, suite.wic, loaded, models if wic_teachers else [], kinds, size)
    _lee_and_speed_rows(result, [*loaded, *models], kinds, size == "quick")
    result.wic_pairs = suite.wic.counts
    result.threads = _threads()
    return result


def _systems(statics: Any, teachers: Any) -> tuple[list[StaticModel], list[Any]]:
    """The static models and the teachers, loaded; one clear error for none, or a name twice."""
    from contextlens.core.contextual_models import ContextualModel, as_contextual

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
    return loaded, models


def _similarity_rows(
    result: StaticEvalResult,
    datasets: Sequence[wp.SimilarityDataset],
    loaded: Sequence[StaticModel],
    models: Sequence[Any],
    kinds: dict[str, str],
) -> None:
    """Spearman, coverage and the common-pairs Spearman per system and data set (each system's
    vectors for every data-set word: a static model's own, a teacher's sentence embedding)."""
    ws = sorted({w for d in datasets for w in d.words})
    vectors: dict[str, dict[str, np.ndarray]] = {s.name: wp.static_vectors(ws, s) for s in loaded}
    for m in models:
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
        result.common_pairs[ds.name] = CommonPairs(len(ds.pairs), len(common))


def _wic_rows(
    result: StaticEvalResult,
    wic: WicData,
    loaded: Sequence[StaticModel],
    teachers: Sequence[Any],
    kinds: dict[str, str],
    size: str,
) -> None:
    """Each static model's WiC test accuracy (chance by construction), each teacher's at its
    dev-chosen layer (``eval wic``'s rule), and chance."""
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
    for m in teachers:
        best = run_wic(m, loaded[0], size).best_layer
        task = {"system": m.name, "kind": kinds[m.name], "task": "wic", "layer": best.layer_by_dev}
        result.add(**task, metric="accuracy", value=best.test_accuracy_at_dev_layer)
    result.add(system="chance", kind="baseline", task="wic", metric="accuracy", value=chance)


def _lee_and_speed_rows(result: StaticEvalResult, systems: Sequence[Any], kinds: dict[str, str], quick: bool) -> None:
    """Lee retrieval quality per system beside random ranking, then the speed over the timed
    documents (all 350; ``quick``: the 50 rated) in one run, and the bytes of each system."""
    lee = load_lee()
    all_docs = lee.documents if quick else lee.documents + lee.background
    words = word_count(all_docs)
    rng = np.random.default_rng(0)
    random_ndcg = float(np.mean([ndcg_at_k(rng.random(lee.ratings.shape), lee.ratings) for _ in range(200)]))
    for system, enc, seconds, nbytes in timed_encodings(systems, all_docs):
        _lee_rows(result, system, kinds[system], enc[: len(lee.documents)], lee.ratings)
        result.add(system=system, kind=kinds[system], task="memory", metric="bytes", value=nbytes)
        task = {"system": system, "kind": kinds[system], "task": "speed"}
        result.add(**task, metric="seconds", value=seconds)
        result.add(**task, metric="documents_per_s", value=len(all_docs) / seconds)
        result.add(**task, metric="words_per_s", value=words / seconds)
    result.add(system="random", kind="baseline", task="lee", metric="ndcg@10", value=random_ndcg)
    result.lee = LeeCounts(len(lee.documents), len(all_docs), words)


def static_pair_cosines_any(pairs: Sequence[WicPair], static: StaticModel) -> tuple[np.ndarray, float]:
    """Cosine 1 for every pair whose lemma the model gives a vector (composed ones too: fastText,
    distilled), -2 (below every cosine) for the others; and the share with a vector."""
    cos = np.full(len(pairs), -2.0)
    for k, p in enumerate(pairs):
        if static.vector_or_none(p.lemma) is not None:
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
