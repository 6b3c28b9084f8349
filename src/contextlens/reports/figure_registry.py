"""One map from a result type to its figures, read by every face: the CLI (``--plot``/``--html``),
the web pages (``/<page>``, ``/<page>.png``) and the notebook display.

A result drawn one way in a face is drawn that way in all of them, because there is one place to
say how. Types and makers are named by dotted paths and imported on first use, so importing this
module loads neither the analyses (torch) nor matplotlib or plotly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from contextlens.errors import NoFigureError


@dataclass(frozen=True)
class FigureMakers:
    """How one result type is drawn; ``None`` where it has no figure of that kind."""

    png: Callable[[Any], Any] | None = None  # result -> static matplotlib figure (PNG, SVG, PDF)
    plotly: Callable[[Any], list] | None = None  # result -> interactive plotly figures (HTML)


def _lazy(target: str) -> Callable[[Any], Any]:
    """``"module:function"`` as a callable that imports the module when first called."""
    module, name = target.split(":")

    def make(result: Any) -> Any:
        return getattr(import_module(module), name)(result)

    make.__qualname__ = make.__name__ = target
    return make


def _makers(png: str | None, plotly: str | None) -> FigureMakers:
    return FigureMakers(
        None if png is None else _lazy(f"contextlens.reports.{png}"),
        None if plotly is None else _lazy(f"contextlens.reports.{plotly}"),
    )


# result type (module.Class) -> its figures; the only such map in the package
REGISTRY: dict[str, FigureMakers] = {
    "contextlens.analyses.lesson.divergence.Comparison": _makers(
        "figures:divergence_figure", "interactive:divergence_figures"
    ),
    "contextlens.analyses.lesson.polysemy.Exploration": _makers(
        "lesson_figures:explore_figure", "interactive:explore_figures"
    ),
    "contextlens.analyses.lesson.attention.AttentionResult": _makers(
        "lesson_figures:attention_figure", "interactive:attention_figures"
    ),
    "contextlens.analyses.lesson.probe.ProbeResult": _makers(
        "lesson_figures:probe_figure", "interactive:probe_figures"
    ),
    "contextlens.analyses.lesson.ranking.Ranking": _makers("lesson_figures:slope_figure", "interactive:slope_figures"),
    "contextlens.analyses.lesson.trace.Trace": _makers("lesson_figures:trace_figure", "interactive:trace_figures"),
    "contextlens.analyses.lesson.same_sense.SameSenseAnswer": _makers(
        "lesson_figures:same_sense_figure", "interactive:same_sense_figures"
    ),
    "contextlens.analyses.corpus.senses.SenseInduction": _makers(
        "corpus_figures:senses_figure", "corpus_figures:senses_html_figures"
    ),
    "contextlens.analyses.representations.cka.CkaResult": _makers("claims_figures:cka_figure", None),
    "contextlens.analyses.lesson.two_models.TwoModels": _makers("two_models_figures:two_models_figure", None),
    "contextlens.analyses.search.cost.CostReport": _makers("claims_figures:cost_figure", None),
}


def type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def figures_for_type(name: str) -> FigureMakers:
    """The figures of the result type ``name`` (``module.Class``); NoFigureError if it has none."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise NoFigureError(f"no figure is registered for {name}; ask for its JSON document instead") from None


def figures_for(result: Any) -> FigureMakers:
    """The figures of ``result`` (its class or the nearest registered base); NoFigureError if none."""
    for cls in type(result).__mro__:
        if type_name(cls) in REGISTRY:
            return REGISTRY[type_name(cls)]
    return figures_for_type(type_name(type(result)))


def static_figure(result: Any) -> Any:
    """The matplotlib figure of ``result``; NoFigureError if its type has none."""
    makers = figures_for(result)
    if makers.png is None:
        raise NoFigureError(f"{type(result).__name__} has no static figure; ask for its JSON document instead")
    return makers.png(result)


def interactive_figures(result: Any) -> list:
    """The plotly figures of ``result``; NoFigureError if its type has none."""
    makers = figures_for(result)
    if makers.plotly is None:
        raise NoFigureError(f"{type(result).__name__} has no interactive figure; ask for its JSON document instead")
    return makers.plotly(result)


def result_types() -> list[type]:
    """Every registered result class (imports the analyses that define them)."""
    types = []
    for name in REGISTRY:
        module, _, cls = name.rpartition(".")
        types.append(getattr(import_module(module), cls))
    return types
