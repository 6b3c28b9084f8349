"""The figure of ``eval static``: each system's score per task beside its baseline, and its speed."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from contextlens.analyses.benchmarks.result import BenchmarkResult  # noqa: E402

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


def static_figure(result: BenchmarkResult) -> plt.Figure:
    """Six panels, one bar per system (blue: static, violet: distilled, orange: teacher); a task's
    baseline (chance, random ranking) as a grey line."""
    systems = [s for s in dict.fromkeys(r["system"] for r in result.rows) if s not in ("chance", "random")]
    kinds = {r["system"]: r["kind"] for r in result.rows}
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
        f"({result.meta.get('size')}; static WiC is chance by construction)"
    )
    fig.tight_layout()
    return fig
