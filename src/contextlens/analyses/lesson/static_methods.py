"""What each static method is, in the seeds' words, beside what the models of that method
measure here: for the lesson's report.

The seeds' table names three static methods (word2vec skip-gram and CBOW, GloVe, fastText);
contextlens ships GloVe and makes the others (``contextlens static train``), and adds a fourth the
seeds predate, a static model distilled from a transformer (``static distill``). Nothing is
trained here: a method whose model was never made says how to make one. Every number is cheap (no
forward pass): SimLex-999 and WordSim-353 Spearman with the share of pairs scored, and, for a
model that composes unseen words, one such word's neighbours. With the lesson's ranking, the
seeds' experiment is re-ranked by word2vec cosine (a made one) against the same contextual cosines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contextlens.analyses.lesson.ranking import Ranking, kendall_tau_b, seeds_static
from contextlens.analyses.measures import word_pairs as wp
from contextlens.core.jsonable import plain_json
from contextlens.core.resources import DEFAULT_STATIC
from contextlens.core.static_models import DistilledStaticModel, StaticModel, load_static
from contextlens.core.static_store import made_models
from contextlens.errors import OutOfVocabularyError

# (method, how it learns, what it captures, its limitation): the seeds' table, word for word;
# the distilled row is contextlens's, the seeds predate it.
SEEDS_TABLE: tuple[tuple[str, str, str, str], ...] = (
    (
        "word2vec skip-gram",
        "Skip-gram: predict neighbours from a centre word. Explicit context window (typically 5 tokens).",
        "Words that appear in similar contexts get similar vectors — distributional hypothesis.",
        'One vector per word form. "bank" in finance and "bank" in geography share one vector.',
    ),
    (
        "word2vec CBOW",
        "CBOW: predict centre from neighbours. Explicit context window (typically 5 tokens).",
        "Words that appear in similar contexts get similar vectors — distributional hypothesis.",
        'One vector per word form. "bank" in finance and "bank" in geography share one vector.',
    ),
    (
        "GloVe",
        "Factorises the global word–word co-occurrence matrix. Balances local and global statistics.",
        "Captures analogy structure more reliably (king − man + woman ≈ queen).",
        "Still one vector per word. No sentence-level context. Large matrix is expensive to build.",
    ),
    (
        "fastText",
        "Extends Word2Vec with subword n-gram representations. Each word vector is the sum of its character "
        "n-gram vectors.",
        "Can handle out-of-vocabulary words by composing character n-grams. Better for morphologically rich languages.",
        "Still static — the vector for a word is fixed regardless of sentence context.",
    ),
    (
        "distilled (model2vec)",
        "Not in the seeds' table: a transformer's own vector for each vocabulary token alone, reduced by PCA and "
        "weighted by SIF (model2vec's recipe).",
        "Keeps most of its teacher's word similarity with no forward pass; any word its tokenizer cuts gets a vector.",
        "One vector per token: word in context at chance by construction, like every static model.",
    ),
)
HOW_TO_MAKE = {
    "word2vec skip-gram": "contextlens static train --name w2v-sg",
    "word2vec CBOW": "contextlens static train --cbow --name w2v-cbow",
    "fastText": "contextlens static train --method fasttext --name ft-sg",
    "distilled (model2vec)": "contextlens static distill minilm --name m2v-minilm",
}
UNSEEN_WORD = "unfriendliness"  # a composed word: in no installed corpus


@dataclass(frozen=True)
class MethodRow:
    """One static method: the seeds' account of it and what its model here measures."""

    method: str
    how: str
    captures: str
    limitation: str
    model: str | None  # None: not made here yet (``make`` says how)
    made: str  # how the model came to be (corpus, tokens, training time), or how to make one
    vocabulary: int | None = None
    dim: int | None = None
    megabytes: float | None = None
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)  # dataset -> (Spearman, share scored)
    unseen: str | None = None  # an unseen word's composed vector and its neighbours


@dataclass(frozen=True)
class Word2vecRanking:
    """The seeds' ranking experiment re-ranked by a made word2vec model (against the lesson's
    contextual cosines), beside the lesson's own static model on the same pairs."""

    static_model: str
    reason: str
    pairs: int
    kendall_tau: float
    inversions: int
    baseline_model: str
    baseline_tau: float


@dataclass(frozen=True)
class StaticMethods:
    rows: list[MethodRow]
    ranking: Word2vecRanking | None

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {
            "rows": [asdict(r) for r in self.rows],
            "ranking": None if self.ranking is None else asdict(self.ranking),
        }


def _pick(method: str, made: Sequence[dict[str, Any]], teacher: str | None) -> dict[str, Any] | None:
    """The made model standing for ``method``: the largest vocabulary; a distilled one from ``teacher`` first."""
    if method == "distilled (model2vec)":
        chosen = [m for m in made if m.get("method") == "distilled"]
        chosen.sort(key=lambda m: (m.get("teacher") != teacher, m["name"]))
    else:
        arch = {"word2vec skip-gram": "skip-gram", "word2vec CBOW": "CBOW"}.get(method)
        kind = "fasttext" if method == "fastText" else "word2vec"
        chosen = [m for m in made if m.get("method") == kind and (arch is None or m.get("architecture") == arch)]
        chosen.sort(key=lambda m: (-int(m.get("vocabulary") or 0), m["name"]))
    return chosen[0] if chosen else None


def _made_line(record: dict[str, Any]) -> str:
    if record.get("method") == "distilled":
        return f"distilled here from {record.get('teacher')} in {float(record.get('seconds') or 0):.0f} s"
    return (
        f"trained here on {', '.join(record.get('corpus', []))} ({int(record.get('tokens') or 0):,} tokens) "
        f"in {float(record.get('train_seconds') or 0):.1f} s"
    )


def _scores(static: StaticModel, datasets: Sequence[wp.SimilarityDataset]) -> dict[str, tuple[float, float]]:
    out = {}
    for ds in datasets:
        rho, n = wp.score_pairs(ds, wp.static_vectors(ds.words, static))
        out[ds.name] = (rho, n / len(ds.pairs))
    return out


def _unseen(static: StaticModel) -> str | None:
    """An unseen word's composed vector and its neighbours (fastText: n-grams; distilled: word pieces)."""
    try:
        pieces = static.composition(UNSEEN_WORD)
        if pieces is None:
            return None
        near = static.most_similar(UNSEEN_WORD, topn=3)
    except OutOfVocabularyError:
        return None
    if isinstance(static, DistilledStaticModel):
        how = "word pieces " + " ".join(pieces)
    else:
        how = f"never seen: {len(pieces)} character n-grams"
    return f"{UNSEEN_WORD} ({how}) → " + ", ".join(f"{w} {s:.3f}" for w, s in near)


def static_methods(ranking: Ranking | None = None, teacher: str | None = None) -> StaticMethods:
    """Each method of the seeds' table (and the distilled one) with its model here, if made; the
    seeds' ranking with word2vec when ``ranking`` is given and a word2vec model was made."""
    made = made_models()
    datasets = [wp.load_dataset(name) for name in wp.DATASETS]
    rows = []
    for method, how, captures, limitation in SEEDS_TABLE:
        if method == "GloVe":
            record: dict[str, Any] | None = {"name": DEFAULT_STATIC}
            line = "shipped: GloVe 6B (6 billion tokens of Wikipedia and Gigaword), 50 dimensions"
        else:
            record = _pick(method, made, teacher)
            line = _made_line(record) if record else f"not made here yet: {HOW_TO_MAKE[method]}"
        if record is None:
            rows.append(MethodRow(method, how, captures, limitation, None, line))
            continue
        static = load_static(record["name"])
        ngrams = getattr(static.kv, "vectors_ngrams", None)
        nbytes = static.kv.vectors.nbytes + (ngrams.nbytes if ngrams is not None else 0)
        rows.append(
            MethodRow(
                method,
                how,
                captures,
                limitation,
                static.name,
                line,
                len(static),
                static.dim,
                round(nbytes / 1e6, 1),
                _scores(static, datasets),
                _unseen(static),
            )  # fmt: skip
        )
    return StaticMethods(rows, _word2vec_ranking(ranking) if ranking is not None else None)


def _word2vec_ranking(ranking: Ranking) -> Word2vecRanking | None:
    pairs = [r.pair for r in ranking.pairs]
    choice = seeds_static(pairs, DEFAULT_STATIC)
    if choice.name == DEFAULT_STATIC or choice.name == ranking.static_model:
        return None
    static = load_static(choice.name)
    kept = [r for r in ranking.pairs if r.pair in choice.pairs]
    w2v = [float(static.similarity(r.pair.a, r.pair.b)) for r in kept]
    contextual = [r.contextual_cosine for r in kept]
    tau, _, inversions = kendall_tau_b(w2v, contextual)
    base_tau, _, _ = kendall_tau_b([r.static_cosine for r in kept], contextual)
    return Word2vecRanking(choice.name, choice.reason, len(kept), tau, inversions, ranking.static_model, base_tau)
