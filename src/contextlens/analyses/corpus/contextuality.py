"""Ethayarajh (2019) on an extraction folder: self-similarity and MEV with many contexts per word.

The WordNet benchmark has at most 10 contexts per word, and MEV is at least 1/n with n
contexts, so its MEV cannot be set beside the paper's "< 5%". Here every target with at least
``min_contexts`` contexts (one occurrence per sentence, the first) is measured, with the same
functions as the benchmark (:mod:`contextlens.analyses.benchmarks.contextuality`). The folder
holds only the targets' vectors, so intra-sentence similarity is not measured; the anisotropy
baseline is random pairs of occurrences from different sentences, across all targets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from contextlens.analyses.benchmarks import contextuality as ctx
from contextlens.analyses.benchmarks.result import BenchmarkResult
from contextlens.analyses.corpus.extract import layer_column, read_rows
from contextlens.analyses.corpus.manifest import require_manifest
from contextlens.errors import InputError


def corpus_contextuality(folder: Path, min_contexts: int = 50, seed: int = 0) -> BenchmarkResult:
    manifest = require_manifest(Path(folder))
    cols = ["doc_id", "sentence_index", "target", *(layer_column(lay) for lay in manifest.layers)]
    table = read_rows(Path(folder), columns=cols)
    keys = list(zip(table.column("doc_id").to_pylist(), table.column("sentence_index").to_pylist(), strict=True))
    targets = table.column("target").to_pylist()
    first: dict[tuple[str, tuple], int] = {}
    for i, (t, k) in enumerate(zip(targets, keys, strict=True)):
        first.setdefault((t, k), i)  # one context per sentence
    by_word: dict[str, list[int]] = {}
    for (t, _), i in first.items():
        by_word.setdefault(t, []).append(i)
    words = {w: rows for w, rows in by_word.items() if len(rows) >= min_contexts}
    if not words:
        most = max(((len(r), w) for w, r in by_word.items()), default=(0, "-"))
        raise InputError(
            f"no target in {folder} has {min_contexts} contexts (most: {most[1]!r} with {most[0]}); "
            "extract more text or lower --min-contexts"
        )
    rows = np.array(sorted(i for r in words.values() for i in r))
    sentence_of = {k: n for n, k in enumerate(dict.fromkeys(keys))}
    texts_of = [sentence_of[keys[i]] for i in rows]
    counts = sorted(len(r) for r in words.values())
    result = BenchmarkResult(
        "contextuality",
        manifest.model,
        meta={
            "counts": {
                "words": len(words),
                "word_occurrences": int(sum(counts)),
                "min_contexts": min_contexts,
                "contexts_per_word": {"min": counts[0], "median": counts[len(counts) // 2], "max": counts[-1]},
            },
            "words": {w: len(r) for w, r in sorted(words.items())},
            "corpus": manifest.corpus,
            "paper": "Ethayarajh 2019, EMNLP, Figures 1-4 (BERT-base, ELMo, GPT-2)",
            "paper_findings": ctx.PAPER_FINDINGS,
            "paper_mev_bound": ctx.PAPER_MEV_BOUND,
        },
    )
    rng = np.random.default_rng(seed + 1)
    for layer in manifest.layers:
        vectors = np.array(table.column(layer_column(layer)).to_pylist(), dtype=np.float32)
        baseline = ctx.anisotropy_baseline(vectors[rows], texts_of, 2000, seed)
        mats = [vectors[r] for r in words.values()]
        self_sim = float(np.mean([ctx.self_similarity(m) for m in mats]))
        mev = float(np.mean([ctx.max_explainable_variance(m) for m in mats]))
        random_mev = float(
            np.mean([ctx.max_explainable_variance(vectors[rng.choice(rows, size=len(m), replace=False)]) for m in mats])
        )
        common = {"system": manifest.model, "layer": layer, "split": "corpus"}
        for metric, value in (
            ("anisotropy", baseline),
            ("self_similarity", self_sim),
            ("self_similarity_adjusted", self_sim - baseline),
            ("mev", mev),
            ("mev_baseline", random_mev),
            ("mev_adjusted", mev - random_mev),
        ):
            result.add(**common, metric=metric, value=value)
    return result
