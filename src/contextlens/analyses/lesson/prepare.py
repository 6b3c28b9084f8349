"""``contextlens prepare``: build, once, what the first command for a shipped encoder would build.

Why (issue 30): after the README's set-up every first command should run at warm speed, on
ONNX Runtime's lean path: ``--runtime auto`` runs ONNX Runtime only where the export is already
made and checked (it builds nothing; without it a command runs on torch), and this makes it. A
first ``compare`` otherwise runs on torch and computes the random-word baseline there; a first
``same-sense`` (on ``auto``, the CLI's and the web server's) encodes eval wic's dev and test pairs,
chooses the sense layer and fits its rule; a first ``serve`` indexes the Lee corpus for its
built-in search; a first ``--runtime torch`` command computes the baseline on torch. Each step
here calls the very function the command calls, so the command then reads the same cache
entries; a step whose entries exist only reads them (seconds). A first ``corpus list`` counts the
installed corpora's sentences (pysbd over enwiki and WordNet): that count is a step too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar

from contextlens.core.resources import REGISTRY, cache_dir
from contextlens.core.tuned_store import tuned_folder
from contextlens.errors import InputError

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel
    from contextlens.core.extraction import Progress

SHIPPED_ENCODERS = ("minilm", "mpnet")  # the registered encoders `make setup` installs
SIZE = "full"  # the benchmark data same-sense and --layer auto read by default
StepDone = Callable[["PrepareStep"], None]
T = TypeVar("T")


class Step(Protocol):
    """Runs one timed step and gives back what it made."""

    def __call__(self, model: str | None, what: str, cached: bool | None, run: Callable[[], T]) -> T: ...


@dataclass(frozen=True)
class PrepareStep:
    """One artefact built (or found cached) and the seconds it took."""

    model: str | None  # None: shared by every model (WordNet examples, GloVe)
    step: str
    seconds: float
    cached: bool | None  # True: read from the cache; None: not checked ahead (a shared table)

    def to_dict(self) -> dict[str, object]:
        return {"model": self.model, "step": self.step, "seconds": round(self.seconds, 2), "cached": self.cached}


@dataclass
class PrepareResult:
    models: list[str]
    steps: list[PrepareStep] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    def to_dict(self) -> dict[str, object]:
        return {"models": self.models, "seconds": round(self.seconds, 2), "steps": [s.to_dict() for s in self.steps]}


def check_models(models: Sequence[str] | None) -> list[str]:
    """The shipped encoders (or models tuned here) asked for (default: the shipped ones), in order, each once."""
    wanted = list(SHIPPED_ENCODERS) if not models else list(dict.fromkeys(models))
    for name in wanted:
        if name not in SHIPPED_ENCODERS and tuned_folder(cache_dir(), name) is None:  # or tuned here (`tune`)
            kind = "a static model" if name in REGISTRY and REGISTRY[name].kind == "static" else "not a shipped encoder"
            raise InputError(f"prepare builds the shipped encoders ({', '.join(SHIPPED_ENCODERS)}); {name!r} is {kind}")
    return wanted


def prepare(
    models: Sequence[str] | None = None, *, progress: Progress | None = None, on_step: StepDone | None = None
) -> PrepareResult:
    """Build each model's ONNX export (and its checks), its random-word baselines on ONNX Runtime
    and torch, and its sense layer choice and same-sense rule on ONNX Runtime; ``on_step`` hears of each
    step as it ends, ``progress`` follows the one long encoding (eval wic's pairs)."""
    from contextlens.analyses.corpus.catalogue import installed_corpora
    from contextlens.core import wordnet as wn
    from contextlens.core.resources import DEFAULT_STATIC
    from contextlens.core.static_models import as_static

    names = check_models(models)
    result = PrepareResult(names)

    def step(model: str | None, what: str, cached: bool | None, run: Callable[[], T]) -> T:
        started = time.perf_counter()
        made = run()
        done = PrepareStep(model, what, time.perf_counter() - started, cached)
        result.steps.append(done)
        if on_step is not None:
            on_step(done)
        return made

    step(None, "WordNet usage examples", None, wn.usage_example_stats)
    step(None, f"{DEFAULT_STATIC} table", None, lambda: as_static(DEFAULT_STATIC))
    # `corpus list`'s sizes: a first one counted enwiki's and WordNet's sentences, 103 s here
    step(None, "installed corpora's sizes (corpus list)", None, installed_corpora)
    for name in names:
        _prepare_model(name, step, progress)
    return result


def _prepare_model(name: str, step: Step, progress: Progress | None) -> None:
    """One model's steps, each the call its first command would make."""
    from contextlens.analyses.lesson.same_sense import rule_cached, same_sense_rule
    from contextlens.analyses.measures.word_baseline import baseline_cached, random_word_baseline
    from contextlens.analyses.search.builtin_index import lee_index, lee_index_ready
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.runtime_choice import export_pending

    def export() -> ContextualModel:
        model = load_contextual(name, "fp32", "onnx")
        model.onnx_forward()  # exported and checked on first load
        return model

    lean = step(name, "ONNX export + checks (with attention)", not export_pending(name, "fp32"), export)
    step(name, "random-word baseline (onnx)", baseline_cached(lean), lambda: random_word_baseline(lean))
    step(name, "sense layer + same-sense rule (onnx)", rule_cached(lean, SIZE),
         lambda: same_sense_rule(lean, "auto", SIZE, progress))  # fmt: skip
    # serve's built-in index (the lesson's kind (c)): the first `serve` after set-up built it, ~12 s on mpnet
    step(name, "serve's built-in index (Lee, onnx)", lee_index_ready(lean), lambda: lee_index(lean))
    reference = step(name, "model load (torch)", None, lambda: load_contextual(name, "fp32", "torch"))
    step(name, "random-word baseline (torch)", baseline_cached(reference), lambda: random_word_baseline(reference))
