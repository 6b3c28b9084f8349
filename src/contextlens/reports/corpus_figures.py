"""Figures for corpus results: the 2-D projection of a word's occurrences, coloured by sense."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import plotly.graph_objects as go  # noqa: E402

from contextlens.analyses.corpus.senses import SenseInduction  # noqa: E402
from contextlens.reports.interactive import plain  # noqa: E402


def _name(result: SenseInduction, c: int) -> str:
    cl = result.clusters[c]
    words = ", ".join(cl.distinctive_words[:3]) or "-"
    sense = f" ~ {cl.gloss['synset']}" if cl.gloss else ""
    return f"{c}: {words}{sense} (n={cl.size})"


def senses_figure(result: SenseInduction) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    for c in range(result.k):
        pts = result.coords[result.labels == c]
        ax.scatter(pts[:, 0], pts[:, 1], s=14, alpha=0.75, label=_name(result, c))
    ax.set_title(
        f"'{result.word}': {len(result.labels)} occurrences, {result.model} layer {result.layer}, k={result.k}"
    )
    ax.set_xlabel("PC 1 (of unit vectors)")
    ax.set_ylabel("PC 2")
    ax.legend(fontsize=8, loc="best")
    return fig


def senses_html_figures(result: SenseInduction) -> list[go.Figure]:
    fig = go.Figure()
    for c in range(result.k):
        idx = [i for i, lab in enumerate(result.labels) if lab == c]
        fig.add_trace(
            go.Scatter(
                x=result.coords[idx, 0],
                y=result.coords[idx, 1],
                mode="markers",
                name=plain(_name(result, c)),
                text=[plain(result.sentences[i]) for i in idx],
                hovertemplate="%{text}<extra></extra>",
            )
        )
    fig.update_layout(
        title=plain(f"'{result.word}' by induced sense ({result.model}, layer {result.layer})"),
        xaxis_title="PC 1",
        yaxis_title="PC 2",
    )
    return [fig]
