"""Sense induction on an extraction folder: cluster one word's occurrences at one layer.

Criterion for k: k-means (cosine geometry: unit vectors) for k = 2..8, keep the k with the
highest silhouette (cosine); when no k reaches a silhouette of ``MIN_SILHOUETTE`` the word is
one sense (k = 1: the occurrences do not form separated groups). ``--k N`` forces N.

In a folder extracted with inflected forms (``--forms``), each form's own direction is removed
before clustering (the form's mean vector subtracted, the word's mean added back): "keys" and
"key", or "freed" and "free", sit apart in every layer, and without this the clusters followed the
forms (one "key" cluster held 314 of 319 "keys" and no "key"). Each cluster lists its forms.

Each cluster is labelled by its most distinctive context words (smoothed log-odds of a word in
the cluster's sentences vs the other clusters', stop words and the target left out) and by a
WordNet sense of one part of speech (``pos``), chosen by its own occurrences' votes with a margin
(:mod:`.sense_labels`: below the margin it is unlabelled, with its two closest candidates; two
clusters with one label give a warning). A sense's evidence is the word in its gloss template and
in each of its usage examples, from the same model at the same layer as the occurrences. The
sense's mean vector (``sense_vectors``), which chooses the part of speech, is:

* ``gloss``: the word inside ``"<word>: <definition>"`` (LMMS style, the WSD benchmark's template);
* ``examples`` (default): the mean of the word's vectors inside the sense's WordNet usage examples
  (the gloss vector for a sense with no example holding the word);
* ``both``: the mean of the gloss vector and the example vectors.

(Measured before the vote, with a cluster's centroid against these mean vectors, on 42
hand-labelled sentences: ``examples`` 18 of 21 sense groups right, ``gloss`` 13, ``both`` 15.)

``pos="auto"`` keeps the part of speech whose senses are nearest the occurrences on average
(:data:`POS_RULE`). Without a part of speech, "bank" in Wikipedia's noun uses was labelled with
verb glosses ("bank.v.04: act as the banker in a game"): the verb glosses of a word sit as
close to its noun uses as the noun glosses do.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from contextlens.analyses.corpus.chunks import layer_column
from contextlens.analyses.corpus.folder import read_rows
from contextlens.analyses.corpus.folder_check import checked_folder
from contextlens.analyses.corpus.label_checks import GLOSS_SENTENCES, LABEL_CHECKS, gloss_checked, noun_uses
from contextlens.analyses.corpus.manifest import OLD_FORMATS, Manifest, pick_layer
from contextlens.analyses.corpus.sense_labels import (
    DEFAULT_MARGIN,
    LABEL_RULE,
    ClusterLabel,
    SenseEvidence,
    label_cluster,
    repeated_labels,
)
from contextlens.analyses.representations.clustering import CRITERION, cluster_unit_vectors
from contextlens.core.arguments import one_word, path_argument
from contextlens.core.occurrences import ALPHA_WORD_RE
from contextlens.core.similarity import normalize_rows
from contextlens.errors import ContextlensError, InputError, TargetNotFoundError

POS_NAMES = {"n": "noun", "v": "verb", "a": "adjective", "r": "adverb"}
SENSE_VECTORS = ("gloss", "examples", "both")
# What a cluster's label says when it has no distinctive word (``_distinctive`` answers none exactly
# then): every context word of its sentences is left out as the target, a stop word, a word of one
# or two letters, or part of a proper name.
NO_DISTINCTIVE_WORDS = (
    "none stand out: every other word of its sentences is a stop word, shorter than 3 letters or part of a name"
)
MIN_OCCURRENCES = 3  # fewer occurrences than this: no induction (no two clusters and a silhouette)
POS_RULE = (
    "auto: per cluster, the part of speech whose senses are nearest the cluster's occurrences on average "
    "(mean over occurrences of the cosine to the nearest sense of that part of speech); pos and pos_scores: "
    "the same rule over every occurrence"
)


@dataclass(frozen=True)
class Sense:
    """One WordNet sense of the word as a unit vector (model and layer of the occurrences)."""

    synset: str
    pos: str  # n, v, a (satellites folded in), r
    definition: str
    vector: np.ndarray
    examples: int  # usage examples holding the word that went into the vector
    evidence: np.ndarray | None = None  # (1 + examples, d): the gloss vector, then each example's

    def as_evidence(self) -> SenseEvidence:
        vectors = self.evidence if self.evidence is not None else self.vector[None, :]
        return SenseEvidence(self.synset, self.pos, self.definition, vectors)


def choose_pos(x: np.ndarray, senses: list[Sense], pos: str) -> tuple[str, dict[str, float]]:
    """The part of speech to label with, and each one's mean nearest-sense cosine (:data:`POS_RULE`)."""
    scores = {}
    for p in POS_NAMES:
        mats = [s.vector for s in senses if s.pos == p]
        if mats:
            scores[p] = round(float(np.mean(np.max(x @ np.stack(mats).T, axis=1))), 4)
    if pos == "auto":
        return max(scores, key=scores.get), scores
    if pos not in POS_NAMES:
        raise InputError(f"`pos` {pos!r}: give n, v, a, r or auto")
    if pos not in scores:
        has = ", ".join(f"{p} ({POS_NAMES[p]})" for p in scores) or "none"
        raise InputError(f"`pos` {pos}: the word has no WordNet {POS_NAMES[pos]} sense; its parts of speech: {has}")
    return pos, scores


@dataclass(frozen=True)
class SenseCluster:
    cluster: int
    size: int
    distinctive_words: list[str]
    gloss: dict[str, object] | None  # the label: synset, definition, cosine, share, margin; None: unlabelled
    typical: list[dict[str, object]]
    ambiguous: list[dict[str, object]]
    candidates: list[dict[str, object]] = field(default_factory=list)  # the two leading synsets and shares
    forms: dict[str, int] = field(default_factory=dict)  # the word's forms among the cluster's occurrences


@dataclass(frozen=True)
class SenseInduction:
    word: str
    model: str
    layer: int
    k: int
    criterion: str
    silhouettes: dict[int, float]
    clusters: list[SenseCluster]
    pos: str | None  # the part of speech of the gloss labels (None: no WordNet senses)
    pos_scores: dict[str, float]
    sense_vectors: str
    labels: np.ndarray = field(repr=False)
    coords: np.ndarray = field(repr=False)  # (n, 2) PCA projection of the unit vectors
    sentences: list[str] = field(repr=False)
    pos_per_cluster: bool = False  # --pos auto: each cluster labelled from its own nearest part of speech
    margin: float = DEFAULT_MARGIN
    forms_removed: bool = False  # each form's direction removed before clustering (a --forms folder)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "word": self.word,
            "model": self.model,
            "layer": self.layer,
            "k": self.k,
            "criterion": self.criterion,
            "occurrences": len(self.sentences),
            "silhouettes": {str(k): round(v, 4) for k, v in self.silhouettes.items()},
            "pos": self.pos,
            "pos_rule": POS_RULE,
            "pos_per_cluster": self.pos_per_cluster,
            "pos_scores": self.pos_scores,
            "sense_vectors": self.sense_vectors,
            "label_rule": f"{LABEL_RULE}; {LABEL_CHECKS}",
            "margin": self.margin,
            "forms_removed": self.forms_removed,
            "warnings": self.warnings,
            "clusters": [c.__dict__ for c in self.clusters],
        }


def induce_senses(
    folder: Path,
    word: str,
    layer: int | None = None,
    k: str | int = "auto",
    seed: int = 0,
    examples: int = 3,
    pos: str = "auto",
    sense_vectors: str = "examples",
    margin: float = DEFAULT_MARGIN,
) -> SenseInduction:
    from sklearn.decomposition import PCA

    _check_options(margin, pos, sense_vectors)
    folder = path_argument(folder, "folder")
    word = one_word(word, "word").strip().lower()
    manifest = checked_folder(folder)
    if word not in manifest.targets:
        raise TargetNotFoundError(f"{word!r} was not extracted in {folder}; its targets: {', '.join(manifest.targets)}")
    layer = pick_layer(manifest, layer, folder)
    rows, x, forms = _occurrences(folder, manifest, word, layer)
    n = len(rows)
    x, forms_removed = without_form_directions(x, forms)
    labels, chosen, silhouettes = cluster_unit_vectors(x, k, seed)
    centroids = normalize_rows(np.stack([x[labels == c].mean(axis=0) for c in range(chosen)]))
    sims = x @ centroids.T
    senses = sense_vectors_of(manifest.model, word, layer, sense_vectors, manifest.precision, manifest.runtime)
    chosen_pos, pos_scores = choose_pos(x, senses, pos) if senses else (None, {})
    if pos != "auto" and not senses:
        raise InputError(f"`pos` {pos}: {word!r} has no WordNet senses (or WordNet is not installed)")
    words = _distinctive(rows, labels, chosen, word)
    clusters, named = [], []
    for c in range(chosen):
        members = np.flatnonzero(labels == c)
        typical, ambiguous = _typical_and_ambiguous(sims[members], c, [rows[j] for j in members], examples)
        gloss, candidates = None, []
        label = _cluster_label(manifest, word, x, sims[:, c], members, rows, senses, pos, chosen_pos, margin)
        if label is not None:
            named.append(label)
            shown = {s.synset: s.examples for s in senses}
            gloss, candidates = label.gloss(shown.get(label.synset or "", 0)), label.candidates
        in_cluster = dict(Counter(forms[j] for j in members).most_common())
        clusters.append(SenseCluster(c, len(members), words[c], gloss, typical, ambiguous, candidates, in_cluster))
    coords = PCA(n_components=2, random_state=seed).fit_transform(x) if n >= 2 else np.zeros((n, 2))
    return SenseInduction(
        word, manifest.model, layer, chosen, CRITERION, silhouettes, clusters, chosen_pos, pos_scores, sense_vectors,
        labels, coords, [r["sentence"] for r in rows], pos_per_cluster=bool(senses) and pos == "auto", margin=margin,
        forms_removed=forms_removed, warnings=repeated_labels(named),
    )  # fmt: skip


def _cluster_label(
    manifest: Manifest,
    word: str,
    x: np.ndarray,
    centrality: np.ndarray,
    members: np.ndarray,
    rows: list[dict],
    senses: list[Sense],
    pos: str,
    chosen_pos: str | None,
    margin: float,
) -> ClusterLabel | None:
    """The cluster's label by its occurrences' vote (:func:`label_cluster`), among the senses of its
    part of speech (``--pos auto``: its own nearest one, or noun where its sentences' grammar says
    so), kept only if its definition is nearest the cluster's central sentences
    (:mod:`.label_checks`); None where the word has no sense of that part of speech."""
    if senses and pos == "auto":  # each cluster's own part of speech (a verb use of "bank" gets a verb sense)
        cluster_pos = choose_pos(x[members], senses, "auto")[0]
        if noun_uses([rows[j] for j in members]) and any(s.pos == "n" for s in senses):
            cluster_pos = "n"
    else:
        cluster_pos = chosen_pos
    labels_from = [s for s in senses if s.pos == cluster_pos]
    if not labels_from:
        return None
    label = label_cluster(x[members], [s.as_evidence() for s in labels_from], margin)
    if label.synset is None:
        return label
    from contextlens.core.contextual_models import load_contextual

    central = members[np.argsort(-centrality[members], kind="stable")][:GLOSS_SENTENCES]
    model = load_contextual(manifest.model, manifest.precision, manifest.runtime)
    definitions = {s.synset: s.definition for s in labels_from}
    return gloss_checked(label, model, [rows[j] for j in central], word, definitions)


def _check_options(margin: float, pos: str, sense_vectors: str) -> None:
    if not 0.0 <= margin <= 1.0:
        raise InputError(f"`margin` {margin!r}: give a cosine difference between 0 and 1 (default {DEFAULT_MARGIN})")
    if pos != "auto" and pos not in POS_NAMES:
        raise InputError(f"`pos` {pos!r}: give n, v, a, r or auto")
    if sense_vectors not in SENSE_VECTORS:
        raise InputError(f"`sense_vectors` {sense_vectors!r}: give {', '.join(SENSE_VECTORS)}")


def _occurrences(folder: Path, manifest: Manifest, word: str, layer: int) -> tuple[list[dict], np.ndarray, list[str]]:
    """The word's rows (document, sentence, span), their unit vectors at ``layer`` and their forms."""
    has_form = manifest.format != OLD_FORMATS[0]  # format-1 rows have no `form`
    columns = ["sentence", "start", "end", "doc_id", *(["form"] if has_form else []), layer_column(layer)]
    table = read_rows(folder, word, columns)
    n = table.num_rows
    if n < MIN_OCCURRENCES:
        raise InputError(
            f"{word!r} has {n} occurrence(s) in {folder}; sense induction needs at least {MIN_OCCURRENCES}"
        )
    x = normalize_rows(np.array(table.column(layer_column(layer)).to_pylist(), dtype=np.float32))
    forms = [f.lower() for f in table.column("form").to_pylist()] if has_form else [word] * n
    return table.select(["doc_id", "sentence", "start", "end"]).to_pylist(), x, forms


def _typical_and_ambiguous(
    sims: np.ndarray, c: int, rows: list[dict], examples: int
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """A cluster's most typical occurrences (nearest its centroid) and its most ambiguous ones
    (smallest margin over the next centroid); ``sims``: its members' cosines to every centroid."""
    own = sims[:, c]
    other = np.max(np.delete(sims, c, axis=1), axis=1) if sims.shape[1] > 1 else np.full(len(sims), -1.0)
    gap = own - other
    typical_at = list(np.argsort(-own)[:examples])
    typical = [_example(rows[j], float(own[j])) for j in typical_at]
    # an occurrence is typical or ambiguous, never both (a small cluster lists fewer ambiguous ones)
    ambiguous_at = [j for j in np.argsort(gap) if j not in typical_at][:examples]
    return typical, [_example(rows[j], float(gap[j])) for j in ambiguous_at]


def without_form_directions(x: np.ndarray, forms: list[str]) -> tuple[np.ndarray, bool]:
    """Unit rows with each form's mean direction replaced by the word's mean, when there are two
    or more forms (else ``x`` as it is): clusters then follow uses, not spellings."""
    names = sorted(set(forms))
    if len(names) < 2:
        return x, False
    which = np.array([names.index(f) for f in forms])
    overall = x.mean(axis=0)
    shifted = x.copy()
    for i in range(len(names)):
        shifted[which == i] += overall - x[which == i].mean(axis=0)
    return normalize_rows(shifted), True


SHOWN_CHARS = 120  # of context on each side of the target in an example; longer sentences are cut


def _example(row: dict, score: float) -> dict[str, object]:
    s, start, end = row["sentence"], row["start"], row["end"]
    left, right = s[:start], s[end:]
    if len(left) > SHOWN_CHARS:  # a 3 kB "sentence" (a table, a list) cut at a word, with an ellipsis
        left = "…" + left[-SHOWN_CHARS:].split(" ", 1)[-1]
    if len(right) > SHOWN_CHARS:
        right = right[:SHOWN_CHARS].rsplit(" ", 1)[0] + "…"
    return {"doc_id": row["doc_id"], "marked": f"{left}[{s[start:end]}]{right}", "score": round(score, 4)}


def _distinctive(rows: list[dict], labels: np.ndarray, k: int, word: str, top: int = 6) -> list[list[str]]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    counts = [Counter() for _ in range(k)]
    capitalised, inside = Counter(), Counter()  # mid-sentence uses of a word, and those capitalised
    for row, c in zip(rows, labels, strict=True):
        found = list(ALPHA_WORD_RE.finditer(row["sentence"]))
        for m in found[1:]:
            inside[m.group().lower()] += 1
            capitalised[m.group().lower()] += m.group()[0].isupper()
        for w in {m.group().lower() for m in found}:
            if w != word and w not in ENGLISH_STOP_WORDS and len(w) > 2:
                counts[c][w] += 1
    # part of a proper name (capitalised in most of its mid-sentence uses: "New" York, "Azizi" Bank):
    # it names one bank, not a sense, so it does not label a cluster
    names = {w for w, n in inside.items() if capitalised[w] > n / 2}
    total = Counter()
    for cnt in counts:
        total.update(cnt)
    vocab = len(total) or 1
    out = []
    for c in range(k):
        n_in = sum(counts[c].values())
        n_out = sum(total.values()) - n_in
        score = {
            w: math.log((counts[c][w] + 1) / (n_in + vocab)) - math.log((total[w] - counts[c][w] + 1) / (n_out + vocab))
            for w in counts[c]
        }
        candidates = [w for w in counts[c] if w not in names]
        # words seen twice or more in the cluster; a small cluster with none falls back to single ones
        # (never a blank label while the cluster has a content word; without one: NO_DISTINCTIVE_WORDS)
        chosen = [w for w in candidates if counts[c][w] >= 2 or k == 1] or candidates
        out.append(sorted(chosen, key=lambda w: (-score[w], w))[:top])
    return out


def sense_vectors_of(
    model_name: str, word: str, layer: int, how: str = "examples", precision: str = "fp32", runtime: str = "torch"
) -> list[Sense]:
    """Every WordNet sense of ``word`` as a unit vector by ``how`` (:data:`SENSE_VECTORS`), from the
    model at the ``precision`` and on the ``runtime`` the occurrences were extracted with (int8 or
    ONNX vectors sit a little apart from torch fp32 ones, so both sides of a cosine must come from
    one backend)."""
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.wordnet import wordnet

    try:
        synsets = wordnet().synsets(word)
    except ContextlensError:  # WordNet not installed: labels without glosses
        return []
    if not synsets:
        return []
    model = load_contextual(model_name, precision, runtime)
    return senses_of_synsets(model, word, layer, synsets, how)


def senses_of_synsets(
    model, word: str, layer: int, synsets, how: str = "examples", held_out=frozenset()
) -> list[Sense]:
    """:func:`sense_vectors_of` for given synsets and a loaded model; usage examples in
    ``held_out`` are left out of the evidence (the label benchmark labels them)."""
    from contextlens.analyses.benchmarks.suite import GLOSS_TEMPLATE
    from contextlens.core.occurrences import Occurrence
    from contextlens.core.wordnet import find_lemma

    occs, owner = [], []
    for n, s in enumerate(synsets):
        occs.append(Occurrence(GLOSS_TEMPLATE.format(lemma=word, definition=s.definition()), 0, len(word)))
        owner.append((n, "gloss"))
        for text in s.examples():
            span = find_lemma(text, word, _pos(s)) if text not in held_out else None
            if span is not None:
                occs.append(Occurrence(text, *span))
                owner.append((n, "example"))
    vecs = normalize_rows(np.stack([e.hidden[0] for e in model.encode_occurrences(occs, layers=[layer])]))
    out = []
    for n, s in enumerate(synsets):
        gloss = [v for v, (m, kind) in zip(vecs, owner, strict=True) if m == n and kind == "gloss"]
        found = [v for v, (m, kind) in zip(vecs, owner, strict=True) if m == n and kind == "example"]
        parts = gloss + found if how == "both" else (found or gloss) if how == "examples" else gloss
        vector = normalize_rows(np.mean(parts, axis=0)[None, :])[0]
        out.append(Sense(s.name(), _pos(s), s.definition(), vector, len(found), np.stack(gloss + found)))
    return out


def _pos(synset) -> str:
    """n, v, a or r: adjective satellites (``s``) count as adjectives."""
    return "a" if synset.pos() == "s" else synset.pos()
