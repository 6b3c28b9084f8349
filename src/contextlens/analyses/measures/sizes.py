"""The benchmark data's sizes and seed: ``full`` (docs/benchmarks.md's numbers) and ``quick`` (tests
and demos). One table, because the suite, the WiC pair sets and the layer choice must build the very
same data at a size."""

from __future__ import annotations

from dataclasses import dataclass

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


SIZES = {
    "full": SuiteSize(1000, 500, 3, None, 5, 200, 300),
    "quick": SuiteSize(30, 12, 2, 30, 2, 12, 12),
}
