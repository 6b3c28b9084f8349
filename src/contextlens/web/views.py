"""Every view a page's slider and head picker may show, computed once with the result.

A step of the layer slider must not cost a reload (about 2.7 s, and the keyboard focus lost), so a
page carries its figures and numbers for every layer (and, on /attention, every head) it may show;
``static/page.js`` redraws them in the page. Figures equal across views (attention's layer heatmap)
are stored once. The views come from the one result the page computed: no second forward.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from contextlens.reports.figure_registry import interactive_figures
from contextlens.web.page import Page
from contextlens.web.pages import page_named
from contextlens.web.tables import numbers


def view_key(values: dict[str, int]) -> str:
    """The key of one view, also its URL query: ``layer=2&head=3``."""
    return "&".join(f"{k}={v}" for k, v in values.items())


def page_views(
    page: Page | str, result: Any, rerun: Callable[[int], Any] | None = None, layers: int | None = None
) -> dict[str, Any]:
    """{"current", "controls", "figures" (plotly JSON, each once), "numbers" (HTML, each once),
    "views": {key: {"figures": [index per div], "numbers": index}}} of ``page`` (a record or its name),
    whose ``controls`` say how to get each view and how to draw it fast."""
    from contextlens.reports.plot_style import PLOT_CONFIG

    page = page_named(page) if isinstance(page, str) else page
    controls = page.controls
    if controls is None:
        raise ValueError(f"the page {page.name!r} has no controls to redraw it in place")
    current, settings = controls.settings(result, rerun, layers)
    figures: dict[str, int] = {}
    tables: dict[str, int] = {}
    views: dict[str, dict[str, Any]] = {}
    draw = controls.drawer(result) if controls.drawer else lambda view: [f.to_json() for f in interactive_figures(view)]
    for values, shown in settings:
        view = shown()
        fig_ids = [figures.setdefault(f, len(figures)) for f in draw(view)]
        views[view_key(values)] = {"figures": fig_ids, "numbers": tables.setdefault(numbers(page, view), len(tables))}
    return {
        "current": view_key(current),
        "controls": list(controls.names),
        "config": PLOT_CONFIG,
        "figures": list(figures),  # JSON texts, parsed in views_script
        "numbers": list(tables),
        "views": views,
    }


def views_script(views: dict[str, Any]) -> str:
    """The views as a JSON script element (inert data; ``</`` escaped so no text ends the element)."""
    head = {k: v for k, v in views.items() if k != "figures"}
    text = json.dumps(head)[:-1] + ', "figures": [' + ",".join(views["figures"]) + "]}"
    return '<script type="application/json" id="views">' + text.replace("</", "<\\/") + "</script>"


def figure_slots(views: dict[str, Any]) -> str:
    """Empty divs the script draws the current view's figures into, and the numbers' place."""
    count = len(views["views"][views["current"]]["figures"])
    divs = "".join(
        f'<div class="figure"><div class="view-figure plotly-graph-div" id="view-fig-{i}"></div></div>'
        for i in range(count)
    )
    first = views["numbers"][views["views"][views["current"]]["numbers"]]
    return divs + f'<div id="view-numbers">{first}</div>'
