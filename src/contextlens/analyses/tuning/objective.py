"""The tuning objective and its dev score, on the target word's pooled hidden state at one layer.

Objective: supervised contrastive loss (Khosla et al. 2020) *within one lemma*. Every usage
example of a lemma is an anchor; its positives are the lemma's other examples of the same synset,
its negatives the lemma's examples of other synsets; cosines over a temperature. Why within the
lemma: word in context asks exactly that question (two occurrences of one lemma, same sense or
not), and a negative from another lemma would teach the model to tell words apart, which it does
already. Dev score: the ROC AUC of the within-lemma cosines for same-synset versus other-synset
pairs of the dev lemmas (threshold-free: word in context's threshold is chosen later, on its own
dev split).

The target's tokens are found by the project's one span-to-token rule
(:func:`contextlens.core.alignment.tokenize_many`) and mean-pooled, as every encoding is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from contextlens.core.alignment import TokenizedOccurrence


def pooled_targets(net: Any, items: Sequence[TokenizedOccurrence], pad_id: int) -> torch.Tensor:
    """``(n, d)``: the last hidden state of ``net`` (cut at the tuned layer) mean-pooled over each
    item's target tokens."""
    width = max(len(t) for t in items)
    ids = torch.full((len(items), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    weights = torch.zeros((len(items), width))
    for row, item in enumerate(items):
        ids[row, : len(item)] = torch.tensor(item.input_ids)
        mask[row, : len(item)] = 1
        weights[row, list(item.target_positions)] = 1.0 / len(item.target_positions)
    hidden = net(input_ids=ids, attention_mask=mask).last_hidden_state
    return torch.einsum("nt,ntd->nd", weights, hidden)


def lemma_contrastive(states: torch.Tensor, synsets: Sequence[str], temperature: float) -> tuple[torch.Tensor, int]:
    """The summed supervised contrastive loss of one lemma's examples, and how many anchors had a
    positive (an example alone in its synset is only ever a negative)."""
    z = torch.nn.functional.normalize(states, dim=1)
    n = len(synsets)
    eye = torch.eye(n, dtype=torch.bool)
    labels = torch.tensor([hash_label(s, synsets) for s in synsets])
    positive = (labels[:, None] == labels[None, :]) & ~eye
    anchors = positive.any(dim=1)
    if not bool(anchors.any()):
        return states.sum() * 0.0, 0
    logits = (z @ z.T / temperature).masked_fill(eye, float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    per_anchor = -log_prob.masked_fill(~positive, 0.0).sum(dim=1) / positive.sum(dim=1).clamp(min=1)
    return per_anchor[anchors].sum(), int(anchors.sum())


def hash_label(synset: str, synsets: Sequence[str]) -> int:
    """A synset's index among the lemma's synsets (labels for the positive mask)."""
    return sorted(set(synsets)).index(synset)


def within_lemma_auc(states: np.ndarray, groups: Sequence[Sequence[str]]) -> float:
    """ROC AUC of within-lemma cosines (same synset scores above other synset); ``groups`` gives
    each lemma's synset labels in the order of its rows in ``states``."""
    from sklearn.metrics import roc_auc_score

    z = states / np.maximum(np.linalg.norm(states, axis=1, keepdims=True), 1e-12)
    scores, same = [], []
    row = 0
    for synsets in groups:
        block = z[row : row + len(synsets)]
        cos = block @ block.T
        for i in range(len(synsets)):
            for j in range(i + 1, len(synsets)):
                scores.append(float(cos[i, j]))
                same.append(synsets[i] == synsets[j])
        row += len(synsets)
    if all(same) or not any(same):
        return float("nan")
    return float(roc_auc_score(same, scores))
