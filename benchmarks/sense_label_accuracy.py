"""How often a sense label is right, on WordNet examples held out of the evidence.

The labelled set: WordNet 3.0 lemmas (nouns and verbs; none of the words the tests and docs use:
bank, spring, plant, key, block, state, free, copy) with two or more senses of one part of
speech, of which at least one has two or more usage examples holding the lemma. Each such sense
gives a "cluster": the lemma's vectors in the first half (rounded up) of that sense's usage
examples. It is labelled against the lemma's senses of that part of speech, the held-out sense
keeping its gloss and the other half of its examples as evidence, the others all of theirs: no
occurrence is matched to itself, and the held-out sense has less evidence than in real use (a
bias against the right answer, not for it). Scored two ways, on the same clusters:

* ``evidence`` (:func:`contextlens.analyses.corpus.sense_labels.label_cluster`, what `senses
  induce` does now): the mean over the cluster of each occurrence's cosine to a sense's nearest
  gloss or example; labelled if the leader leads by the margin (cosine); coverage (labelled share
  of clusters) and accuracy (right among labelled);
* ``centroid`` (before): the cluster's centroid against each sense's mean vector (the examples'
  mean, the gloss when it has none), always labelled.

Chance: the mean of 1 / (senses of the part of speech) over the clusters. The clusters are pure
(one sense each) and small (2-5 occurrences), unlike induced ones: this measures the naming, not
the clustering.

    python benchmarks/sense_label_accuracy.py [--model minilm] [--layer 5] [--lemmas 80] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from contextlens.analyses.corpus.sense_labels import SenseEvidence, label_cluster
from contextlens.analyses.corpus.senses import senses_of_synsets
from contextlens.core.contextual_models import load_contextual
from contextlens.core.wordnet import find_lemma, synset_entries, wordnet

EXCLUDED = {"bank", "spring", "plant", "key", "block", "state", "free", "copy"}
MARGINS = (0.0, 0.005, 0.01, 0.02, 0.04, 0.08)


def candidate_lemmas(count: int, seed: int) -> list[tuple[str, str]]:
    """(lemma, pos) pairs with two or more senses of ``pos``, one with 2+ examples holding it.

    Read from the data files (``synset_entries``, ~1 CPU s), not NLTK's ``all_synsets`` and a
    ``Synset`` per lookup (~13 CPU s); a lemma's senses are what ``reader.synsets(lemma, pos)``
    returns: the offsets of each of its morphy base forms, in that order."""
    reader = wordnet()
    index = reader._lemma_pos_offset_map
    entries = {(e.pos, e.offset): e for e in synset_entries() if e.pos in ("n", "v")}
    found = []
    for pos in ("n", "v"):
        for lemma in sorted({n for (p, _), e in entries.items() if p == pos for n in e.lemma_names}):
            if "_" in lemma or not lemma.isalpha() or lemma.lower() in EXCLUDED:
                continue
            forms = reader._morphy(lemma.lower(), pos)
            synsets = [entries[(pos, offset)] for form in forms for offset in index[form].get(pos, [])]
            if len(synsets) < 2:
                continue
            if any(sum(find_lemma(e, lemma, pos) is not None for e in s.examples) >= 2 for s in synsets):
                found.append((lemma, pos))
    random.Random(seed).shuffle(found)
    return found[:count]


def score(model, layer: int, lemmas: list[tuple[str, str]]) -> dict[str, object]:
    reader = wordnet()
    right = {m: 0 for m in MARGINS}
    labelled = {m: 0 for m in MARGINS}
    centroid_right = clusters = 0
    chance = 0.0
    for lemma, pos in lemmas:
        synsets = [s for s in reader.synsets(lemma, pos) if s.pos() == pos]
        senses = senses_of_synsets(model, lemma, layer, synsets)
        for held in senses:
            if held.examples < 2:
                continue
            half = 1 + (held.examples + 1) // 2
            cluster, kept = held.evidence[1:half], np.concatenate([held.evidence[:1], held.evidence[half:]])
            evidence = [SenseEvidence(s.synset, s.pos, s.definition, kept if s is held else s.evidence) for s in senses]
            clusters += 1
            chance += 1 / len(senses)
            for m in MARGINS:
                lab = label_cluster(cluster, evidence, m)
                labelled[m] += lab.labelled
                right[m] += lab.synset == held.synset
            centroid = cluster.mean(axis=0)
            centroid /= np.linalg.norm(centroid)
            rest = kept[1:].mean(axis=0)
            means = [rest / np.linalg.norm(rest) if s is held else s.vector for s in senses]  # held: its other half
            centroid_right += senses[int(np.argmax([v @ centroid for v in means]))].synset == held.synset
    return {"clusters": clusters, "right": right, "labelled": labelled, "centroid": centroid_right, "chance": chance}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--layer", type=int, default=5)
    parser.add_argument("--lemmas", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    lemmas = candidate_lemmas(args.lemmas, args.seed)
    model = load_contextual(args.model)
    r = score(model, args.layer, lemmas)
    n = r["clusters"]
    print(f"{args.model} layer {args.layer}: {len(lemmas)} lemmas, {n} held-out sense clusters "
          f"(chance {r['chance'] / n:.1%}), {time.perf_counter() - started:.0f} s")  # fmt: skip
    print(f"centroid vs mean sense vector (before, always labelled): accuracy {r['centroid'] / n:.1%}")
    print("nearest evidence:   margin  coverage  accuracy of labelled  right of all")
    for m in MARGINS:
        done = r["labelled"][m]
        acc = r["right"][m] / done if done else float("nan")
        print(f"                    {m:>6.3f}  {done / n:>8.1%}  {acc:>20.1%}  {r['right'][m] / n:>12.1%}")


if __name__ == "__main__":
    main()
