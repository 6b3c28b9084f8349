"""Which WordNet sense vectors label induced senses best: gloss, usage examples, or both.

42 hand-labelled sentences (bank: river / money; spring: season / water / coil; plant: factory /
living), 6 per sense. For each layer and each way of building sense vectors
(:func:`contextlens.analyses.corpus.senses.sense_vectors_of`), it prints the share of occurrences
whose nearest sense is a right one (every part of speech, then the ``--pos auto`` one) and how many
sense groups' centroids get a right label. The numbers are in docs/corpus.md ("Senses").

    python benchmarks/senses_labels.py [--model minilm] [--layers 3,5,6]     # about 1 minute
"""

from __future__ import annotations

import argparse

import numpy as np

from contextlens.analyses.corpus.senses import SENSE_VECTORS, choose_pos, sense_vectors_of
from contextlens.core.contextual_models import load_contextual
from contextlens.core.occurrences import locate
from contextlens.core.similarity import normalize_rows

GOLD = {
    "bank": {
        ("bank.n.01",): [
            "We fished from the muddy bank of the river.",
            "The river overflowed its bank after the rain.",
            "Reeds grew thick along the river bank.",
            "Otters dug a den in the steep bank of the river.",
            "He sat on the river bank and watched the water.",
            "Erosion wore away the bank of the stream.",
        ],
        ("depository_financial_institution.n.01", "bank.n.09"): [
            "The bank approved her mortgage loan.",
            "He deposited his salary at the bank on Friday.",
            "The bank raised its interest rates again.",
            "She opened a savings account at the bank.",
            "The central bank cut rates to fight inflation.",
            "The bank manager refused the loan.",
        ],
    },
    "spring": {
        ("spring.n.01",): [
            "The cherry trees blossom every spring.",
            "In the spring of 1863 the army marched north.",
            "Farmers sow wheat in early spring.",
            "The election will be held next spring.",
            "Birds return to the marshes in spring.",
            "Spring came late that year, with snow in April.",
        ],
        ("spring.n.03", "spring.n.04"): [
            "Pilgrims drank from the sacred spring at Delphi.",
            "A hot spring bubbles up beside the lake.",
            "The village draws its water from a mountain spring.",
            "The stream rises from a spring under the rocks.",
            "Mineral water from the spring is bottled here.",
            "The nymph dove into the spring beneath the cliff.",
        ],
        ("spring.n.02",): [
            "The mattress spring was broken.",
            "A coiled steel spring drives the clock.",
            "The spring in the door hinge snapped.",
            "He replaced the worn spring of the valve.",
            "The trigger spring is made of hardened steel.",
            "Compress the spring before you close the lid.",
        ],
    },
    "plant": {
        ("plant.n.01",): [
            "The car plant employs four thousand workers.",
            "The power plant was shut down after the leak.",
            "They built a new steel plant near the port.",
            "Workers at the chemical plant went on strike.",
            "The bottling plant runs three shifts a day.",
            "A nuclear plant supplies the city's electricity.",
        ],
        ("plant.n.02",): [
            "Water the plant twice a week.",
            "This plant grows best in partial shade.",
            "The leaves of the plant turned yellow.",
            "A carnivorous plant traps insects in its leaves.",
            "She repotted the plant into a larger pot.",
            "Every plant in the garden flowered in May.",
        ],
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--layers", default="3,5,6")
    args = parser.parse_args()
    model = load_contextual(args.model)
    for layer in [int(x) for x in args.layers.split(",")]:
        for word, groups in GOLD.items():
            occs = [locate(s, word) for sents in groups.values() for s in sents]
            gold = [syns for syns, sents in groups.items() for _ in sents]
            x = normalize_rows(np.stack([e.hidden[0] for e in model.encode_occurrences(occs, layers=[layer])]))
            line = []
            for how in SENSE_VECTORS:
                senses = sense_vectors_of(args.model, word, layer, how)
                every = np.stack([s.vector for s in senses])
                any_pos = np.mean([senses[i].synset in g for i, g in zip(np.argmax(x @ every.T, 1), gold, strict=True)])
                pos, scores = choose_pos(x, senses, "auto")
                kept = [s for s in senses if s.pos == pos]
                mat = np.stack([s.vector for s in kept])
                acc = np.mean([kept[i].synset in g for i, g in zip(np.argmax(x @ mat.T, 1), gold, strict=True)])
                right = 0
                for syns in groups:
                    centroid = normalize_rows(x[[j for j, g in enumerate(gold) if g == syns]].mean(0)[None])[0]
                    right += kept[int(np.argmax(mat @ centroid))].synset in syns
                line.append(
                    f"{how}: any-pos {any_pos:.2f} | auto pos={pos} {scores} {acc:.2f}, groups {right}/{len(groups)}"
                )
            print(f"{args.model} layer {layer} {word}: " + " || ".join(line), flush=True)


if __name__ == "__main__":
    main()
