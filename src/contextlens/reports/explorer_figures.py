"""The polysemy explorer's interactive figures: per word a cosine heatmap and a PCA scatter, then
each word's mean cosine and separation gap across layers."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from contextlens.analyses.lesson.polysemy import Exploration, WordExploration
from contextlens.reports.plot_style import COLOURS, LAYOUT, short_marked
from contextlens.reports.plotly_parts import baseline_band, plain


def explore_figures(result: Exploration) -> list[go.Figure]:
    """Per word a heatmap and a PCA scatter; then the figures across layers for all words."""
    low = result.colour_floor  # one colour scale for every word
    return [_word_figure(w, low) for w in result.words] + explore_layer_figures(result)


def explore_layer_figures(result: Exploration) -> list[go.Figure]:
    """The explorer's figures across layers (the same at every chosen layer, the words in the result's
    order): each word's mean cosine beside the random-word band, then the separation gap per layer."""
    gap = go.Figure()
    for i, w in enumerate(result.words):
        if w.gaps is None:
            continue
        gap.add_scatter(
            x=w.layers,
            y=w.gaps,
            mode="lines+markers",
            name=plain(w.word),
            line={"color": COLOURS[i % len(COLOURS)]},
            customdata=np.array(w.p_values),
            hovertemplate="layer %{x}: gap %{y:.3f}, p=%{customdata:.4f}",
        )
    gap.add_hline(y=0, line_color="#444")
    gap.update_layout(
        **LAYOUT,
        height=420,
        title=f"Separation gap per layer (permutation test, {result.permutations} shuffles, smallest possible p "
        f"{result.p_floor:.4f}; p in the hover)",
        xaxis_title="layer (0 = embedding output)",
        yaxis_title="same-sense − cross-sense cosine",
    )
    return [_mean_cosine_figure(result), gap]


def _mean_cosine_figure(result: Exploration) -> go.Figure:
    """Each word's mean pairwise cosine (1 - spread) per layer over the random-word band."""
    fig = go.Figure()
    first = result.words[0]
    baseline_band(fig, first.layers, first.layer_baselines())
    for i, w in enumerate(result.words):
        fig.add_scatter(
            x=w.layers,
            y=w.mean_cosines,
            mode="lines+markers",
            name=plain(w.word),
            line={"color": COLOURS[i % len(COLOURS)]},
            hovertemplate="layer %{x}: mean cosine %{y:.3f}",
        )
    fig.update_layout(
        **LAYOUT,
        height=420,
        title=f"Mean pairwise cosine per layer (1 − spread) beside random pairs of different words — "
        f"{plain(result.model)}",
        xaxis_title="layer (0 = embedding output)",
        yaxis_title="cosine",
    )
    return fig


def word_figure_parts(w: WordExploration) -> dict[str, object]:
    """What a word's figure shows at its layer: the one source of the figure below and of a face that
    swaps these into a drawn figure to show another layer (web/views.py)."""
    texts = [plain(short_marked(o.marked(), 70)) for o in w.occurrences]
    n = len(texts)
    gap = "" if w.gap is None else f", gap {w.gap:+.3f} (p={w.p_value:.3f})"
    senses = list(dict.fromkeys(w.senses))
    return {
        "texts": texts,
        "z": w.matrix,
        "hover": [[f"{texts[i]}<br>{texts[j]}<br>cosine {w.matrix[i, j]:.3f}" for j in range(n)] for i in range(n)],
        "senses": senses,
        "pca": [[i for i, s in enumerate(w.senses) if s == sense] for sense in senses],
        "subtitles": (f"cosine at layer {w.layer}", f"PCA of the hidden states at layer {w.layer}"),
        "title": f"“{plain(w.word)}” — spread {w.spread:.3f}{gap}",
    }


def _word_figure(w: WordExploration, low: float) -> go.Figure:
    parts = word_figure_parts(w)
    labels = [plain(f"{i}. {s or ''}") for i, s in enumerate(w.senses, 1)]
    texts = parts["texts"]
    fig = make_subplots(
        rows=1, cols=2, column_widths=[0.55, 0.45], horizontal_spacing=0.12, subplot_titles=parts["subtitles"]
    )
    fig.add_trace(
        go.Heatmap(
            z=parts["z"],
            x=labels,
            y=labels,
            colorscale="Viridis",
            zmin=low,
            zmax=1.0,
            text=parts["hover"],
            hoverinfo="text",
            colorbar={"x": 0.5, "len": 0.9},
        ),
        row=1,
        col=1,
    )
    fig.update_yaxes(autorange="reversed", row=1, col=1)
    for k, (sense, idx) in enumerate(zip(parts["senses"], parts["pca"], strict=True)):
        fig.add_trace(
            go.Scatter(
                x=w.pca[idx, 0],
                y=w.pca[idx, 1],
                mode="markers+text",
                name=plain(sense or "unlabelled"),
                text=[str(i + 1) for i in idx],
                textposition="top right",
                hovertext=[texts[i] for i in idx],
                hoverinfo="text",
                marker={"size": 11, "color": COLOURS[k % len(COLOURS)]},
            ),
            row=1,
            col=2,
        )
    fig.update_layout(**LAYOUT, height=480, title=parts["title"])
    return fig
