"""The random-word cosine baseline: what "unrelated" looks like in this model, at this layer.

Why: a contextual model's hidden states are anisotropic (Ethayarajh 2019): two *unrelated* words
in unrelated sentences often have cosine 0.4-0.9 in upper layers, and the level differs by layer
and by model. A cosine of 0.61 means nothing until it is set beside that level. Here, for one
model (precision, runtime) and pooling, the cosines of every pair of *different* words drawn
one per sentence from a fixed, seeded sample of WordNet usage examples (distinct sentences),
per layer, summarised as mean, spread and quantiles; computed once and cached on disk
(core/disk_cache.py) like the benchmark arrays. :meth:`CosineBaseline.percentile` places a
cosine in that distribution; ``cosine - mean`` is Ethayarajh's anisotropy-adjusted value.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field

import numpy as np

from contextlens.analyses.measures.span_encoding import MadeOn, made_on_arrays, read_made_on
from contextlens.core import wordnet as wn
from contextlens.core.backend import Backend
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.disk_cache import cache_key, cache_path, cached_arrays
from contextlens.core.extraction import Pooling
from contextlens.core.occurrences import ALPHA_WORD_RE, Occurrence
from contextlens.core.similarity import normalize_rows
from contextlens.core.wordnet import WordNetNotInstalledError

BASELINE_VERSION = 1
N_SENTENCES = 200  # one random word from each: 200 words, about 19,800 pairs of different words
SEED = 0
QUANTILES = np.linspace(0.0, 1.0, 201)  # every half percent: percentiles to 0.5 points
SOURCE = "WordNet 3.0 usage examples"


@dataclass(frozen=True)
class LayerBaseline:
    """One layer's random-word cosines: mean, standard deviation and the 5th/50th/95th percentiles."""

    layer: int
    mean: float
    std: float
    p5: float
    p50: float
    p95: float

    def to_dict(self) -> dict[str, float | int]:
        return {
            "layer": self.layer, "mean": self.mean, "std": self.std, "p5": self.p5, "p50": self.p50, "p95": self.p95,
        }  # fmt: skip


@dataclass(frozen=True)
class CosineBaseline:
    """Per layer (0..L, hidden states) and for the input rows, the random-word cosine distribution."""

    model: str
    backend: Backend
    pooling: str
    n_words: int
    n_pairs: int
    quantiles: np.ndarray = field(repr=False)  # (L + 1, len(QUANTILES)) hidden-state cosines
    means: np.ndarray = field(repr=False)  # (L + 1,)
    stds: np.ndarray = field(repr=False)  # (L + 1,)
    input_row: np.ndarray = field(repr=False)  # (len(QUANTILES) + 2,): quantiles, mean, std
    source: str = SOURCE
    seed: int = SEED
    made_on: MadeOn | None = None  # which backend computed it (fp32 on torch and ONNX Runtime share it)

    def layer(self, layer: int) -> LayerBaseline:
        q = self.quantiles[layer]
        return LayerBaseline(layer, float(self.means[layer]), float(self.stds[layer]), *_p5_50_95(q))

    def input_row_baseline(self) -> LayerBaseline:
        """The same distribution over the words' input-embedding rows (layer -1 here: before any layer)."""
        q, mean, std = self.input_row[:-2], self.input_row[-2], self.input_row[-1]
        return LayerBaseline(-1, float(mean), float(std), *_p5_50_95(q))

    def percentile(self, layer: int | None, cosine: float) -> float:
        """The share (0-100) of random different-word pairs whose cosine is at most ``cosine``
        (``layer=None``: the input rows)."""
        q = self.input_row[:-2] if layer is None else self.quantiles[layer]
        return float(np.interp(cosine, q, QUANTILES * 100.0, left=0.0, right=100.0))

    def beside(self, layer: int | None, cosine: float) -> dict[str, float]:
        """What a reader needs beside one cosine at ``layer`` (None: the input rows): the random-word
        mean, std and 5th/50th/95th percentiles, the cosine's percentile among them and cosine - mean
        (Ethayarajh's adjusted value). The one helper compare, explore, probe and same-sense use."""
        b = self.input_row_baseline() if layer is None else self.layer(layer)
        return {
            "mean": b.mean, "std": b.std, "p5": b.p5, "p50": b.p50, "p95": b.p95,
            "percentile": self.percentile(layer, cosine), "adjusted": cosine - b.mean,
        }  # fmt: skip

    def describe(self) -> str:
        return (
            f"random-word baseline: {self.n_pairs:,} pairs of different words, one word from each of "
            f"{self.n_words} {self.source} (seed {self.seed})"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            **self.backend.to_dict(),
            "pooling": self.pooling,
            "source": self.source,
            "seed": self.seed,
            "words": self.n_words,
            "pairs": self.n_pairs,
            "input_row": self.input_row_baseline().to_dict(),
            "layers": [self.layer(i).to_dict() for i in range(len(self.means))],
        }


def _p5_50_95(q: np.ndarray) -> tuple[float, float, float]:
    return tuple(float(np.interp(p, QUANTILES, q)) for p in (0.05, 0.5, 0.95))  # type: ignore[return-value]


def baseline_sample(n_sentences: int = N_SENTENCES, seed: int = SEED) -> list[Occurrence]:
    """One random word (letters only) from each of ``n_sentences`` seeded, distinct WordNet examples."""
    texts = sorted({e.text for e in wn.usage_examples()})
    rng = random.Random(seed)
    out: list[Occurrence] = []
    for text in rng.sample(texts, len(texts)):
        words = list(ALPHA_WORD_RE.finditer(text))
        if len(words) < 3:
            continue
        m = rng.choice(words)
        out.append(Occurrence(text, m.start(), m.end()))
        if len(out) == n_sentences:
            break
    return out


def cached_sample(n_sentences: int = N_SENTENCES, seed: int = SEED) -> list[Occurrence]:
    """:func:`baseline_sample`, kept on disk: drawing it reads all of WordNet's usage examples,
    which costs a lean ``compare`` more than its forward pass (the list is fixed per examples
    version, so the sample is too)."""

    def draw() -> dict[str, np.ndarray]:
        sample = baseline_sample(n_sentences, seed)
        return {
            "texts": np.array([o.text for o in sample]),
            "spans": np.array([(o.start, o.end) for o in sample], dtype=np.int64).reshape(-1, 2),
        }

    key = cache_key("baseline-sample", wn.EXAMPLES_VERSION, n_sentences, seed)
    arrays = cached_arrays("word-baseline-sample", key, draw)
    return [Occurrence(str(t), int(a), int(b)) for t, (a, b) in zip(arrays["texts"], arrays["spans"], strict=True)]


def pair_cosines(vectors: np.ndarray, words: list[str]) -> np.ndarray:
    """Cosines of every pair of rows whose words differ (each row is from its own sentence)."""
    u = normalize_rows(np.asarray(vectors, dtype=np.float64))
    sims = u @ u.T
    iu = np.triu_indices(len(words), k=1)
    lower = np.array([w.lower() for w in words])
    keep = lower[iu[0]] != lower[iu[1]]
    return sims[iu][keep]


def _key(model: ContextualModel, pooling: str, occurrences: list[Occurrence], seed: int) -> str:
    return cache_key(
        "word-baseline", BASELINE_VERSION, model.name, model.shared_identity, pooling, seed,
        [(o.text, o.start, o.end) for o in occurrences], QUANTILES.tolist(),
    )  # fmt: skip


def baseline_cached(
    model: ContextualModel, pooling: Pooling = "mean", *, n_sentences: int = N_SENTENCES, seed: int = SEED
) -> bool:
    """Whether :func:`random_word_baseline` for ``model`` reads its disk cache (no forward pass):
    what `contextlens prepare` reports and its tests check."""
    occurrences = cached_sample(n_sentences, seed)
    return cache_path("word-baseline", _key(model, pooling, occurrences, seed)).exists()


@functools.lru_cache(maxsize=16)
def _cached(model: ContextualModel, pooling: str, n_sentences: int, seed: int) -> CosineBaseline:
    occurrences = cached_sample(n_sentences, seed)
    key = _key(model, pooling, occurrences, seed)

    def compute() -> dict[str, np.ndarray]:
        encodings = model.encode_occurrences(occurrences, pooling=pooling)
        words = [o.word for o in occurrences]
        hidden = np.stack([e.hidden for e in encodings], axis=1)  # (layers, n, d)
        per_layer = [pair_cosines(h, words) for h in hidden]
        rows = pair_cosines(np.stack([e.input_row_values for e in encodings]), words)
        return {
            "quantiles": np.stack([np.quantile(c, QUANTILES) for c in per_layer]),
            "means": np.array([c.mean() for c in per_layer]),
            "stds": np.array([c.std() for c in per_layer]),
            "input_row": np.concatenate([np.quantile(rows, QUANTILES), [rows.mean(), rows.std()]]),
            "n_pairs": np.array(len(rows)),
            **made_on_arrays(model),
        }

    arrays = cached_arrays("word-baseline", key, compute)
    return CosineBaseline(
        model=model.name,
        backend=model.backend,
        pooling=pooling,
        n_words=len(occurrences),
        n_pairs=int(arrays["n_pairs"]),
        quantiles=arrays["quantiles"],
        means=arrays["means"],
        stds=arrays["stds"],
        input_row=arrays["input_row"],
        seed=seed,
        made_on=read_made_on(arrays, model),
    )


def random_word_baseline(
    model: ContextualModel, pooling: Pooling = "mean", *, n_sentences: int = N_SENTENCES, seed: int = SEED
) -> CosineBaseline:
    """The model's random-word cosine distribution per layer (cached on disk and in memory).

    Raises :class:`~contextlens.core.wordnet.WordNetNotInstalledError` when WordNet is missing.
    """
    model = as_contextual(model)  # a name is loaded; anything else is refused in one line
    wn.check_installed()
    return _cached(model, pooling, n_sentences, seed)


def baseline_or_reason(model: ContextualModel, pooling: Pooling = "mean") -> tuple[CosineBaseline | None, str | None]:
    """The baseline, or None and why there is none (WordNet not installed): a result then says so
    instead of failing, since its cosines stand without it."""
    try:
        return random_word_baseline(model, pooling), None
    except WordNetNotInstalledError as exc:
        return None, str(exc)
