"""Every view a page's slider and head picker may show, computed once with the result.

A step of the layer slider must not cost a reload (about 2.7 s, and the keyboard focus lost), so a
page carries its figures and numbers for every layer (and, on /attention, every head) it may show;
``static/page.js`` redraws them in the page. Figures equal across views (attention's layer heatmap)
are stored once. The views come from the one result the page computed: no second forward.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from contextlens.reports.figure_registry import interactive_figures
from contextlens.web.tables import numbers

CONTROLS = {"explore": ("layer",), "attention": ("layer", "head"), "probe": ("layer",), "rank": ("layer",)}


def view_key(values: dict[str, int]) -> str:
    """The key of one view, also its URL query: ``layer=2&head=3``."""
    return "&".join(f"{k}={v}" for k, v in values.items())


def _settings(
    name: str, result: Any, rerun: Callable[[int], Any] | None, layers: int | None
) -> tuple[dict[str, int], list[tuple[dict[str, int], Callable[[], Any]]]]:
    """The result's own setting and, per possible setting, how to get the result shown that way.
    Rank is the one page whose other layers need new forwards (``rerun``: the same request at a
    layer; ``layers``: the model's top layer): its words stand alone in a template, so each layer is
    one short batch of them."""
    if name == "rank" and rerun is not None and layers is not None:
        return {"layer": result.layer}, [
            ({"layer": lay}, (lambda: result) if lay == result.layer else (lambda lay=lay: rerun(lay)))
            for lay in range(layers + 1)
        ]
    if name == "explore":
        layers = result.words[0].layers
        return {"layer": result.layer}, [({"layer": lay}, lambda lay=lay: result.at_layer(lay)) for lay in layers]
    if name == "probe":
        return {"layer": result.layer}, [
            ({"layer": lay}, lambda lay=lay: replace(result, layer=lay)) for lay in result.layers
        ]
    if name == "attention":
        m = result.maps[0]
        heads = m.weights.shape[1]
        return {"layer": result.layer, "head": result.head}, [
            ({"layer": lay, "head": h}, lambda lay=lay, h=h: replace(result, layer=lay, head=h))
            for lay in range(1, m.num_layers + 1)
            for h in range(heads)
        ]
    raise KeyError(name)


def has_views(name: str) -> bool:
    return name in CONTROLS


def page_views(
    name: str, result: Any, rerun: Callable[[int], Any] | None = None, layers: int | None = None
) -> dict[str, Any]:
    """{"current", "controls", "figures" (plotly JSON, each once), "numbers" (HTML, each once),
    "views": {key: {"figures": [index per div], "numbers": index}}}."""
    from contextlens.reports.plot_style import PLOT_CONFIG

    current, settings = _settings(name, result, rerun, layers)
    figures: dict[str, int] = {}
    tables: dict[str, int] = {}
    views: dict[str, dict[str, Any]] = {}
    drawers = {"attention": _attention_drawer, "explore": _explore_drawer}  # fast paths, same figures
    draw = drawers[name](result) if name in drawers else lambda view: [f.to_json() for f in interactive_figures(view)]
    for values, shown in settings:
        view = shown()
        fig_ids = [figures.setdefault(f, len(figures)) for f in draw(view)]
        views[view_key(values)] = {"figures": fig_ids, "numbers": tables.setdefault(numbers(name, view), len(tables))}
    return {
        "current": view_key(current),
        "controls": list(CONTROLS[name]),
        "config": PLOT_CONFIG,
        "figures": list(figures),  # JSON texts, parsed in views_script
        "numbers": list(tables),
        "views": views,
    }


def _attention_drawer(result: Any) -> Callable[[Any], list[str]]:
    """Attention's figures per layer and head, fast: the two per-layer heatmaps are drawn once, and
    the token × token figure (the last) is the result's own with its z, colour top and title swapped
    (72 figures drawn anew took 8 s for minilm's 6 layers × 12 heads)."""
    import numpy as np
    from plotly.io.json import to_json_plotly

    from contextlens.reports.interactive import attention_grid_title

    *fixed, grid = interactive_figures(result)
    fixed_json = [f.to_json() for f in fixed]
    grid_doc = grid.to_plotly_json()

    def draw(view: Any) -> list[str]:
        zs = [m.matrix(view.layer, view.head) for m in view.maps]
        top = max(float(z.max()) for z in zs)
        data = [dict(t, z=np.round(z, 4), zmax=top) for t, z in zip(grid_doc["data"], zs, strict=True)]
        layout = dict(grid_doc["layout"], title=dict(grid_doc["layout"]["title"], text=attention_grid_title(view)))
        return [*fixed_json, to_json_plotly({"data": data, "layout": layout})]

    return draw


def _explore_drawer(result: Any) -> Callable[[Any], list[str]]:
    """The explorer's figures per layer, fast: each word's figure is drawn once and its heatmap, PCA
    points, colour floor and titles swapped per layer (``interactive.word_figure_parts``, the figure's
    own source); the figures across layers (mean cosine beside the random-word band, gap per layer)
    are the same at every layer with the words in the same order (35 figures drawn anew took 3.4 s
    for the five built-in words)."""
    import numpy as np
    from plotly.io.json import to_json_plotly

    from contextlens.reports.interactive import explore_layer_figures, word_figure_parts

    figs = interactive_figures(result)
    words, across = figs[: len(result.words)], figs[len(result.words) :]  # per word, then across layers
    docs = {w.word: f.to_plotly_json() for w, f in zip(result.words, words, strict=True)}
    # the figures across layers draw the words in the view's order (by spread at its layer): kept per order
    fixed: dict[tuple[str, ...], list[str]] = {tuple(w.word for w in result.words): [f.to_json() for f in across]}

    def across_layers(view: Any) -> list[str]:
        order = tuple(w.word for w in view.words)
        if order not in fixed:
            fixed[order] = [f.to_json() for f in explore_layer_figures(view)]
        return fixed[order]

    def draw(view: Any) -> list[str]:
        out = []
        for w in view.words:
            doc, parts = docs[w.word], word_figure_parts(w)
            heat, *points = doc["data"]
            data = [dict(heat, z=np.round(parts["z"], 4), text=parts["hover"], zmin=view.colour_floor)]
            data += [
                dict(t, x=np.round(w.pca[idx, 0], 4), y=np.round(w.pca[idx, 1], 4))
                for t, idx in zip(points, parts["pca"], strict=True)
            ]
            layout = dict(doc["layout"], title=dict(doc["layout"]["title"], text=parts["title"]))
            notes = doc["layout"]["annotations"]
            layout["annotations"] = [dict(a, text=t) for a, t in zip(notes, parts["subtitles"], strict=True)]
            out.append(to_json_plotly({"data": data, "layout": layout}))
        return [*out, *across_layers(view)]

    return draw


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
