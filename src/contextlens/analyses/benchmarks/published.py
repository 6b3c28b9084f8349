"""The published per-layer numbers of Ethayarajh (2019) that our curves are set beside.

Why here, as numbers: a learner reads "BERT's self-similarity falls in upper layers" and has no
scale; the paper's released statistics (github.com/kawine/contextual, commit 84d2f97:
``bert/embedding_space_stats.json`` for the random-word baseline and intra-sentence similarity;
per-word ``self_similarity.csv`` and ``variance_explained.csv`` averaged over words for the
rest) give one. Only the means are cited; none of their files is shipped. The released
``variance_explained.csv`` comes from that commit's ``analyze.py``: sklearn
``TruncatedSVD(n_components=100).explained_variance_ratio_[0]`` of each word's occurrences, from
layer 1 up (contextlens's ``mev_paper``), not a centred PCA (``PCA(n_components=1)`` is in
another commit of the file, 3865f9b): "render" has 0.016 over 6 occurrences, below the 1/5 a
centred PCA of 6 points cannot go under. The key ``bert_mev_centred`` keeps its old name. Its
random-word MEV is the same TruncatedSVD ratio on one matrix of 1,000 random words.
"""

from __future__ import annotations

SOURCE = (
    "Ethayarajh 2019 (EMNLP), released statistics, github.com/kawine/contextual @84d2f97; "
    "means over words as computed from them"
)

# BERT-base-cased, every layer: mean cosine of random words from different sentences (anisotropy)
# and mean cosine of a sentence's words to the sentence mean (bert/embedding_space_stats.json).
BERT_BASELINE = (0.105, 0.168, 0.219, 0.245, 0.327, 0.377, 0.420, 0.398, 0.399, 0.484, 0.561, 0.675, 0.477)
BERT_INTRA_SENTENCE = (0.435, 0.522, 0.570, 0.590, 0.642, 0.695, 0.726, 0.711, 0.720, 0.771, 0.820, 0.870, 0.776)

# Layers 0, 3, 6, 8, 11, 12: self-similarity (raw, adjusted = raw - baseline), centred MEV (no
# layer 0: the paper skips it). GPT-2 beside it.
PUBLISHED_ROWS: tuple[dict[str, float | int | None], ...] = (
    {"layer": 0, "bert_baseline": 0.105, "bert_self_similarity": 0.954, "bert_self_similarity_adjusted": 0.849,
     "bert_intra_sentence": 0.435, "bert_mev_centred": None, "gpt2_baseline": 0.611, "gpt2_self_similarity": 0.917,
     "gpt2_mev_centred": None},
    {"layer": 3, "bert_baseline": 0.245, "bert_self_similarity": 0.823, "bert_self_similarity_adjusted": 0.578,
     "bert_intra_sentence": 0.590, "bert_mev_centred": 0.020, "gpt2_baseline": 0.614, "gpt2_self_similarity": 0.908,
     "gpt2_mev_centred": 0.302},
    {"layer": 6, "bert_baseline": 0.420, "bert_self_similarity": 0.765, "bert_self_similarity_adjusted": 0.345,
     "bert_intra_sentence": 0.726, "bert_mev_centred": 0.025, "gpt2_baseline": 0.578, "gpt2_self_similarity": 0.850,
     "gpt2_mev_centred": 0.297},
    {"layer": 8, "bert_baseline": 0.399, "bert_self_similarity": 0.731, "bert_self_similarity_adjusted": 0.332,
     "bert_intra_sentence": 0.720, "bert_mev_centred": 0.029, "gpt2_baseline": 0.595, "gpt2_self_similarity": 0.838,
     "gpt2_mev_centred": 0.302},
    {"layer": 11, "bert_baseline": 0.675, "bert_self_similarity": 0.839, "bert_self_similarity_adjusted": 0.164,
     "bert_intra_sentence": 0.870, "bert_mev_centred": 0.026, "gpt2_baseline": 0.758, "gpt2_self_similarity": 0.887,
     "gpt2_mev_centred": 0.351},
    {"layer": 12, "bert_baseline": 0.477, "bert_self_similarity": 0.755, "bert_self_similarity_adjusted": 0.278,
     "bert_intra_sentence": 0.776, "bert_mev_centred": 0.040, "gpt2_baseline": 0.978, "gpt2_self_similarity": 0.985,
     "gpt2_mev_centred": 0.713},
)  # fmt: skip

# "bank" in those statistics: self-similarity at BERT layer 12 (the seed expects 0.72-0.88 there).
BERT_BANK_SELF_SIMILARITY_LAYER_12 = 0.775


MEV_METHOD = (
    "bert_mev_centred (old name) is the released variance_explained.csv's mean: TruncatedSVD(n_components=100)"
    ".explained_variance_ratio_[0] per word (analyze.py @84d2f97), contextlens's mev_paper; not a centred PCA"
)


def published() -> dict[str, object]:
    """The cited figures as one JSON-ready document (what ``eval contextuality --json`` embeds)."""
    return {
        "source": SOURCE,
        "bert_base_cased": {"baseline": list(BERT_BASELINE), "intra_sentence": list(BERT_INTRA_SENTENCE)},
        "rows": [dict(r) for r in PUBLISHED_ROWS],
        "bert_bank_self_similarity_layer_12": BERT_BANK_SELF_SIMILARITY_LAYER_12,
        "mev_method": MEV_METHOD,
    }
