"""Naming an induced sense: a cluster's own occurrences vote among the WordNet senses of the word.

A cluster's centroid against one vector per synset picked the sense nearest the cluster's mean,
which for a word used in one domain is often a sense no occurrence is near (man pages: "key" ->
cardinal.s.01, "block" -> engine_block.n.01). Here each occurrence of the cluster is compared with
every piece of evidence of every synset (the word in its gloss template, and the word in each of
its usage examples) and keeps, per synset, its cosine to the synset's nearest piece; the cluster's
label is the synset with the highest mean of these over its occurrences, *if* it leads the
runner-up by at least ``margin`` (cosine; a share of votes cannot rank a cluster of one or two
occurrences). Each candidate also reports its share: the occurrences whose nearest synset it is.
Below the margin the cluster is left **unlabelled**, with its two closest candidates
and their shares, instead of a confident wrong name. ``benchmarks/sense_label_accuracy.py`` measures how
often a label is right (WordNet examples of lemmas held out of the evidence).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

DEFAULT_MARGIN = 0.01  # cosine: the leader's mean minus the runner-up's, below which a cluster is unlabelled
LABEL_RULE = (
    "each occurrence's cosine to each synset's nearest evidence (the word in the synset's gloss or in one of its "
    "usage examples, same model and layer), averaged over the cluster; the label is the leading synset if it "
    "leads the runner-up by the margin, else unlabelled; share: the occurrences whose nearest synset it is"
)


@dataclass(frozen=True)
class SenseEvidence:
    """One synset's vectors: the word in its gloss template, then in each usage example holding it."""

    synset: str
    pos: str
    definition: str
    vectors: np.ndarray  # (1 + examples, d), unit rows


@dataclass(frozen=True)
class ClusterLabel:
    synset: str | None  # None: unlabelled (the leader's margin is below ``margin``)
    definition: str | None
    pos: str | None
    share: float  # of the cluster's occurrences whose nearest synset is the leader
    margin: float  # the leader's mean cosine minus the runner-up's
    cosine: float  # the cluster's mean cosine to the leader's nearest evidence
    candidates: list[dict[str, object]]  # the two leading synsets: synset, definition, share, cosine

    @property
    def labelled(self) -> bool:
        return self.synset is not None

    def gloss(self, examples: int) -> dict[str, object] | None:
        """The cluster's ``gloss`` field (what the faces show), None when unlabelled."""
        if self.synset is None:
            return None
        return {
            "synset": self.synset,
            "pos": self.pos,
            "definition": self.definition,
            "cosine": round(self.cosine, 4),
            "share": round(self.share, 4),
            "margin": round(self.margin, 4),
            "examples": examples,
        }


def label_cluster(x: np.ndarray, senses: list[SenseEvidence], margin: float = DEFAULT_MARGIN) -> ClusterLabel:
    """The label of the cluster whose unit occurrence vectors are ``x`` (rows), by vote."""
    if not senses:
        raise ValueError("no senses to label with")
    nearest = np.stack([np.max(x @ s.vectors.T, axis=1) for s in senses], axis=1)  # (n, senses)
    votes = Counter(int(i) for i in np.argmax(nearest, axis=1))
    mean = nearest.mean(axis=0)
    ranked = sorted(range(len(senses)), key=lambda i: (-float(mean[i]), -votes[i]))
    lead = ranked[0]
    candidates = [
        {
            "synset": senses[i].synset,
            "definition": senses[i].definition,
            "share": round(votes[i] / len(x), 4),
            "cosine": round(float(nearest[:, i].mean()), 4),
        }
        for i in ranked[:2]
    ]
    gap = float(mean[lead] - mean[ranked[1]]) if len(senses) > 1 else 1.0
    best = senses[lead]
    ok = gap >= margin
    return ClusterLabel(
        best.synset if ok else None,
        best.definition if ok else None,
        best.pos if ok else None,
        votes[lead] / len(x),
        gap,
        float(mean[lead]),
        candidates,
    )


def label_text(gloss: dict | None, candidates: list[dict]) -> str:
    """A cluster's label in one short line, the same on every face: the synset and definition with
    its cosine, or (unlabelled) why none, and the two closest candidates with their cosines."""
    if gloss:
        return f"{gloss['synset']}: {gloss['definition']} ({float(gloss['cosine']):.3f})"
    if not candidates:
        return "unlabelled (no WordNet sense to compare with)"
    shown = "; ".join(f"{c['synset']} {float(c['cosine']):.3f} ({c['definition']})" for c in candidates)
    return f"unlabelled (no sense leads by the margin); closest: {shown}"


def repeated_labels(labels: list[ClusterLabel]) -> list[str]:
    """A warning per synset that names two or more clusters (they may be one sense split in two)."""
    named = Counter(lab.synset for lab in labels if lab.synset is not None)
    return [
        f"clusters {', '.join(str(i) for i, lab in enumerate(labels) if lab.synset == s)} are all labelled {s}: "
        "one sense split by the clustering, or senses WordNet does not tell apart; compare their words, or try a "
        "smaller --k"
        for s, n in named.items()
        if n > 1
    ]
