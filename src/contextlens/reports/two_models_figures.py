"""The figure of two models side by side: each model's per-layer answer against its own baseline,
on a shared axis of relative depth (layer / layers), and the CKA of their layers beside it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from contextlens.reports.claims_figures import draw_cka  # noqa: E402

if TYPE_CHECKING:
    from contextlens.analyses.lesson.two_models import TwoModels

COLOURS = ("#2563eb", "#c2410c")  # first model, second model
STYLES = ("-", "--", ":", "-.")  # one per word (explore)


def two_models_figure(result: TwoModels) -> plt.Figure:
    """Left: every curve of both models by relative depth (markers alone for one layer, as
    same-sense's rule layer); right: the CKA heatmap."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1.1, 1]})
    words: dict[str, int] = {}
    for curve in result.curves():
        colour = COLOURS[result.models.index(curve.model)]
        word = curve.label.split(":")[0] if ":" in curve.label else ""
        style = STYLES[words.setdefault(word, len(words)) % len(STYLES)]
        marker = "o" if len(curve.layers) == 1 else "."
        left.plot(curve.depth, curve.values, style, marker=marker, ms=7 if marker == "o" else 5, color=colour,
                  label=f"{curve.model}: {curve.label}")  # fmt: skip
    left.axhline(0, color="#9ca3af", lw=0.8)
    left.set_xlim(-0.03, 1.03)
    left.set_xlabel("relative depth (layer / number of layers)")
    left.set_ylabel("each model against its own baseline")
    left.set_title(f"{result.question}: {' vs '.join(result.models)}, each on its own scale", fontsize=9)
    left.legend(fontsize=7, loc="best")
    draw_cka(fig, right, result.cka)
    fig.tight_layout()
    return fig
