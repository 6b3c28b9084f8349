"""Jupyter display for result objects: ``import contextlens.notebook`` (or ``%load_ext contextlens.notebook``).

Analyses stay free of report imports: this face registers IPython HTML formatters for the result
classes, drawing the same plotly figures as the HTML pages, with plotly.js inlined once per figure
so the notebook renders offline.
"""

from __future__ import annotations

import html
import json
from typing import Any

from contextlens.errors import InputError, NoFigureError
from contextlens.reports.figure_registry import (
    figures_for,
    figures_for_type,
    interactive_figures,
    result_types,
    type_name,
)


def _drawn(result: Any) -> bool:
    """Whether ``result`` has interactive figures in the one registry."""
    try:
        return figures_for(result).plotly is not None
    except NoFigureError:
        return False


def to_html(result: Any) -> str:
    """A result as one offline HTML fragment: its figures (plotly.js inlined), or its JSON document."""
    if not callable(getattr(result, "to_dict", None)):
        raise InputError(
            f"result must be a contextlens result (Comparison, Exploration, Trace, ...), got {type(result).__name__}"
        )
    if _drawn(result):
        from plotly.offline import get_plotlyjs

        from contextlens.reports.interactive import figure_div

        script = f'<script type="text/javascript">{get_plotlyjs()}</script>'
        return script + "".join(figure_div(f) for f in interactive_figures(result))
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
    for cls in result_types():
        if figures_for_type(type_name(cls)).plotly is not None:
            formatter.for_type(cls, to_html)
    return True


def load_ipython_extension(ip: Any) -> None:
    register(ip)


register()
