"""Static versus contextual similarity ranking of word pairs (the lesson's mini-project 2).

Each pair is scored twice: by the cosine of its two static vectors, and by the cosine of the two
words' hidden states when each word stands in the same neutral template sentence. Ranking the
pairs under both scores and counting the discordant pairs (inversions) shows where the two views
of similarity disagree; Kendall's tau-b summarises the agreement in one number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.jsonable import plain_json
from contextlens.core.occurrences import LONE_WORD_TEMPLATE, in_template
from contextlens.core.similarity import cosine_values
from contextlens.core.static_models import StaticModel, as_static
from contextlens.data import PAIRS_FILE, builtin_path, read_tsv
from contextlens.errors import ContextlensError, DataFileError, InputError

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel

PAIR_COLUMNS = "word_a<TAB>word_b"


@dataclass(frozen=True)
class WordPair:
    a: str
    b: str
    source: str = ""


def load_pairs(path: Path | str | None = None) -> list[WordPair]:
    """Read ``word_a<TAB>word_b`` lines; ``None`` reads the built-in 20 pairs."""
    path = builtin_path(PAIRS_FILE) if path is None else Path(path)
    pairs = []
    for rec in read_tsv(path, (2,), PAIR_COLUMNS):
        for w in rec.fields:
            if len(w.split()) != 1:
                raise DataFileError(f"{rec.where()}: {w!r} is not a single word; write {PAIR_COLUMNS}")
        pairs.append(WordPair(rec.fields[0], rec.fields[1], rec.where()))
    if len(pairs) < 2:
        raise DataFileError(f"{path} holds {len(pairs)} pair(s); ranking needs at least two lines {PAIR_COLUMNS}")
    return pairs


def pairs_from_lines(lines: Sequence[str], field: str = "pairs") -> list[WordPair]:
    """Pairs typed one per line, as a page takes them: two words apart by a space, tab or comma.
    Errors name ``field`` and the line."""
    pairs = []
    for n, line in enumerate(lines, 1):
        words = [w for w in line.replace(",", " ").split() if w]
        if len(words) != 2:
            raise InputError(
                f"`{field}` line {n}: {line.strip()[:80]!r} is not two words; write one pair per line: cup mug"
            )
        pairs.append(WordPair(words[0], words[1], f"{field} line {n}"))
    return pairs


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> tuple[float, int, int]:
    """Kendall's tau-b of two rankings, with the numbers of concordant and discordant pairs."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = len(x)
    if n < 2 or len(y) != n:
        raise InputError("Kendall tau needs two rankings of the same length, at least 2")
    i, j = np.triu_indices(n, k=1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    concordant = int(np.sum(dx * dy > 0))
    discordant = int(np.sum(dx * dy < 0))
    pairs = len(i)
    ties_x, ties_y = int(np.sum(dx == 0)), int(np.sum(dy == 0))
    denom = np.sqrt(float(pairs - ties_x) * float(pairs - ties_y))
    tau = float("nan") if denom == 0 else (concordant - discordant) / denom
    return tau, concordant, discordant


@dataclass
class RankedPair:
    pair: WordPair
    static_cosine: float
    contextual_cosine: float
    static_rank: float  # 1 = most similar
    contextual_rank: float

    @property
    def move(self) -> float:
        """Positions gained under the contextual ranking (positive = ranked more similar)."""
        return self.static_rank - self.contextual_rank

    @plain_json
    def to_dict(self) -> dict[str, object]:
        return {
            "a": self.pair.a,
            "b": self.pair.b,
            "static_cosine": self.static_cosine,
            "contextual_cosine": self.contextual_cosine,
            "static_rank": self.static_rank,
            "contextual_rank": self.contextual_rank,
            "move": self.move,
        }


@dataclass
class Ranking:
    """Pairs in their original order with both scores and ranks, and the agreement between them."""

    model: str
    static_model: str
    layer: int
    template: str
    source: str
    pairs: list[RankedPair]
    inversions: int
    concordant: int
    kendall_tau: float
    top_moves: list[RankedPair] = field(default_factory=list)
    backend: Backend = REFERENCE  # the model's precision and runtime (core/backend.py)

    @property
    def pairs_compared(self) -> int:
        """Pairs of pairs that Kendall's tau compares: n (n - 1) / 2."""
        return len(self.pairs) * (len(self.pairs) - 1) // 2

    @plain_json
    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            **self.backend.to_dict(),
            "static_model": self.static_model,
            "layer": self.layer,
            "template": self.template,
            "source": self.source,
            "n_pairs": len(self.pairs),
            "inversions": self.inversions,
            "concordant": self.concordant,
            "pairs_compared": self.pairs_compared,
            "kendall_tau_b": self.kendall_tau,
            "pairs": [p.to_dict() for p in self.pairs],
            "largest_moves": [p.to_dict() for p in self.top_moves],
        }


def rank_pairs(
    pairs: Sequence[WordPair],
    model: ContextualModel | str,
    static: StaticModel | str,
    template: str = LONE_WORD_TEMPLATE,
    layer: int = -1,
    top: int = 5,
    source: str = "built-in pairs",
) -> Ranking:
    """Rank the pairs by static and by contextual cosine and count where the rankings disagree."""
    from scipy.stats import rankdata

    from contextlens.core.contextual_models import as_contextual  # torch: the pairs are checked first

    model, static = as_contextual(model), as_static(static)
    if len(pairs) < 2:
        raise InputError(f"ranking needs at least two pairs, got {len(pairs)}")
    (chosen,) = model.check_layers([layer])
    static_scores = static_pair_cosines(pairs, static)
    words = sorted({w for p in pairs for w in (p.a, p.b)})
    encs = model.encode_occurrences([in_template(w, template) for w in words], layers=[chosen])
    hidden = {w: e.hidden[0] for w, e in zip(words, encs, strict=True)}
    contextual_scores = [cosine_values(hidden[p.a], hidden[p.b]) for p in pairs]
    s_rank = rankdata(-np.asarray(static_scores), method="average")
    c_rank = rankdata(-np.asarray(contextual_scores), method="average")
    tau, concordant, discordant = kendall_tau_b(s_rank, c_rank)
    ranked = [
        RankedPair(p, float(s), float(c), float(rs), float(rc))
        for p, s, c, rs, rc in zip(pairs, static_scores, contextual_scores, s_rank, c_rank, strict=True)
    ]
    moves = sorted(ranked, key=lambda r: (-abs(r.move), r.static_rank))[:top]
    return Ranking(
        model=model.name,
        backend=model.backend,
        static_model=static.name,
        layer=chosen,
        template=template,
        source=source,
        pairs=ranked,
        inversions=discordant,
        concordant=concordant,
        kendall_tau=tau,
        top_moves=moves,
    )


@dataclass(frozen=True)
class StaticChoice:
    """The static model the seeds' ranking experiment uses, why, and the pairs it can rank."""

    name: str
    reason: str
    pairs: list[WordPair]
    left_out: list[WordPair] = field(default_factory=list)  # pairs with a word it never saw


SEEDS_COVERAGE = 0.9  # a made word2vec model is used when it knows this share of the pairs' words


def seeds_static(pairs: Sequence[WordPair], default: str = "glove-50d") -> StaticChoice:
    """The seeds' experiment ranks "by word2vec cosine": a word2vec model made here (``static
    train``; skip-gram first, then the largest vocabulary) that knows at least 90% of the pairs'
    words, its pairs with an unseen word left out and named; else ``default`` (GloVe)."""
    from contextlens.core.static_store import made_models

    words = sorted({w for p in pairs for w in (p.a, p.b)})
    made = [m for m in made_models() if m.get("method") == "word2vec"]
    made.sort(key=lambda m: (m.get("architecture") != "skip-gram", -int(m.get("vocabulary") or 0), m["name"]))
    for m in made:
        static = as_static(m["name"])
        known = {w for w in words if w in static}
        if len(known) < SEEDS_COVERAGE * len(words):
            continue
        kept = [p for p in pairs if p.a in known and p.b in known]
        if len(kept) < 2:
            continue
        left = [p for p in pairs if p not in kept]
        unseen = sorted(set(words) - known)
        why = (
            f"{m['name']}, word2vec {m.get('architecture')} made here on {', '.join(m.get('corpus', []))} "
            f"({int(m.get('tokens') or 0):,} tokens): the seeds' experiment ranks by word2vec cosine"
        )
        if left:
            why += (
                f"; {', '.join(unseen)} never occurred in its corpus, so {len(left)} of {len(pairs)} pairs are left out"
                f" ({', '.join(f'{p.a}-{p.b}' for p in left)})"
            )
        return StaticChoice(m["name"], why, kept, left)
    why = (
        f"{default} (GloVe): no word2vec model made here knows {SEEDS_COVERAGE:.0%} of the pairs' words; "
        "`contextlens static train --name w2v-sg` makes one, and then `rank` uses it"
    )
    return StaticChoice(default, why, list(pairs))


def static_pair_cosines(pairs: Sequence[WordPair], static: StaticModel) -> list[float]:
    """Each pair's static cosine; a word the static model lacks is named with its pair. Cheap, so
    the command line runs it before any contextual weights load."""
    scores = []
    for p in pairs:
        try:
            scores.append(cosine_values(static.vector(p.a).values, static.vector(p.b).values))
        except ContextlensError as exc:
            where = f" ({p.source})" if p.source else ""
            raise type(exc)(f"pair {p.a}-{p.b}{where}: {exc}") from exc
    return scores
