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

import random
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.analyses.measures.word_pairs import SimilarityDataset, score_pairs, static_vectors
from contextlens.core.occurrences import ALPHA_WORD_RE, LONE_WORD_TEMPLATE, in_template
from contextlens.core.static_models import StaticModel


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
) -> BenchmarkResult:
    """Spearman per dataset for the static model and, per layer, the template and pooled reductions.

    ``template_vectors`` / ``context_vectors`` are ``(n_spans, layers + 1, d)``; ``template_rows[w]``
    is the row of word ``w`` in its template, ``context_rows[w]`` the rows of its contexts.
    """
    result = BenchmarkResult("similarity", model, meta={"template": LONE_WORD_TEMPLATE, "counts": {}})
    for ds in datasets:
        result.meta["counts"][ds.name] = {"pairs": len(ds.pairs), "words": len(ds.words)}

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
            result.meta.setdefault("best_layer", {}).setdefault(system, {})[ds.name] = {
                "layer": best["layer"],
                "spearman": best["value"],
            }
    return result


def table_rows(result: BenchmarkResult) -> list[dict[str, object]]:
    """The similarity table: per (system, layer), for each data set ``<name>:spearman`` and
    ``<name>:coverage`` (data sets in ``result.meta["counts"]`` order)."""
    columns: dict[str, dict[str, object]] = {}
    for ds in result.meta["counts"]:
        columns[f"{ds}:spearman"] = {"split": ds, "metric": "spearman"}
        columns[f"{ds}:coverage"] = {"split": ds, "metric": "coverage"}
    return result.pivot(("system", "layer"), columns, metric="spearman")
