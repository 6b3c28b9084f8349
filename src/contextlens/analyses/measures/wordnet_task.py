"""The WordNet retrieval task: a seeded sample of synsets with a usage example, each example a query
whose one relevant document is its synset's definition.

Why a measure: `eval retrieval --task wordnet` reports on it and ``--layer auto``'s retrieval choice
draws its dev synsets from the same pool (analyses/measures/layer_choice.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contextlens.errors import InputError


@dataclass(frozen=True)
class WordNetTask:
    synsets: list[str]
    examples: list[str]  # queries: one usage example per synset
    definitions: list[str]  # corpus: the definitions of the same synsets, same order


def load_wordnet_task(sample: int, seed: int = 0, definitions: bool = True) -> WordNetTask:
    """A seeded sample of synsets that have a usage example: (example, definition) pairs
    (``definitions=False``: the synsets and examples only, without opening the WordNet reader)."""
    from contextlens.core.wordnet import usage_examples, wordnet

    first: dict[str, str] = {}
    for ex in usage_examples():
        first.setdefault(ex.synset, ex.text)
    names = sorted(first)
    if sample < 10:
        raise InputError(f"`sample` must be at least 10 synsets, got {sample}")
    if sample > len(names):
        raise InputError(f"`sample` {sample} exceeds the {len(names)} synsets that have a usage example")
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(names), size=sample, replace=False))
    synsets = [names[i] for i in picked]
    if not definitions:
        return WordNetTask(synsets, [first[s] for s in synsets], [])
    reader = wordnet()
    return WordNetTask(synsets, [first[s] for s in synsets], [reader.synset(s).definition() for s in synsets])
