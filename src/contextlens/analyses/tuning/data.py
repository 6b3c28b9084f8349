"""The tuning data: WordNet 3.0 usage examples of lemmas that no word-in-context or WSD benchmark
split holds, split train/dev by lemma, with the check that proves it and a hash that names it.

Why so strict: a tuned model is scored on `eval wic` and `eval wsd`. Every lemma those benchmarks
draw (both sizes, ``full`` and ``quick``, every split: dev, test, and WSD's sense inventories) is
left out by its spelling in any part of speech, and so is every example whose text any of those
sets holds (one WordNet sentence can illustrate several lemmas). The dev lemmas here (early
stopping) come from the same eligible pool and never from the benchmarks' dev split, which stays
the fair chooser of a layer.

A lemma is usable when, after that filter, it has examples in at least two synsets and two or
more in one of them: a contrastive step needs a same-sense positive and an other-sense negative.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contextlens.analyses.benchmarks.suite import SEED, SIZES, build_wic_set
from contextlens.analyses.measures.datasets import Key, build_wsd, group_by_lemma
from contextlens.core import wordnet as wn
from contextlens.core.wordnet import UsageExample
from contextlens.errors import InputError

BENCHMARK_SIZES = ("full", "quick")
DATA_NAME = "WordNet 3.0 usage examples (lemmas outside every eval wic / eval wsd split)"


@dataclass(frozen=True)
class LemmaGroup:
    """One (lemma, part of speech) and its usage examples, each labelled by its synset."""

    key: Key
    examples: tuple[UsageExample, ...]

    @property
    def senses(self) -> int:
        return len({e.synset for e in self.examples})


@dataclass(frozen=True)
class HeldOut:
    """What the benchmarks score on: their lemmas and their texts (lowercased)."""

    lemmas: frozenset[str]
    texts: frozenset[str]


@dataclass(frozen=True)
class SplitCheck:
    """Counted, not assumed: how many benchmark lemmas and sentences the tuning data holds."""

    benchmark_lemmas: int
    benchmark_texts: int
    test_lemmas_in_tuning: int
    test_sentences_in_tuning: int
    benchmark_lemmas_in_tuning: int
    benchmark_sentences_in_tuning: int

    @property
    def clean(self) -> bool:
        return self.benchmark_lemmas_in_tuning == 0 and self.benchmark_sentences_in_tuning == 0


@dataclass
class TuningData:
    train: list[LemmaGroup]
    dev: list[LemmaGroup]
    check: SplitCheck
    split_hash: str
    counts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"data": DATA_NAME, "split_hash": self.split_hash, "check": vars(self.check), "counts": self.counts}


@functools.cache
def held_out(test_only: bool = False) -> HeldOut:
    """The lemmas and texts of every benchmark split (or of the test splits alone). Kept for the
    process: each is a pass of the WSD builder over WordNet's 43k usage examples per benchmark size,
    asked twice by every :func:`build_tuning_data`, and fixed by the installed data."""
    examples = wn.usage_examples()
    lemmas: set[str] = set()
    texts: set[str] = set()
    for size in BENCHMARK_SIZES:
        for pair in build_wic_set(size).wic.pairs:
            if not test_only or pair.split == "test":
                lemmas.add(pair.lemma)
                texts.update((pair.first.text.lower(), pair.second.text.lower()))
        spec = SIZES[size]
        wsd = build_wsd(examples, max_lemmas=spec.wsd_lemmas, max_train_per_sense=spec.wsd_train_per_sense, seed=SEED)
        test_lemmas = {i.example.lemma for i in wsd.items if i.split == "test"}
        for item in wsd.items:  # a test lemma's sense inventory ("train" items) is test data too
            if not test_only or item.example.lemma in test_lemmas:
                lemmas.add(item.example.lemma)
                texts.add(item.example.text.lower())
    return HeldOut(frozenset(lemmas), frozenset(texts))


def build_tuning_data(
    *,
    max_lemmas: int | None = None,
    dev_share: float = 0.1,
    max_per_sense: int = 4,
    seed: int = 0,
    glosses: bool = False,
) -> TuningData:
    """Usable lemmas outside every benchmark split, ``max_lemmas`` of them (a seeded sample; None:
    all), split train/dev by lemma; at most ``max_per_sense`` examples per synset (seeded).

    ``glosses`` adds to each train lemma one view per synset, ``"<lemma>: <definition>"`` with the
    lemma as target (a positive for a sense illustrated once), and brings into train the lemmas
    whose senses have one example each; no gloss of a synset that names a benchmark lemma is used.
    The dev lemmas and their examples are the same with or without (dev scores stay comparable)."""
    wn.check_installed()
    examples = wn.usage_examples()
    excluded = held_out()
    kept = [e for e in examples if e.lemma not in excluded.lemmas and e.text.lower() not in excluded.texts]
    groups = group_by_lemma(kept)
    usable = sorted(k for k, s in groups.items() if len(s) >= 2 and any(len(v) >= 2 for v in s.values()))
    if max_lemmas is not None and len(usable) > max_lemmas:
        usable = sorted(random.Random(f"{seed}|tune-lemmas").sample(usable, max_lemmas))
    order = list(usable)
    random.Random(f"{seed}|tune-split").shuffle(order)
    n_dev = max(1, round(len(order) * dev_share))
    if len(order) < 2 or n_dev >= len(order):
        raise InputError(
            f"{len(order)} usable lemmas cannot be split into train and dev lemmas; give more lemmas (`max_lemmas`)"
        )
    dev_keys = set(order[:n_dev])
    picked = {k: _capped(groups[k], max_per_sense, seed, k) for k in usable}
    train = [LemmaGroup(k, picked[k]) for k in usable if k not in dev_keys]
    dev = [LemmaGroup(k, picked[k]) for k in usable if k in dev_keys]
    if glosses:
        train = _with_glosses(train, groups, set(usable), excluded, max_lemmas, max_per_sense, seed)
    check = split_check(train + dev, excluded, held_out(test_only=True))
    counts = {
        "usable_lemma_pos": len(usable),
        "train_lemmas": len(train),
        "dev_lemmas": len(dev),
        "train_examples": sum(len(g.examples) for g in train),
        "dev_examples": sum(len(g.examples) for g in dev),
        "max_per_sense": max_per_sense,
        "glosses": glosses,
    }
    return TuningData(train, dev, check, split_hash(train, dev), counts)


def _with_glosses(
    train: list[LemmaGroup],
    groups: dict[Key, dict[str, list[UsageExample]]],
    usable: set[Key],
    excluded: HeldOut,
    max_lemmas: int | None,
    max_per_sense: int,
    seed: int,
) -> list[LemmaGroup]:
    """``train`` plus the lemmas with two or more illustrated senses but no same-sense pair, each
    with a gloss view of every sense whose synset names no benchmark lemma."""
    extra = sorted(k for k, senses in groups.items() if k not in usable and len(senses) >= 2)
    if max_lemmas is not None and len(extra) > max_lemmas:
        extra = sorted(random.Random(f"{seed}|tune-gloss-lemmas").sample(extra, max_lemmas))
    reader = wn.wordnet()
    out = []
    for group in train + [LemmaGroup(k, _capped(groups[k], max_per_sense, seed, k)) for k in extra]:
        lemma, pos = group.key
        views = []
        for synset in sorted({e.synset for e in group.examples}):
            entry = reader.synset(synset)
            if not {name.lower() for name in entry.lemma_names()} & excluded.lemmas:
                views.append(UsageExample(synset, lemma, pos, f"{lemma}: {entry.definition()}", 0, len(lemma)))
        out.append(LemmaGroup(group.key, group.examples + tuple(views)))
    return out


def _capped(senses: dict[str, list[UsageExample]], most: int, seed: int, key: Key) -> tuple[UsageExample, ...]:
    out: list[UsageExample] = []
    for synset in sorted(senses):
        pool = list(senses[synset])
        random.Random(f"{seed}|{key[0]}|{key[1]}|{synset}").shuffle(pool)
        out.extend(pool[:most])
    return tuple(out)


def split_check(groups: Sequence[LemmaGroup], everything: HeldOut, tests: HeldOut) -> SplitCheck:
    """Count the tuning data's overlap with the benchmarks: lemmas and sentences, test and all."""
    lemmas = {g.key[0] for g in groups}
    texts = {e.text.lower() for g in groups for e in g.examples}
    return SplitCheck(
        benchmark_lemmas=len(everything.lemmas),
        benchmark_texts=len(everything.texts),
        test_lemmas_in_tuning=len(lemmas & tests.lemmas),
        test_sentences_in_tuning=len(texts & tests.texts),
        benchmark_lemmas_in_tuning=len(lemmas & everything.lemmas),
        benchmark_sentences_in_tuning=len(texts & everything.texts),
    )


def split_hash(train: Sequence[LemmaGroup], dev: Sequence[LemmaGroup]) -> str:
    """sha256 of exactly which examples are train and which are dev (synset, lemma, text, span)."""

    def rows(groups: Sequence[LemmaGroup]) -> list[list[Any]]:
        return [[e.synset, e.lemma, e.pos, e.text, e.start, e.end] for g in groups for e in g.examples]

    body = json.dumps({"train": rows(train), "dev": rows(dev)}, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(body.encode("utf-8")).hexdigest()
