"""Jupyter display for result objects: ``import contextlens.notebook`` (or ``%load_ext contextlens.notebook``).

Analyses stay free of report imports: this face registers IPython HTML formatters for the result
classes, drawing the same plotly figures as the HTML pages, with plotly.js inlined once per figure
so the notebook renders offline.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import Any

from contextlens.analyses.lesson.attention import AttentionResult
from contextlens.analyses.lesson.divergence import Comparison
from contextlens.analyses.lesson.polysemy import Exploration
from contextlens.analyses.lesson.probe import ProbeResult
from contextlens.analyses.lesson.ranking import Ranking
from contextlens.analyses.lesson.trace import Trace
from contextlens.errors import InputError


def _makers() -> dict[type, Callable[[Any], list]]:
    from contextlens.reports import interactive

    return {
        Comparison: interactive.divergence_figures,
        Exploration: interactive.explore_figures,
        AttentionResult: interactive.attention_figures,
        ProbeResult: interactive.probe_figures,
        Ranking: interactive.slope_figures,
        Trace: interactive.trace_figures,
    }


def to_html(result: Any) -> str:
    """A result as one offline HTML fragment: its figures (plotly.js inlined), or its JSON document."""
    if not callable(getattr(result, "to_dict", None)):
        raise InputError(
            f"result must be a contextlens result (Comparison, Exploration, Trace, ...), got {type(result).__name__}"
        )
    for cls, make in _makers().items():
        if isinstance(result, cls):
            from plotly.offline import get_plotlyjs

            from contextlens.reports.interactive import figure_div

            script = f'<script type="text/javascript">{get_plotlyjs()}</script>'
            return script + "".join(figure_div(f) for f in make(result))
    return f"<pre>{html.escape(json.dumps(result.to_dict(), indent=2))}</pre>"


def register(ip: Any = None) -> bool:
    """Register the formatters in the running IPython (``ip``); False when there is none."""
    if ip is None:
        try:
            from IPython import get_ipython  # type: ignore[import-not-found]
        except ImportError:
            return False
        ip = get_ipython()
    if ip is None:
        return False
    formatter = ip.display_formatter.formatters["text/html"]
    for cls in _makers():
        formatter.for_type(cls, to_html)
    return True


def load_ipython_extension(ip: Any) -> None:
    register(ip)


register()
