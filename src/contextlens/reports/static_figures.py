"""The figure of ``eval static``: each system's score per task beside its baseline, and its speed;
and the report's interactive figure of the static methods made here."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import plotly.graph_objects as go  # noqa: E402

from contextlens.analyses.lesson.static_methods import StaticMethods  # noqa: E402

if TYPE_CHECKING:
    from contextlens.analyses.static.evaluate import StaticEvalResult

_PANELS = (
    ("simlex999", "spearman", "SimLex-999 Spearman", None),
    ("wordsim353", "spearman", "WordSim-353 Spearman", None),
    ("wic", "accuracy", "word in context, test accuracy", "chance"),
    ("lee", "spearman", "Lee documents, Spearman", None),
    ("lee", "ndcg@10", "Lee documents, nDCG@10", "random"),
    ("speed", "documents_per_s", "Lee documents encoded per second (log)", None),
)


def _color(kind: str) -> str:
    if kind.startswith("teacher"):
        return "#c2410c"
    if kind.startswith("distilled"):
        return "#7c3aed"
    return "#1d4ed8"


def static_figure(result: StaticEvalResult) -> plt.Figure:
    """Six panels, one bar per system (blue: static, violet: distilled, orange: teacher); a task's
    baseline (chance, random ranking) as a grey line."""
    kinds = result.systems
    systems = [s for s in kinds if s not in ("chance", "random")]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    for ax, (task, metric, title, baseline) in zip(axes.flat, _PANELS, strict=True):
        names = [s for s in systems if result.value(system=s, task=task, metric=metric) is not None]
        values = [result.value(system=s, task=task, metric=metric) for s in names]
        ax.barh(names, values, color=[_color(kinds[s]) for s in names])
        for y, v in enumerate(values):
            ax.text(v, y, f" {v:,.0f}" if v >= 100 else f" {v:.3g}", va="center", fontsize=8)
        if baseline is not None:
            base = result.value(system=baseline, task=task, metric=metric)
            if base is not None:
                ax.axvline(base, color="#6b7280", ls="-.", lw=1.5, label=f"{baseline} {base:.3f}")
                ax.legend(loc="lower right", fontsize=8)
        if task == "speed":
            ax.set_xscale("log")
        ax.invert_yaxis()
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(
        "Static models vs their teachers — blue: static, violet: distilled, orange: contextual teacher "
        f"({result.size}; static WiC is chance by construction)"
    )
    fig.tight_layout()
    return fig


def static_methods_figure(methods: StaticMethods) -> go.Figure:
    """The report's static-methods figure (interactive): SimLex-999 and WordSim-353 Spearman of the
    model of each method made here, side by side; the hover says the share of pairs it scored."""
    from contextlens.reports.interactive import COLOURS, LAYOUT

    rows = [r for r in methods.rows if r.model is not None]
    labels = [f"{r.method}: {r.model}" for r in rows]
    fig = go.Figure()
    datasets = (("simlex999", "SimLex-999", COLOURS[1]), ("wordsim353", "WordSim-353", COLOURS[2]))
    for dataset, title, colour in datasets:
        values = [r.scores[dataset][0] for r in rows]
        shares = [r.scores[dataset][1] for r in rows]
        fig.add_bar(
            name=title,
            y=labels,
            x=values,
            orientation="h",
            marker_color=colour,
            text=[f"{v:.3f}" + ("" if s == 1 else f" ({s:.0%} of pairs)") for v, s in zip(values, shares, strict=True)],
            hovertemplate="%{y}: Spearman %{x:.3f}<extra>" + title + "</extra>",
        )
    fig.update_layout(
        **LAYOUT,
        barmode="group",
        title="word similarity of each static method here (Spearman with human ratings; no forward pass)",
        xaxis_title="Spearman",
        yaxis={"autorange": "reversed"},
        height=140 + 60 * max(1, len(rows)),
    )
    return fig
