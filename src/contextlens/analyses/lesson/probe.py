"""The sense probe: score the target's hidden state against anchor words, layer by layer.

The second seed's bar chart: "bank" in "river bank" scores high against *shore* and low against
*deposit*, and the other way round in "bank account". An anchor is represented the same way as the
target - a hidden state of the same model at the same layer - either in a neutral template
sentence (``"The word is [shore]."``) or as the mean over sentences the user gives for it. Hidden
states of one model share a space at each layer, so the cosine is meaningful; all of them are
contextual, so the absolute values are high (anisotropy) and the *difference* between anchors is
what carries the sense.

With a static model the same anchors are scored with static vectors too: one score per anchor,
identical for every sentence, which is the lesson's point. Anchors (and targets) must then be in
the static model's vocabulary, which also catches misspelt anchors.

Each score stands beside the model's random-word baseline at its layer (the helper compare uses,
analyses/measures/word_baseline.py): an anchor in a template sentence and the target in the
user's are two different words in unrelated sentences, exactly what that baseline samples, so a
score's percentile there says whether the anchor is closer than an unrelated word would be.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.jsonable import plain_json
from contextlens.core.occurrences import LONE_WORD_TEMPLATE, Occurrence, in_template, is_single_word, parse_marked
from contextlens.core.similarity import cosine, cosine_values
from contextlens.core.static_models import StaticModel, as_static
from contextlens.data import read_tsv
from contextlens.errors import ContextlensError, DataFileError, InputError, OutOfVocabularyError

if TYPE_CHECKING:  # torch: imported once the input is read
    from contextlens.analyses.measures.layer_choice import LayerChoice
    from contextlens.analyses.measures.word_baseline import CosineBaseline
    from contextlens.core.contextual_models import ContextualModel

ANCHOR_COLUMNS = "anchor<TAB>sentence with the anchor in [brackets]"


def load_anchor_sentences(path: Path | str) -> dict[str, list[Occurrence]]:
    """Read ``anchor<TAB>[marked] sentence`` lines into sentences per anchor word."""
    out: dict[str, list[Occurrence]] = {}
    for rec in read_tsv(path, (2,), ANCHOR_COLUMNS):
        anchor, sentence = rec.fields
        try:
            out.setdefault(anchor.lower(), []).append(parse_marked(sentence))
        except ContextlensError as exc:
            raise DataFileError(f"{rec.where()}: {exc}") from exc
    if not out:
        raise DataFileError(f"{path} holds no anchor sentences; write lines {ANCHOR_COLUMNS}")
    return out


def check_anchor(word: str, model: ContextualModel) -> str:
    """An anchor must be one word that the model's tokenizer knows (no [UNK] token)."""
    if not isinstance(word, str) or not word.strip():
        raise InputError("an anchor is empty; give `anchors` words such as shore deposit")
    word = word.strip()
    if not is_single_word(word):
        raise InputError(f"anchor {word!r} is not a single word; give words such as shore or deposit")
    unk = model.tokenizer.unk_token_id
    ids = model.tokenizer(word, add_special_tokens=False)["input_ids"]
    if not ids or (unk is not None and unk in ids):
        raise OutOfVocabularyError(
            f"anchor {word!r} is not in {model.name}'s vocabulary (the tokenizer maps it to "
            f"{model.tokenizer.unk_token}); choose another anchor word"
        )
    return word


@dataclass
class ProbedSentence:
    occurrence: Occurrence
    target_tokens: list[str]
    scores: np.ndarray = field(repr=False)  # (layers, anchors)

    @property
    def best_per_layer(self) -> list[int]:
        """Index of the closest anchor at each layer."""
        return [int(i) for i in self.scores.argmax(axis=1)]


@dataclass
class ProbeResult:
    """Cosine of each target with each anchor at every layer."""

    model: str
    layers: list[int]
    layer: int  # the layer shown in the bar chart
    anchors: list[str]
    anchor_sources: list[str]  # "template" or "N sentences"
    template: str
    sentences: list[ProbedSentence]
    static_model: str | None = None
    static_scores: np.ndarray | None = field(default=None, repr=False)  # (sentences, anchors)
    backend: Backend = REFERENCE  # the model's precision and runtime (core/backend.py)
    baseline: CosineBaseline | None = field(default=None, repr=False)  # random-word cosines
    baseline_missing: str | None = None  # why there is no baseline (WordNet not installed)
    layer_choice: LayerChoice | None = field(default=None, repr=False)  # set when the layer was "auto"
    left_context_only: bool = False  # a decoder: each target sees only the words to its left

    @property
    def notes(self) -> list[str]:
        """What the reader must know to read the scores (a decoder's blind right side)."""
        from contextlens.analyses.lesson.left_context import left_context_note

        note = left_context_note(self.model, [s.occurrence for s in self.sentences]) if self.left_context_only else None
        return [note] if note else []

    @property
    def layer_label(self) -> str:
        """``layer 6`` or ``layer 6 (auto: best sense separation on dev lemmas (eval wic))``."""
        return self.layer_choice.label() if self.layer_choice is not None else f"layer {self.layer}"

    def layer_baselines(self) -> list[dict[str, float] | None]:
        """Per layer, the random-word distribution (mean, std, p5, p50, p95); None per layer without one."""
        if self.baseline is None:
            return [None] * len(self.layers)
        return [self.baseline.layer(layer).to_dict() for layer in self.layers]

    def beside(self, sentence: int, layer: int | None = None) -> dict[str, dict[str, float]] | None:
        """Per anchor, the baseline beside sentence ``sentence``'s score at ``layer`` (default: the
        chosen one): mean, percentile, score - mean."""
        if self.baseline is None:
            return None
        layer = self.layer if layer is None else layer
        k = self.layers.index(layer)
        scores = self.sentences[sentence].scores[k]
        return {a: self.baseline.beside(layer, float(v)) for a, v in zip(self.anchors, scores, strict=True)}

    def at(self, layer: int | None = None) -> np.ndarray:
        """(sentences, anchors) scores at ``layer`` (default: the chosen layer)."""
        k = self.layers.index(self.layer if layer is None else layer)
        return np.stack([s.scores[k] for s in self.sentences])

    def static_groups(self) -> list[tuple[str, np.ndarray]]:
        """One (word, scores per anchor) group per distinct target word: static scores do not
        depend on the sentence, so sentences with the same word share one group."""
        if self.static_scores is None:
            return []
        groups: dict[str, np.ndarray] = {}
        for s, row in zip(self.sentences, self.static_scores, strict=True):
            groups.setdefault(s.occurrence.word.lower(), row)
        return list(groups.items())

    def best_anchor(self, sentence: int) -> str:
        return self.anchors[int(np.argmax(self.at()[sentence]))]

    @plain_json
    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            **self.backend.to_dict(),
            "static_model": self.static_model,
            "layer": self.layer,
            "layer_choice": None if self.layer_choice is None else self.layer_choice.to_dict(),
            "template": self.template,
            "anchors": [
                {"word": a, "representation": s} for a, s in zip(self.anchors, self.anchor_sources, strict=True)
            ],
            "sentences": [
                {
                    **s.occurrence.to_dict(),
                    "tokens": s.target_tokens,
                    "scores": dict(zip(self.anchors, self.at()[i].tolist(), strict=True)),
                    "best_anchor": self.best_anchor(i),
                    "baseline": self.beside(i),
                    "static_scores": None
                    if self.static_scores is None
                    else dict(zip(self.anchors, self.static_scores[i].tolist(), strict=True)),
                    "per_layer": [
                        {"layer": layer, **dict(zip(self.anchors, s.scores[k].tolist(), strict=True))}
                        for k, layer in enumerate(self.layers)
                    ],
                }
                for i, s in enumerate(self.sentences)
            ],
            "baseline": None if self.baseline is None else self.baseline.to_dict(),
            "notes": self.notes,
            "baseline_missing": self.baseline_missing,
            "baseline_definition": "per anchor at the chosen layer: mean, spread and percentiles of the cosines of "
            "random pairs of different words in unrelated sentences; percentile: the share of those pairs at or "
            "below the score; adjusted: the score minus the random mean",
        }


def probe(
    occurrences: Sequence[Occurrence],
    anchors: Sequence[str],
    model: ContextualModel | str,
    anchor_sentences: Mapping[str, Sequence[Occurrence]] | None = None,
    template: str = LONE_WORD_TEMPLATE,
    layer: int | str = -1,
    static: StaticModel | str | None = None,
    baseline: bool = True,
) -> ProbeResult:
    """Score each target against each anchor at every layer (0..L), and with ``static`` vectors.

    Anchors with sentences in ``anchor_sentences`` are the mean of their hidden states there; the
    rest stand in ``template``. Raises InputError / OutOfVocabularyError for unusable anchors.
    ``baseline=True`` sets the model's random-word cosine baseline beside each score. ``layer="auto"``:
    the layer `eval wic` chooses on dev lemmas for this model (analyses/measures/layer_choice.py).
    """
    from contextlens.analyses.measures.layer_choice import resolve_layer  # torch, once the input is read
    from contextlens.analyses.measures.word_baseline import baseline_or_reason
    from contextlens.core.contextual_models import as_contextual

    model = as_contextual(model)
    static = None if static is None else as_static(static)
    if not occurrences:
        raise InputError("no sentences given; pass a sentence like 'The river [bank] flooded.'")
    anchor_sentences = {k.lower(): list(v) for k, v in (anchor_sentences or {}).items()}
    anchors = _checked_anchors(anchors or list(anchor_sentences), model)
    chosen, choice = resolve_layer(model, layer, "sense")
    layers = list(model.check_layers(None))
    static_scores = None
    if static is not None:  # before the forward pass, so a misspelt anchor fails at once
        anchor_vectors = [static.vector(a) for a in anchors]
        static_scores = np.array([[cosine(static.vector(o.word), v) for v in anchor_vectors] for o in occurrences])
    anchor_occs, owners, sources = _anchor_occurrences(anchors, anchor_sentences, template)
    encs = model.encode_occurrences(list(occurrences) + anchor_occs, layers=layers)
    targets, anchor_encs = encs[: len(occurrences)], encs[len(occurrences) :]
    anchor_states = np.stack(
        [np.mean([e.hidden for e, o in zip(anchor_encs, owners, strict=True) if o == a], axis=0) for a in anchors]
    )  # (anchors, layers, d)
    sentences = []
    for occ, enc in zip(occurrences, targets, strict=True):
        scores = np.array(
            [
                [cosine_values(enc.hidden[k], anchor_states[j, k]) for j in range(len(anchors))]
                for k in range(len(layers))
            ]
        )
        sentences.append(ProbedSentence(occ, enc.target_tokens, scores))
    base, missing = baseline_or_reason(model) if baseline else (None, None)
    return ProbeResult(
        model.name, layers, chosen, list(anchors), sources, template, sentences,
        static_model=static.name if static is not None else None, static_scores=static_scores,
        backend=model.backend, baseline=base, baseline_missing=missing, layer_choice=choice,
        left_context_only=bool(getattr(model, "is_decoder", False)),
    )  # fmt: skip


def _checked_anchors(anchors: Sequence[str], model: ContextualModel) -> list[str]:
    """The anchors, each a word the model can score, none named twice."""
    if not anchors:
        raise InputError("no anchors given; name anchor words in `anchors`, e.g. shore deposit")
    anchors = [check_anchor(a, model) for a in anchors]
    if len({a.lower() for a in anchors}) != len(anchors):
        raise InputError("an anchor is named twice; give each anchor word once")
    return anchors


def _anchor_occurrences(
    anchors: Sequence[str], anchor_sentences: Mapping[str, list[Occurrence]], template: str
) -> tuple[list[Occurrence], list[str], list[str]]:
    """Each anchor's occurrences (its given sentences, else the template), their owners, and each one's source."""
    anchor_occs: list[Occurrence] = []
    owners: list[str] = []
    sources: list[str] = []
    for a in anchors:
        given = anchor_sentences.get(a.lower())
        occs = given if given else [in_template(a, template)]
        anchor_occs.extend(occs)
        owners.extend([a] * len(occs))
        sources.append(f"mean of {len(occs)} sentences" if given else "template")
    return anchor_occs, owners, sources
