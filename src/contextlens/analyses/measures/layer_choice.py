"""``--layer auto``: the layer the matching benchmark chose on held-out dev data, for this model.

Why: every benchmark already picks a layer on dev data, and a user who asks "the layer that works
best for this task" should get that layer, named as such, not a guess. One resolver for every
command that takes a layer (compare's neighbours explore and probe, same-sense, senses, corpus
search and export, index):

* ``"sense"``: the layer with the best dev accuracy of `eval wic`'s cosine threshold (WordNet
  word-in-context pairs, dev lemmas; analyses/measures/sense_threshold.py): the layer whose cosine best
  separates "same sense" from "different sense";
* ``"retrieval"``: the hidden-mean layer with the best MRR on a dev sample of WordNet synsets (a
  usage example finds its synset's definition, as in `eval retrieval`'s WordNet task), disjoint
  from the synsets that task reports on.

The choice needs eval wic's pair sentences encoded once per model (wic_pairs.encode_wic, the same
encoding eval wic and same-sense read); the chosen layer itself is cached on disk per model,
backend and data, so the second call costs a file read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from contextlens.analyses.measures.span_encoding import MadeOn, Progress, read_made_on
from contextlens.core import arguments
from contextlens.core.backend import Backend
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.disk_cache import cache_key, cache_path, cached_arrays
from contextlens.core.numerals import integer_text
from contextlens.errors import InputError

# 2: the sense choice reads the WiC pairs' own encoding (wic_pairs.encode_wic), not the whole suite's
CHOICE_VERSION = 2
SENSE_ENCODE_TIME = "about 10 s for minilm, a minute for mpnet on 2 cores"  # measured: docs/speed.md, issue 30
TASKS = {
    "sense": "best sense separation on dev lemmas (eval wic)",
    "retrieval": "best retrieval MRR on dev synsets (WordNet example -> definition)",
}
DEFAULT_SIZE = "full"  # the benchmark data auto chooses on ("quick": the small subset tests use)
RETRIEVAL_DEV_SYNSETS = 300  # WordNet synsets not in eval retrieval's 1,000, seed 1
Announce = Callable[[str], None]


@dataclass(frozen=True)
class LayerChoice:
    """The layer ``auto`` stands for, why, and what it scored on the dev data."""

    model: str
    backend: Backend
    task: str
    layer: int
    metric: str
    score: float  # the dev score at that layer
    data: str
    made_on: MadeOn | None = None  # which backend computed the choice's encoding (sense only)

    @property
    def reason(self) -> str:
        return TASKS[self.task]

    def label(self) -> str:
        """``layer 9 (auto: best sense separation on dev lemmas (eval wic))``."""
        return f"layer {self.layer} (auto: {self.reason})"

    def to_dict(self) -> dict[str, object]:
        return {
            "layer": self.layer,
            "auto": True,
            "task": self.task,
            "reason": self.reason,
            "metric": self.metric,
            "dev_score": self.score,
            "data": self.data,
            "model": self.model,
            **self.backend.to_dict(),
            **({} if self.made_on is None else {"made_on": self.made_on.to_dict()}),
        }


def is_auto(layer: object) -> bool:
    return isinstance(layer, str) and layer.strip().lower() == "auto"


def layer_request(layer: object) -> int | str:
    """``"auto"``, or a layer number (an int, or a str holding one: a CLI or web field), checked for
    its type here and for its range once the model is known."""
    if is_auto(layer):
        return "auto"
    if isinstance(layer, str):
        number = integer_text(layer)
        if number is None:
            raise InputError(f"`layer` must be auto or a layer number, got {layer!r}")
        return number
    return arguments.layer_number(layer)


def check_task(task: str) -> str:
    if task not in TASKS:
        raise InputError(f"`task` must be one of {', '.join(TASKS)}, got {task!r}")
    return task


def choose_layer(
    model: ContextualModel | str,
    task: str = "sense",
    *,
    size: str | None = None,
    progress: Progress | None = None,
    announce: Announce | None = None,
) -> LayerChoice:
    """The layer the ``task``'s benchmark chose on dev data for ``model`` (cached on disk).

    ``announce`` is told, once, when the choice has to be computed (the benchmark sentences are
    encoded then, minutes for mpnet); ``progress`` follows that encoding.
    """
    check_task(task)
    size = DEFAULT_SIZE if size is None else size
    if size not in ("full", "quick"):
        raise InputError(f"`size` must be 'full' or 'quick', got {size!r}")
    return _choose(as_contextual(model), task, size, progress, announce)


def resolve_layer(
    model: ContextualModel,
    layer: int | str,
    task: str = "sense",
    *,
    size: str | None = None,
    progress: Progress | None = None,
    announce: Announce | None = None,
) -> tuple[int, LayerChoice | None]:
    """A layer request as a layer number of ``model`` (negative ones from the top), with the choice
    when it was ``"auto"`` (None when a number was given)."""
    wanted = layer_request(layer)
    if wanted == "auto":
        choice = choose_layer(model, task, size=size, progress=progress, announce=announce)
        return choice.layer, choice
    (number,) = model.check_layers([wanted])
    return number, None


def _choose(
    model: ContextualModel, task: str, size: str, progress: Progress | None, announce: Announce | None
) -> LayerChoice:
    return (_sense if task == "sense" else _retrieval)(model, size, progress, announce)


_memory: dict[tuple[str, str, str, str], LayerChoice] = {}  # choices made in this process
_lock = threading.Lock()


def _remember(model: ContextualModel, task: str, size: str, make: Callable[[], LayerChoice]) -> LayerChoice:
    key = (model.name, str(model.identity), task, size)  # in memory: per backend, the choice says who made it
    with _lock:
        if key in _memory:
            return _memory[key]
    choice = make()  # outside the lock: other models' calls go on
    with _lock:
        return _memory.setdefault(key, choice)


def _sense_key(model: ContextualModel, size: str) -> str:
    from contextlens.analyses.measures.wic_pairs import build_wic_set

    wic = build_wic_set(size).wic
    pairs = [(p.first.text, p.first.start, p.second.text, p.second.start, p.same, p.split) for p in wic.pairs]
    return cache_key("layer-choice", CHOICE_VERSION, "sense", model.name, model.shared_identity, size, pairs)


def choice_cached(model: ContextualModel, task: str = "sense", size: str = DEFAULT_SIZE) -> bool:
    """Whether :func:`choose_layer` reads ``task``'s choice for ``model`` from the disk cache
    (``sense`` only: the retrieval choice costs a minute, not the WiC encoding)."""
    if check_task(task) != "sense":
        raise InputError("`task` must be sense: only its choice is checked for a cache entry")
    return cache_path("layer-choice", _sense_key(model, size)).exists()


def _sense(model: ContextualModel, size: str, progress: Progress | None, announce: Announce | None) -> LayerChoice:
    from contextlens.analyses.measures.sense_threshold import best_dev_layer, layer_scores
    from contextlens.analyses.measures.wic_pairs import build_wic_set, encode_wic, wic_is_encoded

    def make() -> LayerChoice:
        wic = build_wic_set(size).wic  # eval wic's pairs alone (about a second), not the whole suite
        key = _sense_key(model, size)

        def compute() -> dict[str, np.ndarray]:
            if announce is not None and not wic_is_encoded(model, size):
                spans = len(build_wic_set(size).spans)
                announce(
                    f"--layer auto: choosing {model.name}'s layer on eval wic's dev lemmas; this encodes the "
                    f"{spans:,} word-in-context sentences once ({SENSE_ENCODE_TIME}), then the choice is read "
                    "from the cache"
                )
            data, enc, _ = encode_wic(model, size, progress)
            scores = layer_scores(data.wic, data.rows, enc.hidden)  # eval wic's per-layer numbers
            best = best_dev_layer(scores)
            made = {} if enc.made_on is None else {"made_on": np.array(enc.made_on.backend)}
            return {"layer": np.array(best), "score": np.array(scores[best].dev_accuracy), **made}

        arrays = cached_arrays("layer-choice", key, compute)
        counts = wic.counts["dev"]
        return LayerChoice(
            model.name, model.backend, "sense", int(arrays["layer"]), "dev accuracy", float(arrays["score"]),
            f"WordNet 3.0 word-in-context pairs ({size}): {counts['pairs']} dev pairs, {counts['lemmas']} lemmas",
            read_made_on(arrays, model),
        )  # fmt: skip

    return _remember(model, "sense", size, make)


def retrieval_dev_task(size: str = "full", definitions: bool = True):
    """Dev synsets for the retrieval choice: a seed-1 sample of synsets with a usage example, none
    of them among the synsets `eval retrieval` reports on (its seed-0 sample of 1,000; 100 quick)."""
    from contextlens.analyses.measures.wordnet_task import WordNetTask, load_wordnet_task
    from contextlens.core.wordnet import wordnet

    n = RETRIEVAL_DEV_SYNSETS if size == "full" else 40
    reported = set(load_wordnet_task(1000 if size == "full" else 100, 0, definitions=False).synsets)
    pool = load_wordnet_task(n + 1100, 1, definitions=False)
    keep = [i for i, s in enumerate(pool.synsets) if s not in reported][:n]
    synsets = [pool.synsets[i] for i in keep]
    defs = [wordnet().synset(s).definition() for s in synsets] if definitions else []
    return WordNetTask(synsets, [pool.examples[i] for i in keep], defs)


def _retrieval(model: ContextualModel, size: str, progress: Progress | None, announce: Announce | None) -> LayerChoice:
    from contextlens.analyses.measures.retrieval_scores import wordnet_scores
    from contextlens.analyses.search.encoders import hidden_means_every_layer
    from contextlens.core.similarity import normalize_rows

    def make() -> LayerChoice:
        task = retrieval_dev_task(size, definitions=False)  # the key needs no WordNet reader (seconds)
        key = cache_key("layer-choice", CHOICE_VERSION, "retrieval", model.name, model.identity, size, task.synsets)

        def compute() -> dict[str, np.ndarray]:
            nonlocal task
            task = retrieval_dev_task(size)
            if announce is not None:
                announce(
                    f"--layer auto: choosing {model.name}'s retrieval layer on {len(task.synsets)} dev synsets; "
                    "this encodes them once (about a minute for mpnet), then reads the choice from the cache"
                )
            texts = task.examples + task.definitions
            layers = hidden_means_every_layer(model, texts)
            n = len(task.examples)
            mrr = []
            for x in layers:
                u = normalize_rows(np.asarray(x, dtype=np.float64))
                mrr.append(wordnet_scores(u[:n] @ u[n:].T)["mrr"])
            best = int(np.argmax(mrr))  # ties: the lower layer
            return {"layer": np.array(best), "score": np.array(mrr[best])}

        arrays = cached_arrays("layer-choice", key, compute)
        return LayerChoice(
            model.name, model.backend, "retrieval", int(arrays["layer"]), "dev MRR", float(arrays["score"]),
            f"WordNet 3.0: {len(task.synsets)} dev synsets (usage example -> definition among them), seed 1, "
            "none of eval retrieval's",
        )  # fmt: skip

    return _remember(model, "retrieval", size, make)
