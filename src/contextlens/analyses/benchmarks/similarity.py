"""Word similarity benchmarks (SimLex-999, WordSim-353): Spearman correlation with human ratings.

Static models score a pair by the cosine of the two word vectors. Contextual models have no
vector per word, so two reductions are measured per layer:

* ``template`` - the word alone in one neutral sentence, the one ``rank`` uses
  (:data:`~contextlens.core.occurrences.LONE_WORD_TEMPLATE`);
* ``pooled`` - the mean of the word's hidden states over up to ``k`` real contexts (Bommasani,
  Davis & Cardie 2020, "Interpreting pretrained contextualized representations via reductions to
  static embeddings"); contexts are WordNet usage examples that contain the exact word form.

Pairs a system cannot score (a word out of the static vocabulary, or with no context) are left
out of its correlation; the share left out is reported beside every Spearman value.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.analyses.measures.word_pairs import SimilarityDataset, score_pairs, static_vectors
from contextlens.core.jsonable import plain_json
from contextlens.core.occurrences import ALPHA_WORD_RE, LONE_WORD_TEMPLATE, in_template
from contextlens.core.static_models import StaticModel


@dataclass(frozen=True)
class DatasetCounts:
    """A data set as scored: its pairs (after the quick cut) and their distinct words."""

    pairs: int
    words: int


@dataclass(frozen=True)
class LayerScore:
    """One system's best layer on one data set, by Spearman (chosen on the data set itself: the
    word-similarity sets have no dev split, so this is an upper bound, not a held-out score)."""

    layer: int
    spearman: float


@dataclass
class SimilarityResult(BenchmarkResult):
    """`eval similarity`'s result: the tidy rows (Spearman, coverage and OOV share per system,
    layer and data set), the data sets' counts in order, the template sentence, the best layer of
    each layered system per data set and, from the suite, the contexts pooled per word and their
    corpus; ``meta`` holds what every run records (size, suite counts, seconds, precision,
    runtime). :meth:`to_dict` is the JSON `eval similarity --json` prints, these fields first in
    ``meta`` (``best_layer`` only when a contextual model was scored, the context fields only when set)."""

    template: str = LONE_WORD_TEMPLATE
    counts: dict[str, DatasetCounts] = field(default_factory=dict)  # by data set name, in scoring order
    best_layer: dict[str, dict[str, LayerScore]] = field(default_factory=dict)  # system -> data set -> best
    contexts_per_word: int | None = None  # the most contexts pooled per word
    context_corpus: str | None = None  # where the pooled contexts come from

    @property
    def datasets(self) -> list[str]:
        """The data sets' names, in the order they were scored."""
        return list(self.counts)

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        head: dict[str, Any] = {
            "template": self.template,
            "counts": {name: dataclasses.asdict(c) for name, c in self.counts.items()},
        }
        if self.best_layer:
            head["best_layer"] = {
                system: {ds: dataclasses.asdict(score) for ds, score in per.items()}
                for system, per in self.best_layer.items()
            }
        if self.contexts_per_word is not None:
            head["contexts_per_word"] = self.contexts_per_word
        if self.context_corpus is not None:
            head["context_corpus"] = self.context_corpus
        return {"benchmark": self.benchmark, "model": self.model, "rows": self.rows, "meta": {**head, **self.meta}}


def template_occurrence(word: str) -> tuple[str, int, int]:
    """The word in the lone-word template of the core: ``(text, start, end)``."""
    occ = in_template(word)
    return occ.text, occ.start, occ.end


def find_contexts(
    words: Sequence[str], texts: Sequence[str], per_word: int, seed: int = 0, prefer: set[int] | None = None
) -> dict[str, list[tuple[int, int, int]]]:
    """Up to ``per_word`` spans ``(text index, start, end)`` of each word's exact form, one per text.

    Texts in ``prefer`` (already encoded for another benchmark) come first, then a seeded
    sample of the rest, so that shared sentences are encoded once.
    """
    wanted = set(words)
    where: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for t, text in enumerate(texts):
        seen: set[str] = set()
        for m in ALPHA_WORD_RE.finditer(text):
            w = m.group().lower()
            if w in wanted and w not in seen:
                seen.add(w)
                where[w].append((t, m.start(), m.end()))
    prefer = prefer or set()
    chosen = {}
    for w in sorted(where):
        spans = where[w]
        first = [s for s in spans if s[0] in prefer]
        rest = [s for s in spans if s[0] not in prefer]
        random.Random(f"{seed}|{w}").shuffle(first)
        random.Random(f"{seed}|{w}|rest").shuffle(rest)
        chosen[w] = sorted((first + rest)[:per_word])
    return chosen


def evaluate_similarity(
    datasets: Sequence[SimilarityDataset],
    model: str | None,
    static: StaticModel | None,
    static_name: str | None,
    template_vectors: np.ndarray | None,
    template_rows: dict[str, int],
    context_vectors: np.ndarray | None,
    context_rows: dict[str, list[int]],
) -> SimilarityResult:
    """Spearman per dataset for the static model and, per layer, the template and pooled reductions.

    ``template_vectors`` / ``context_vectors`` are ``(n_spans, layers + 1, d)``; ``template_rows[w]``
    is the row of word ``w`` in its template, ``context_rows[w]`` the rows of its contexts.
    """
    result = SimilarityResult("similarity", model)
    for ds in datasets:
        result.counts[ds.name] = DatasetCounts(len(ds.pairs), len(ds.words))

        def add(system: str, layer: int | None, vectors: dict[str, np.ndarray], ds: SimilarityDataset = ds) -> None:
            rho, n = score_pairs(ds, vectors)
            common = {"system": system, "layer": layer, "split": ds.name}
            result.add(**common, metric="spearman", value=rho)
            result.add(**common, metric="coverage", value=n / len(ds.pairs))
            result.add(**common, metric="oov_share", value=1 - n / len(ds.pairs))

        if static is not None:
            add(static_name or static.name, None, static_vectors(ds.words, static))
        if template_vectors is not None and model is not None:
            for layer in range(template_vectors.shape[1]):
                vecs = {w: template_vectors[template_rows[w], layer] for w in ds.words if w in template_rows}
                add(f"{model}:template", layer, vecs)
        if context_vectors is not None and model is not None:
            for layer in range(context_vectors.shape[1]):
                vecs = {
                    w: context_vectors[context_rows[w], layer].mean(axis=0) for w in ds.words if context_rows.get(w)
                }
                add(f"{model}:pooled", layer, vecs)
    for system in {r["system"] for r in result.rows if r["layer"] is not None}:
        for ds in datasets:
            rows = result.select(system=system, split=ds.name, metric="spearman")
            best = max(rows, key=lambda r: (np.nan_to_num(r["value"], nan=-9), -r["layer"]))
            result.best_layer.setdefault(system, {})[ds.name] = LayerScore(best["layer"], best["value"])
    return result


def table_rows(result: SimilarityResult) -> list[dict[str, object]]:
    """The similarity table: per (system, layer), for each data set ``<name>:spearman`` and
    ``<name>:coverage`` (data sets in ``result.datasets`` order)."""
    columns: dict[str, dict[str, object]] = {}
    for ds in result.datasets:
        columns[f"{ds}:spearman"] = {"split": ds, "metric": "spearman"}
        columns[f"{ds}:coverage"] = {"split": ds, "metric": "coverage"}
    return result.pivot(("system", "layer"), columns, metric="spearman")
