"""Each slider page's views: how its one result is shown at every setting of its controls, and the
fast ways to draw them (the ``Controls`` of the page records, web/pages.py).

Rank is the one page whose other layers need new forwards (``rerun``: the same request at a layer;
``layers``: the model's top layer): its words stand alone in a template, so each layer is one short
batch of them. The others derive every view from the result itself: no second forward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from contextlens.reports.figure_registry import interactive_figures

Views = tuple[dict[str, int], list[tuple[dict[str, int], Callable[[], Any]]]]


def rank_settings(result: Any, rerun: Callable[[int], Any] | None, layers: int | None) -> Views:
    if rerun is None or layers is None:
        raise ValueError("rank's views need rerun and the model's top layer")
    return {"layer": result.layer}, [
        ({"layer": lay}, (lambda: result) if lay == result.layer else (lambda lay=lay: rerun(lay)))
        for lay in range(layers + 1)
    ]


def explore_settings(result: Any, _rerun: Callable[[int], Any] | None = None, _layers: int | None = None) -> Views:
    layers = result.words[0].layers
    return {"layer": result.layer}, [({"layer": lay}, lambda lay=lay: result.at_layer(lay)) for lay in layers]


def probe_settings(result: Any, _rerun: Callable[[int], Any] | None = None, _layers: int | None = None) -> Views:
    return {"layer": result.layer}, [
        ({"layer": lay}, lambda lay=lay: replace(result, layer=lay)) for lay in result.layers
    ]


def attention_settings(result: Any, _rerun: Callable[[int], Any] | None = None, _layers: int | None = None) -> Views:
    m = result.maps[0]
    heads = m.weights.shape[1]
    return {"layer": result.layer, "head": result.head}, [
        ({"layer": lay, "head": h}, lambda lay=lay, h=h: replace(result, layer=lay, head=h))
        for lay in range(1, m.num_layers + 1)
        for h in range(heads)
    ]


def attention_drawer(result: Any) -> Callable[[Any], list[str]]:
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


def explore_drawer(result: Any) -> Callable[[Any], list[str]]:
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
