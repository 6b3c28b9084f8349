"""Retrieval metrics over a query-by-document similarity matrix: Spearman and nDCG@10 against graded
ratings (Lee), and the gold's rank, MRR and Recall@k with one relevant document per query (WordNet).

Why a measure: `eval retrieval`, the static models' evaluation and ``--layer auto``'s retrieval
choice score with these same functions.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr


def ndcg_at_k(similarity: np.ndarray, relevance: np.ndarray, k: int = 10) -> float:
    """Mean nDCG@k with each row as a query over every other column (the diagonal is left out)."""
    n = similarity.shape[0]
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    scores = []
    for q in range(n):
        others = np.array([j for j in range(n) if j != q])
        ranked = others[np.argsort(-similarity[q, others], kind="stable")][:k]
        ideal = np.sort(relevance[q, others])[::-1][:k]
        dcg = float(relevance[q, ranked] @ discounts[: len(ranked)])
        idcg = float(ideal @ discounts[: len(ideal)])
        scores.append(dcg / idcg if idcg > 0 else 0.0)
    return float(np.mean(scores))


def lee_scores(similarity: np.ndarray, ratings: np.ndarray) -> dict[str, float]:
    upper = np.triu_indices(ratings.shape[0], 1)
    rho = spearmanr(similarity[upper], ratings[upper]).statistic
    return {"spearman": float(rho), "ndcg@10": ndcg_at_k(similarity, ratings, 10)}


def gold_ranks(similarity: np.ndarray) -> np.ndarray:
    """1-based rank of the gold column (the diagonal) in each row; ties count against the gold."""
    gold = np.diag(similarity)[:, None]
    return (similarity >= gold).sum(axis=1)


def wordnet_scores(similarity: np.ndarray) -> dict[str, float]:
    ranks = gold_ranks(similarity)
    return {
        "mrr": float(np.mean(1.0 / ranks)),
        "recall@1": float(np.mean(ranks <= 1)),
        "recall@10": float(np.mean(ranks <= 10)),
    }
