"""Sense induction's clustering: how many groups a word's unit vectors form, and which.

Criterion for k (:data:`CRITERION`): k-means (cosine geometry: unit vectors) for k = 2..8, keep
the k with the highest silhouette (cosine); when no k reaches ``MIN_SILHOUETTE`` the vectors are
one group (k = 1). Shared by ``senses induce`` (:mod:`contextlens.analyses.corpus.senses`) and the
WSI benchmark (:mod:`contextlens.analyses.benchmarks.wsi`), so both induce senses alike.
"""

from __future__ import annotations

import numpy as np

from contextlens.core.arguments import given, whole_number
from contextlens.errors import ParameterError

MAX_K = 8
MIN_SILHOUETTE = 0.1
CRITERION = f"k-means for k=2..{MAX_K}, k with the highest cosine silhouette; k=1 when none reaches {MIN_SILHOUETTE}"


def cluster_unit_vectors(
    x: np.ndarray, k: str | int = "auto", seed: int = 0
) -> tuple[np.ndarray, int, dict[int, float]]:
    """Cluster unit row vectors by :data:`CRITERION` (or into ``k`` clusters when ``k`` is a number).

    Returns the labels, the chosen k and the silhouette of every k tried. Shared by ``senses
    induce`` and the WSI benchmark (``analyses/benchmarks/wsi.py``), so both induce senses alike.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    n = len(x)
    if k != "auto":  # checked before any fit: 2.5 was read as 2, True as 1
        top = min(MAX_K, n - 1)
        try:
            k = whole_number(k, "k", minimum=1, maximum=top)
        except ParameterError:
            raise ParameterError("k", f"must be auto or a whole number between 1 and {top}, got {given(k)}") from None
    silhouettes: dict[int, float] = {}
    fits = {}
    for kk in range(2, min(MAX_K, n - 1) + 1):
        km = KMeans(n_clusters=kk, n_init=4, random_state=seed).fit(x)
        if len(set(km.labels_)) < 2:
            continue
        silhouettes[kk] = float(silhouette_score(x, km.labels_, metric="cosine"))
        fits[kk] = km.labels_
    if k == "auto":
        best = max(silhouettes, key=silhouettes.get, default=1)
        chosen = best if silhouettes.get(best, 0.0) >= MIN_SILHOUETTE else 1
    else:
        chosen = int(k)
        if chosen > 1 and chosen not in fits:
            fits[chosen] = KMeans(n_clusters=chosen, n_init=4, random_state=seed).fit(x).labels_
    labels = np.zeros(n, dtype=int) if chosen == 1 else np.asarray(fits[chosen])
    return labels, chosen, silhouettes
