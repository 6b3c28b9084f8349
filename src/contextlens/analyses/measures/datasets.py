"""Deterministic benchmark data built from WordNet 3.0 usage examples: word-in-context pairs and
word-sense-disambiguation splits.

Both start from :func:`contextlens.core.wordnet.usage_examples` (examples whose single-word lemma
was located in the text, inflections included) grouped by ``(lemma, part of speech)``. Every
random choice comes from ``random.Random`` seeded with the seed *and* the lemma, so a lemma's
data never depends on which other lemmas were drawn.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contextlens.core.wordnet import UsageExample

Key = tuple[str, str]  # (lemma, part of speech)


def group_by_lemma(examples: Sequence[UsageExample]) -> dict[Key, dict[str, list[UsageExample]]]:
    """``{(lemma, pos): {synset: [examples]}}``; one text appears at most once per lemma."""
    groups: dict[Key, dict[str, list[UsageExample]]] = defaultdict(lambda: defaultdict(list))
    seen: dict[Key, set[str]] = defaultdict(set)
    for ex in examples:
        key = (ex.lemma, ex.pos)
        if ex.text.lower() in seen[key]:
            continue
        seen[key].add(ex.text.lower())
        groups[key][ex.synset].append(ex)
    return {k: dict(v) for k, v in groups.items()}


def _rng(seed: int, *parts: str) -> random.Random:
    return random.Random(f"{seed}|" + "|".join(parts))


def split_lemmas(lemmas: Sequence[str], dev_share: float, seed: int) -> dict[str, str]:
    """Assign each distinct lemma to "dev" or "test" (by lemma, so no lemma lands in both)."""
    unique = sorted(set(lemmas))
    random.Random(seed).shuffle(unique)
    n_dev = round(len(unique) * dev_share)
    return {lemma: ("dev" if i < n_dev else "test") for i, lemma in enumerate(unique)}


# --- word in context ----------------------------------------------------------------------


@dataclass(frozen=True)
class WicPair:
    """Two usage examples of one lemma; ``same`` when both illustrate the same synset."""

    lemma: str
    pos: str
    first: UsageExample
    second: UsageExample
    same: bool
    split: str


@dataclass
class WicData:
    pairs: list[WicPair]
    counts: dict[str, Any] = field(default_factory=dict)

    def split(self, name: str) -> list[WicPair]:
        return [p for p in self.pairs if p.split == name]


def build_wic(
    examples: Sequence[UsageExample], *, max_lemmas: int | None = None, dev_share: float = 0.3, seed: int = 0
) -> WicData:
    """Balanced same-sense / different-sense pairs, one of each per lemma, split dev/test by lemma.

    A (lemma, pos) qualifies when it has examples in at least two synsets and at least two
    examples in one synset. From it we draw, seeded by the lemma: two examples ``a, b`` of one
    synset and one example ``c`` of another; the pairs are ``(a, b)`` same and ``(a, c)``
    different. One positive and one negative per lemma makes every split exactly balanced.
    ``max_lemmas`` keeps a seeded sample of the qualifying lemmas.
    """
    groups = group_by_lemma(examples)
    qualifying = _qualifying(groups)
    if max_lemmas is not None and len(qualifying) > max_lemmas:
        qualifying = sorted(random.Random(seed).sample(qualifying, max_lemmas))
    splits = split_lemmas([lemma for lemma, _ in qualifying], dev_share, seed)
    pairs: list[WicPair] = []
    for lemma, pos in qualifying:
        pairs.extend(_lemma_pairs(groups, (lemma, pos), seed, splits[lemma]))
    counts = {
        "qualifying_lemma_pos": len(_qualifying(groups)),
        "lemma_pos_used": len(qualifying),
    }
    for name in ("dev", "test"):
        counts[name] = _split_counts([p for p in pairs if p.split == name])
    return WicData(pairs, counts)


def _qualifying(groups: dict[Key, dict[str, list[UsageExample]]]) -> list[Key]:
    return sorted(k for k, senses in groups.items() if len(senses) >= 2 and any(len(v) >= 2 for v in senses.values()))


def _lemma_pairs(groups: dict[Key, dict[str, list[UsageExample]]], key: Key, seed: int, split: str) -> list[WicPair]:
    """One same-sense and one different-sense pair of a qualifying (lemma, pos), seeded by the lemma."""
    lemma, pos = key
    senses = groups[key]
    rng = _rng(seed, lemma, pos)
    rich = sorted(s for s, v in senses.items() if len(v) >= 2)
    anchor_sense = rng.choice(rich)
    a, b = rng.sample(senses[anchor_sense], 2)
    other_sense = rng.choice(sorted(s for s in senses if s != anchor_sense))
    c = rng.choice(senses[other_sense])
    return [WicPair(lemma, pos, a, b, True, split), WicPair(lemma, pos, a, c, False, split)]


def _split_counts(pairs: Sequence[WicPair]) -> dict[str, int]:
    return {
        "pairs": len(pairs),
        "same": sum(p.same for p in pairs),
        "different": sum(not p.same for p in pairs),
        "lemmas": len({p.lemma for p in pairs}),
    }


# --- word sense disambiguation ------------------------------------------------------------


@dataclass(frozen=True)
class WsdItem:
    """One usage example, labelled with its synset: "train" (sense inventory), "dev" or "test" (held out)."""

    example: UsageExample
    split: str

    @property
    def key(self) -> Key:
        return (self.example.lemma, self.example.pos)


@dataclass
class WsdData:
    items: list[WsdItem]
    counts: dict[str, Any] = field(default_factory=dict)

    def part(self, name: str) -> list[WsdItem]:
        return [i for i in self.items if i.split == name]


def build_wsd(
    examples: Sequence[UsageExample],
    *,
    max_lemmas: int | None = None,
    max_train_per_sense: int = 3,
    dev_share: float = 0.3,
    seed: int = 0,
) -> WsdData:
    """Sense inventories and held-out examples per (lemma, pos), held-out ones split dev/test by lemma.

    A (lemma, pos) qualifies when at least two of its synsets have examples and one of them has
    two or more. In every synset with two or more examples one seeded example is held out;
    up to ``max_train_per_sense`` of the rest build the sense vector. Synsets with a single
    example only train (they are still candidate senses). The held-out example is "dev" or
    "test" by its lemma (:func:`split_lemmas`, as for WiC), so the layer can be chosen on dev
    lemmas and scored on lemmas it never saw.
    """
    groups = group_by_lemma(examples)
    qualifying = _qualifying(groups)
    if max_lemmas is not None and len(qualifying) > max_lemmas:
        qualifying = sorted(random.Random(seed + 1).sample(qualifying, max_lemmas))
    splits = split_lemmas([lemma for lemma, _ in qualifying], dev_share, seed)
    items: list[WsdItem] = []
    for key in qualifying:
        for synset in sorted(groups[key]):
            pool = list(groups[key][synset])
            rng = _rng(seed, key[0], key[1], synset)
            rng.shuffle(pool)
            if len(pool) >= 2:
                items.append(WsdItem(pool[0], splits[key[0]]))
                pool = pool[1:]
            items.extend(WsdItem(ex, "train") for ex in pool[:max_train_per_sense])
    train = [i for i in items if i.split == "train"]
    counts: dict[str, Any] = {
        "lemma_pos": len(qualifying),
        "senses": len({(i.key, i.example.synset) for i in train}),
        "train_examples": len(train),
    }
    for name in ("dev", "test"):
        held = [i for i in items if i.split == name]
        counts[f"{name}_examples"] = len(held)
        counts[f"{name}_lemmas"] = len({i.example.lemma for i in held})
    return WsdData(items, counts)
