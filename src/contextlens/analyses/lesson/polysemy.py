"""The polysemy explorer: one word in many sentences, sense by sense, layer by layer.

For each word the target's hidden states in all its sentences give a pairwise cosine matrix per
layer. Two numbers summarise it:

* **spread** = 1 - mean off-diagonal cosine: how far apart the word's occurrences lie at a layer
  (0 when every sentence gives the same vector, as a static vector does);
* **separation gap** = mean same-sense cosine - mean cross-sense cosine, when senses are labelled.
  One pair of sentences can mislead, so the gap comes with a permutation-test p-value: the sense
  labels are shuffled (fixed seed) and the p-value is the share of shuffles whose gap is at least
  the observed one, ``(1 + count) / (1 + permutations)``. When the labels have no more distinct
  arrangements than the shuffles asked for (3 + 3 sentences: 20), every arrangement is scored
  instead and the p-value is exact: its floor is then the share of arrangements that give the
  observed split itself (3 + 3: 2 of 20, so p >= 0.1, and p < 0.05 cannot be reached).

Beside each layer's mean pairwise cosine (and the same- and cross-sense means) stands the model's
random-word baseline at that layer (analyses/measures/word_baseline.py, the one compare uses):
its mean and spread, and where the cosine falls among random pairs of different words.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from contextlens.analyses.lesson.sense_gap import gaps, layer_gaps, same_and_cross, sense_codes
from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.jsonable import plain_json
from contextlens.core.occurrences import Occurrence
from contextlens.core.similarity import cosine_matrix
from contextlens.data.sense_sentences import SenseSentence, load_sense_sentences
from contextlens.errors import InputError

if TYPE_CHECKING:  # torch: imported once the input is read
    from contextlens.analyses.measures.layer_choice import LayerChoice
    from contextlens.analyses.measures.word_baseline import CosineBaseline
    from contextlens.core.contextual_models import ContextualModel


def spread(matrix: np.ndarray) -> float:
    """1 - mean off-diagonal cosine of a pairwise matrix."""
    n = matrix.shape[0]
    if n < 2:
        raise InputError("spread needs at least two sentences")
    iu = np.triu_indices(n, k=1)
    return float(1.0 - matrix[iu].mean())


def separation_gap(matrix: np.ndarray, labels: Sequence[str]) -> float:
    """Mean same-label cosine minus mean cross-label cosine (distinct pairs only)."""
    return float(layer_gaps(matrix[None], labels)[0])


def arrangements(labels: Sequence[str]) -> int:
    """How many distinct ways the labels can be laid on the sentences: n! / (n_1! n_2! ...)."""
    sizes = Counter(sense_codes(labels).tolist()).values()
    return math.factorial(len(labels)) // math.prod(math.factorial(k) for k in sizes)


def exact_floor(labels: Sequence[str]) -> float:
    """The smallest p an exact test can give: the share of arrangements that make the observed split
    (renaming senses of equal size gives the same split and the same gap)."""
    sizes = Counter(Counter(sense_codes(labels).tolist()).values()).values()
    return math.prod(math.factorial(k) for k in sizes) / arrangements(labels)


def smallest_p(labels: Sequence[str], permutations: int) -> tuple[float, bool]:
    """(the smallest p the test can give, whether the test is exact) for these labels."""
    if arrangements(labels) <= permutations:
        return exact_floor(labels), True
    return 1.0 / (permutations + 1), False


def _every_arrangement(codes: np.ndarray) -> Iterator[np.ndarray]:
    """Each distinct arrangement of the codes once (the sentences' positions given to each code in turn)."""
    values, counts = np.unique(codes, return_counts=True)

    def fill(out: np.ndarray, free: tuple[int, ...], k: int) -> Iterator[np.ndarray]:
        if k == len(values):
            yield out.copy()
            return
        for chosen in itertools.combinations(free, int(counts[k])):
            out[list(chosen)] = values[k]
            yield from fill(out, tuple(i for i in free if i not in chosen), k + 1)

    yield from fill(np.empty_like(codes), tuple(range(len(codes))), 0)


def permutation_test(
    matrices: np.ndarray, labels: Sequence[str], permutations: int = 1000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Observed gap per layer and its one-sided permutation p-value (labels shuffled, same shuffles
    for every layer). ``matrices`` is (layers, n, n). Exact (every arrangement scored, p = share at
    or above the observed gap) when there are no more arrangements than ``permutations``."""
    if permutations < 1:
        raise InputError(f"permutations must be at least 1, got {permutations}")
    codes = sense_codes(labels)
    if matrices.shape[1:] != (len(codes), len(codes)):
        raise InputError(f"{len(codes)} labels for matrices of shape {matrices.shape}")
    observed = gaps(matrices, codes[None])[:, 0]
    if arrangements(labels) <= permutations:
        every = np.stack(list(_every_arrangement(codes)))
        exceed = (gaps(matrices, every) >= observed[:, None] - 1e-12).sum(axis=1)
        return observed, exceed / len(every)  # the observed arrangement is among them
    rng = np.random.default_rng(seed)
    shuffled = np.stack([rng.permutation(codes) for _ in range(permutations)])
    null = gaps(matrices, shuffled)  # (layers, permutations)
    exceed = (null >= observed[:, None] - 1e-12).sum(axis=1)
    return observed, (1.0 + exceed) / (1.0 + permutations)


@dataclass
class WordExploration:
    """Everything the explorer measured for one word."""

    word: str
    occurrences: list[Occurrence]
    senses: list[str | None]
    target_tokens: list[list[str]]
    layers: list[int]
    layer: int  # the chosen layer (heatmap, PCA, ranking)
    matrices: np.ndarray = field(repr=False)  # (layers, n, n)
    spreads: list[float]
    gaps: list[float] | None  # per layer, when senses are labelled
    same_sense: list[float] | None
    cross_sense: list[float] | None
    p_values: list[float] | None
    pca: np.ndarray = field(repr=False)  # (n, 2) at the chosen layer
    pca_explained: list[float]
    baseline: CosineBaseline | None = field(default=None, repr=False)  # the model's random-word cosines
    pcas: np.ndarray | None = field(default=None, repr=False)  # (layers, n, 2): the PCA at every layer
    pcas_explained: list[list[float]] | None = None  # per layer: what the two components explain
    p_floor: float | None = None  # the smallest p its test can give (None: no test)
    p_exact: bool = False  # every arrangement of its labels scored (few sentences), not shuffles

    @property
    def mean_cosines(self) -> list[float]:
        """Mean pairwise cosine per layer (1 - spread)."""
        return [1.0 - s for s in self.spreads]

    def layer_baselines(self) -> list[dict[str, float] | None]:
        """Per layer, the random-word baseline beside the mean pairwise cosine (compare's helper),
        with the same- and cross-sense means' percentiles where senses are labelled."""
        if self.baseline is None:
            return [None] * len(self.layers)
        out = []
        for k, layer in enumerate(self.layers):
            row = self.baseline.beside(layer, self.mean_cosines[k])
            if self.same_sense is not None and self.cross_sense is not None:
                row["same_sense_percentile"] = self.baseline.percentile(layer, self.same_sense[k])
                row["cross_sense_percentile"] = self.baseline.percentile(layer, self.cross_sense[k])
            out.append(row)
        return out

    @property
    def chosen_baseline(self) -> dict[str, float] | None:
        """The baseline beside the mean pairwise cosine at the chosen layer."""
        return self.layer_baselines()[self.layers.index(self.layer)]

    def at_layer(self, layer: int) -> WordExploration:
        """The same word shown at another of its layers (a face's layer slider; no new forward)."""
        k = self.layers.index(layer)
        if self.pcas is None or self.pcas_explained is None:
            raise InputError(f"the PCA of {self.word!r} was kept at layer {self.layer} only")
        return replace(self, layer=layer, pca=self.pcas[k], pca_explained=self.pcas_explained[k])

    @property
    def labelled(self) -> bool:
        return self.gaps is not None

    @property
    def no_gap_reason(self) -> str | None:
        """Why there is no separation gap (None when there is one): said as it is, since
        sentences labelled one per sense are labelled, yet give no same-sense pair."""
        if self.gaps is not None:
            return None
        if any(s is None for s in self.senses):
            return "not every sentence has a sense label"
        if len(set(self.senses)) == len(self.senses):
            return "one sentence per sense: no same-sense pair to compare (give two or more sentences of a sense)"
        return "one sense only: no cross-sense pair to compare"

    @property
    def matrix(self) -> np.ndarray:
        return self.matrices[self.layers.index(self.layer)]

    @property
    def spread(self) -> float:
        return self.spreads[self.layers.index(self.layer)]

    @property
    def distinct_senses(self) -> list[str]:
        """The sense labels given (sorted); empty when the sentences are unlabelled."""
        return sorted({s for s in self.senses if s is not None})

    @property
    def same_sense_cosine(self) -> float | None:
        """Mean same-sense cosine at the chosen layer."""
        return None if self.same_sense is None else self.same_sense[self.layers.index(self.layer)]

    @property
    def cross_sense_cosine(self) -> float | None:
        """Mean cross-sense cosine at the chosen layer."""
        return None if self.cross_sense is None else self.cross_sense[self.layers.index(self.layer)]

    @property
    def gap(self) -> float | None:
        return None if self.gaps is None else self.gaps[self.layers.index(self.layer)]

    @property
    def p_value(self) -> float | None:
        return None if self.p_values is None else self.p_values[self.layers.index(self.layer)]

    @plain_json
    def to_dict(self) -> dict[str, object]:
        return {
            "word": self.word,
            "layer": self.layer,
            "spread": self.spread,
            "mean_cosine": 1.0 - self.spread,
            "baseline": self.chosen_baseline,
            "gap": self.gap,
            "p_value": self.p_value,
            "smallest_possible_p": self.p_floor,
            "exact_test": self.p_exact,
            "no_gap_reason": self.no_gap_reason,
            "sentences": [
                {**o.to_dict(), "sense": s, "tokens": t}
                for o, s, t in zip(self.occurrences, self.senses, self.target_tokens, strict=True)
            ],
            "matrix": self.matrix.tolist(),
            "layers": [
                {
                    "layer": layer,
                    "spread": self.spreads[k],
                    "same_sense": None if self.same_sense is None else self.same_sense[k],
                    "cross_sense": None if self.cross_sense is None else self.cross_sense[k],
                    "gap": None if self.gaps is None else self.gaps[k],
                    "p_value": None if self.p_values is None else self.p_values[k],
                    "matrix": self.matrices[k].tolist(),
                    "baseline": base,
                }
                for k, (layer, base) in enumerate(zip(self.layers, self.layer_baselines(), strict=True))
            ],
            "pca": {"coordinates": self.pca.tolist(), "explained_variance_ratio": self.pca_explained},
        }


@dataclass
class Exploration:
    """The explorer's result: words ranked by spread at the chosen layer (largest first)."""

    model: str
    layer: int
    permutations: int
    seed: int
    source: str
    words: list[WordExploration]
    backend: Backend = REFERENCE  # the model's precision and runtime (core/backend.py)
    baseline: CosineBaseline | None = field(default=None, repr=False)  # random-word cosines
    baseline_missing: str | None = None  # why there is no baseline (WordNet not installed)
    layer_choice: LayerChoice | None = field(default=None, repr=False)  # set when the layer was "auto"

    @property
    def layer_label(self) -> str:
        """``layer 6`` or ``layer 6 (auto: best sense separation on dev lemmas (eval wic))``."""
        return self.layer_choice.label() if self.layer_choice is not None else f"layer {self.layer}"

    def at_layer(self, layer: int) -> Exploration:
        """The same words shown (and ranked by spread) at another layer: a face's layer slider."""
        words = sorted((w.at_layer(layer) for w in self.words), key=lambda w: -w.spread)
        # "auto" named the layer it chose: at another layer the label says that layer alone
        choice = self.layer_choice if self.layer_choice is not None and self.layer_choice.layer == layer else None
        return replace(self, layer=layer, words=words, layer_choice=choice)

    @property
    def p_floor(self) -> float:
        """The smallest p-value any word's test can give: 1 / (permutations + 1) for shuffles (0.005
        with the web's 200, 0.001 with the CLI's 1,000); an exact test's own floor where few
        sentences allow one (3 + 3 sentences: 0.1). Said beside every p."""
        floors = [w.p_floor for w in self.words if w.p_floor is not None]
        return min(floors, default=1.0 / (self.permutations + 1))

    def p_floor_note(self) -> str:
        """The test behind the p-values, in the words every face prints after "p: ": the shuffles
        and their floor, and each word tested exactly with its own floor (and where p < 0.05 is out
        of reach)."""
        parts = []
        if any(w.p_floor is not None and not w.p_exact for w in self.words) or not any(w.p_exact for w in self.words):
            parts.append(f"one-sided permutation test, {self.permutations} shuffles of the sense labels, seed "
                         f"{self.seed} (the smallest possible p is 1/{self.permutations + 1} = "
                         f"{1 / (self.permutations + 1):.4f})")  # fmt: skip
        for w in self.words:
            if w.p_exact and w.p_floor is not None:
                reach = "; too few sentences to reach p < 0.05" if w.p_floor >= 0.05 else ""
                parts.append(f"{w.word}: exact one-sided permutation test, every one of the {arrangements(w.senses)} "
                             f"arrangements of its sense labels scored (the smallest possible p is "
                             f"{w.p_floor:.4f}{reach})")  # fmt: skip
        return "; ".join(parts)

    @property
    def colour_floor(self) -> float:
        """The lowest cosine between two different sentences of any word, floored to 0.1: the
        heatmaps' one colour scale, so that spreads compare by eye across words (a scale per word
        made spring's 0.49 and bank's 0.24 look alike)."""
        lows = [float(w.matrix[~np.eye(len(w.matrix), dtype=bool)].min()) for w in self.words]
        return float(np.floor(min(lows) * 10) / 10)

    @plain_json
    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            **self.backend.to_dict(),
            "layer": self.layer,
            "layer_choice": None if self.layer_choice is None else self.layer_choice.to_dict(),
            "source": self.source,
            "spread_definition": "1 - mean off-diagonal cosine",
            "gap_definition": "mean same-sense cosine - mean cross-sense cosine",
            "permutation_test": {
                "permutations": self.permutations,
                "seed": self.seed,
                "alternative": "greater",
                "smallest_possible_p": self.p_floor,
            },
            "baseline": None if self.baseline is None else self.baseline.to_dict(),
            "baseline_missing": self.baseline_missing,
            "baseline_definition": "random: mean cosine of random pairs of different words in unrelated sentences "
            "at that layer; percentile: the share of those pairs at or below the word's mean pairwise cosine; "
            "adjusted: that cosine minus the random mean",
            "ranking": [w.word for w in self.words],
            "words": [w.to_dict() for w in self.words],
        }


def explore(
    words: Sequence[str],
    model: ContextualModel | str,
    sentences: Sequence[SenseSentence] | None = None,
    layer: int | str = -1,
    permutations: int = 1000,
    seed: int = 0,
    source: str | None = None,
    show_progress_bar: bool = False,
    baseline: bool = True,
) -> Exploration:
    """Explore each word over its sentences (built-in set when ``sentences`` is None).

    An empty ``words`` means every word in the sentences. Raises InputError for a word with no
    (or only one) sentence and for a layer out of range. ``layer="auto"``: the layer `eval wic`
    chooses on dev lemmas for this model (best sense separation; analyses/measures/layer_choice.py).
    ``baseline=True`` sets the model's
    random-word cosine baseline beside each layer (as compare does; without WordNet the result
    says why it has none).
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"`seed` must be a whole number of at least 0, got {seed!r}")  # numpy refuses a negative one
    from contextlens.analyses.measures.layer_choice import resolve_layer  # torch, once the input is read
    from contextlens.analyses.measures.word_baseline import baseline_or_reason
    from contextlens.core.contextual_models import as_contextual

    model = as_contextual(model)
    own_given = sentences is not None
    if sentences is None:
        sentences = load_sense_sentences()
        source = source or "built-in polysemy set"
    chosen, choice = resolve_layer(model, layer, "sense")
    by_word: dict[str, list[SenseSentence]] = {}
    for s in sentences:
        by_word.setdefault(s.word, []).append(s)
    wanted = _wanted_words(words, by_word, source, own_given)
    everything = [s for w in wanted for s in by_word[w]]
    encodings = model.encode_occurrences(
        [s.occurrence for s in everything], layers=None, show_progress_bar=show_progress_bar
    )
    results, start = [], 0
    for w in wanted:
        group = by_word[w]
        encs = encodings[start : start + len(group)]
        start += len(group)
        results.append(_explore_word(w, group, encs, chosen, permutations, seed))
    results.sort(key=lambda r: -r.spread)
    base, missing = baseline_or_reason(model) if baseline else (None, None)
    for r in results:
        r.baseline = base
    return Exploration(
        model.name, chosen, permutations, seed, source or "given sentences", results,
        backend=model.backend, baseline=base, baseline_missing=missing, layer_choice=choice,
    )  # fmt: skip


def _wanted_words(
    words: Sequence[str], by_word: dict[str, list[SenseSentence]], source: str | None, own_given: bool
) -> list[str]:
    """The words to explore (every word of the sentences when none is named), each with two sentences or more."""
    wanted = [w.lower().strip() for w in words] if words else list(by_word)
    for w in wanted:
        if not w:
            raise InputError("a word is empty; name the words to explore, e.g. bank bat")
        if w not in by_word:
            raise InputError(
                f"no sentences for {w!r} in {source or 'the sentences'}; words there: {', '.join(sorted(by_word))}; "
                + (
                    "name one of those in `words`, or leave `words` empty to explore them all"
                    if own_given
                    else "give your own in `sentences`"
                )
            )
        if len(by_word[w]) < 2:
            raise InputError(f"{w!r} has only one sentence in {source or 'the sentences'}; give at least two")
    return wanted


def _explore_word(word, group, encs, chosen, permutations, seed) -> WordExploration:
    layers = list(encs[0].layers)
    stack = np.stack([e.hidden for e in encs], axis=1)  # (layers, n, d): the PCA's input
    # provenance-checked: the word's hidden states of one model at one layer
    matrices = np.stack([cosine_matrix([e.hidden_state(layer) for e in encs]) for layer in layers])
    senses = [s.sense for s in group]
    gaps = same = cross = pvals = floor = None
    exact = False
    if all(s is not None for s in senses) and _has_both_kinds_of_pairs(senses):
        floor, exact = smallest_p(senses, permutations)
        observed, p = permutation_test(matrices, senses, permutations, seed)
        gaps, pvals = observed.tolist(), p.tolist()
        same, cross = (means.tolist() for means in same_and_cross(matrices, senses))
    return WordExploration(
        word=word,
        occurrences=[s.occurrence for s in group],
        senses=senses,
        target_tokens=[e.target_tokens for e in encs],
        layers=layers,
        layer=chosen,
        matrices=matrices,
        spreads=[spread(m) for m in matrices],
        gaps=gaps,
        same_sense=same,
        cross_sense=cross,
        p_values=pvals,
        pca=_pca(stack[layers.index(chosen)]),
        pca_explained=_pca_explained(stack[layers.index(chosen)]),
        pcas=np.stack([_pca(x) for x in stack]),
        pcas_explained=[_pca_explained(x) for x in stack],
        p_floor=floor,
        p_exact=exact,
    )


def _has_both_kinds_of_pairs(labels: Sequence[str | None]) -> bool:
    codes = sense_codes(labels).tolist()
    return len(set(codes)) >= 2 and len(set(codes)) < len(codes)


def _pca(x: np.ndarray) -> np.ndarray:
    """2-D projection on the top two principal components (zeros past the rank)."""
    centred = x.astype(np.float64) - x.mean(axis=0)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    coords = np.zeros((x.shape[0], 2))
    k = min(2, len(s))
    coords[:, :k] = u[:, :k] * s[:k]
    return coords


def _pca_explained(x: np.ndarray) -> list[float]:
    centred = x.astype(np.float64) - x.mean(axis=0)
    s = np.linalg.svd(centred, compute_uv=False)
    var = s**2
    total = var.sum()
    ratios = (var / total).tolist() if total > 0 else [0.0] * len(var)
    return (ratios + [0.0, 0.0])[:2]
