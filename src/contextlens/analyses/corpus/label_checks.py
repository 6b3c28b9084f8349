"""Two checks of a cluster's WordNet label against the cluster's own sentences (issue 33, item 11).

Why: the vote of :mod:`.sense_labels` compares each occurrence with the word inside WordNet's
glosses and usage examples; a synset with more examples has more pieces to be near, and a verb
sense whose examples are about gardens is near botany uses of "plant". On eight botany "plant"
sentences minilm's layer 6 named plant.n.04 ("something planted secretly for discovery by
another", 3 pieces of evidence) against plant.n.02 ("(botany) a living organism ...", 1 piece),
and layer 2 named the verb plant.v.01. So a label is kept only where the cluster's sentences agree:

* **grammar**: where most of the cluster's occurrences follow a determiner or possessive ("the
  plant", "each plant", "her plant") or carry a possessive 's ("the plant's roots"), they are noun
  uses, and the cluster is labelled among the noun senses whatever part of speech is nearest;
* **gloss similarity**: the label's definition must be the candidate definition nearest the
  cluster's sentences (the model's mean-pooled text vectors, top layer, of the sentences nearest
  the cluster's centre, against those of the candidates' definitions, the word masked in both),
  by at least :data:`GLOSS_MARGIN`; else the cluster is unlabelled, its candidates shown. On the
  botany and factory "plant" sentences this puts plant.n.02 and plant.n.01 first (0.24 and 0.26
  against 0.13 and 0.11 for plant.n.04), the tilting "bank" verbs bank.v.01 (0.24 against 0.17).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from contextlens.analyses.corpus.sense_labels import ClusterLabel
from contextlens.core.similarity import normalize_rows

DETERMINERS = frozenset(
    ["the", "a", "an", "this", "that", "these", "those", "each", "every", "my", "your", "his", "her", "its", "our"]
    + ["their", "no", "any", "some", "another"]
)
GLOSS_MARGIN = 0.01  # cosine: the label's definition must lead the other candidates' by this much
MASK = "_"  # stands for the word in the sentences and the definitions compared
GLOSS_SENTENCES = 16  # the cluster's sentences nearest its centre that the definitions are compared with
LABEL_CHECKS = (
    "kept only if the cluster's sentences agree: a cluster whose occurrences mostly follow a determiner or "
    f"possessive is labelled among noun senses; the label's definition must be the candidates' definition "
    f"nearest the cluster's {GLOSS_SENTENCES} most central sentences (mean-pooled text vectors, the word masked) "
    f"by {GLOSS_MARGIN}"
)


def noun_uses(rows: Sequence[dict[str, Any]]) -> bool:
    """Whether most of these occurrences are grammatically nouns (a determiner or possessive
    right before the word, or a possessive 's right after it)."""
    nouns = 0
    for row in rows:
        sentence, start, end = str(row["sentence"]), int(row["start"]), int(row["end"])
        before = sentence[:start].split()
        after = sentence[end:]
        if (before and before[-1].strip("\"'(").lower() in DETERMINERS) or after.startswith(("'s", "\u2019s")):
            nouns += 1
    return nouns * 2 > len(rows)


def gloss_checked(
    label: ClusterLabel, model: Any, rows: Sequence[dict[str, Any]], word: str, definitions: dict[str, str]
) -> ClusterLabel:
    """``label``, or the same cluster unlabelled where its definition is not the candidates'
    definition nearest ``rows``' sentences (the cluster's most central ones) by
    :data:`GLOSS_MARGIN`. The word itself is masked on both sides: a definition that holds it
    ("enclose with a bank") is otherwise nearest every sentence that does."""
    if label.synset is None or len(definitions) < 2:
        return label
    names = list(definitions)
    sentences = [f"{r['sentence'][: int(r['start'])]}{MASK}{r['sentence'][int(r['end']) :]}" for r in rows]
    glosses = [re.sub(rf"\b{re.escape(word)}\w*", MASK, d, flags=re.IGNORECASE) for d in definitions.values()]
    vectors = normalize_rows(np.asarray(model.embed_texts([*sentences, *glosses]), dtype=np.float64))
    cos = (vectors[: len(sentences)] @ vectors[len(sentences) :].T).mean(axis=0)
    mine = float(cos[names.index(label.synset)])
    others = max(float(c) for n, c in zip(names, cos, strict=True) if n != label.synset)
    if mine - others >= GLOSS_MARGIN:
        return label
    return replace(label, synset=None, definition=None, pos=None)
