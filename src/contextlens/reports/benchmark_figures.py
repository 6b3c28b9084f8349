"""Figures for the benchmark results (``contextlens eval ... --plot``): metric against layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from contextlens.analyses.benchmarks.result import BenchmarkResult  # noqa: E402

if TYPE_CHECKING:  # the figure reads the typed fields; the benchmark's own imports (sklearn) are not needed here
    import numpy as np

    from contextlens.analyses.benchmarks.contextuality import ContextualityResult
    from contextlens.analyses.benchmarks.wsd import WsdResult
    from contextlens.analyses.benchmarks.wsi import WsiResult

_BASELINE_STYLES = {
    "input-row": ("#15803d", ":"),
    "chance": ("#6b7280", "-."),
    "mfs-semcor": ("#7c3aed", "--"),
    "random-sense": ("#6b7280", "-."),
    "one-cluster-per-lemma": ("#6b7280", "-."),
    "one-cluster-per-instance": ("#7c3aed", "--"),
}


def _layer_curve(result: BenchmarkResult, **where: object) -> tuple[list[int], list[float]]:
    rows = sorted((r for r in result.select(**where) if r["layer"] is not None), key=lambda r: r["layer"])
    return [r["layer"] for r in rows], [r["value"] for r in rows]


def wic_figure(result: BenchmarkResult) -> plt.Figure:
    """Test accuracy per layer (dev-tuned threshold), baselines flat, published numbers dashed."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    layers, test = _layer_curve(result, system=result.model, split="test", metric="accuracy")
    _, dev = _layer_curve(result, system=result.model, split="dev", metric="accuracy")
    ax.plot(layers, test, marker="o", lw=2.2, color="#c2410c", label=f"{result.model}, test")
    ax.plot(layers, dev, marker=".", lw=1, color="#c2410c", alpha=0.45, label=f"{result.model}, dev")
    for r in result.select(split="test", metric="accuracy"):
        if r["layer"] is None and r["system"] != result.model:
            color, ls = _BASELINE_STYLES.get(r["system"], ("#1d4ed8", "--"))
            ax.axhline(r["value"], color=color, ls=ls, lw=1.5, label=f"{r['system']} ({r['value']:.3f})")
    for r in result.rows:
        if r["system"].startswith("published:"):
            ax.axhline(r["value"], color="#9ca3af", ls=(0, (2, 3)), lw=1)
            ax.text(layers[-1], r["value"], f" {r['system'][10:]} (WiC, other data)", va="center", fontsize=7)
    ax.set_title(f"Word in context (WordNet pairs): accuracy per layer — {result.model}")
    ax.set_xlabel("layer (0 = embedding output)")
    ax.set_ylabel("accuracy")
    ax.set_xticks(layers)
    ax.set_xlim(layers[0] - 0.3, layers[-1] + 3.2)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=7)
    return fig


def wsd_figure(result: WsdResult) -> plt.Figure:
    """Nearest-centroid test accuracy and macro-F1 per layer (dev faint, the dev-picked layer
    marked), MFS and random-sense flat."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    chosen = None if result.best_layer is None else result.best_layer.layer_by_dev
    for ax, metric in zip(axes, ("accuracy", "macro_f1"), strict=True):
        layers, values = _layer_curve(result, system=result.model, split="test", metric=metric)
        label = f"{result.model}: nearest sense centroid, test"
        ax.plot(layers, values, marker="o", lw=2.2, color="#c2410c", label=label)
        d_layers, d_values = _layer_curve(result, system=result.model, split="dev", metric=metric)
        if d_layers:
            ax.plot(d_layers, d_values, marker=".", lw=1, color="#c2410c", alpha=0.45, label="... dev")
        g_layers, g_values = _layer_curve(result, system=f"{result.model}+glosses", split="test", metric=metric)
        if g_layers:
            ax.plot(g_layers, g_values, marker="s", lw=1.6, ls="--", color="#b45309", label="... with glosses, test")
        if chosen is not None:
            ax.axvline(chosen, color="#c2410c", ls=":", lw=1, label=f"layer picked on dev ({chosen})")
        for system in ("mfs-semcor", "random-sense"):
            for r in result.select(system=system, split="test", metric=metric):
                color, ls = _BASELINE_STYLES[system]
                ax.axhline(r["value"], color=color, ls=ls, lw=1.5, label=f"{system} ({r['value']:.3f})")
        ax.set_title(metric.replace("_", "-"))
        ax.set_xlabel("layer (0 = embedding output)")
        ax.set_xticks(layers)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=7)
    axes[0].set_ylabel("score on held-out WordNet examples")
    fig.suptitle(f"Word sense disambiguation (WordNet examples) — {result.model}")
    return fig


def wsi_figure(result: WsiResult) -> plt.Figure:
    """Induced-sense ARI, V-measure and B-cubed F1 per layer on test lemmas (dev faint, the
    dev-picked layer marked), the baselines (one cluster, one per instance, static) flat."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 5.2))
    chosen = None if result.best_layer is None else result.best_layer.layer_by_dev
    names = {"ari": "adjusted Rand index", "v_measure": "V-measure", "bcubed_f1": "B-cubed F1"}
    for ax, (metric, title) in zip(axes, names.items(), strict=True):
        layers, values = _layer_curve(result, system=result.model, split="test", metric=metric)
        ax.plot(layers, values, marker="o", lw=2.2, color="#c2410c", label=f"{result.model}: k-means senses, test")
        d_layers, d_values = _layer_curve(result, system=result.model, split="dev", metric=metric)
        ax.plot(d_layers, d_values, marker=".", lw=1, color="#c2410c", alpha=0.45, label="... dev")
        if chosen is not None:
            ax.axvline(chosen, color="#c2410c", ls=":", lw=1, label=f"layer picked on dev ARI ({chosen})")
        for r in result.select(split="test", metric=metric):
            if r["layer"] is None:
                color, ls = _BASELINE_STYLES.get(r["system"], ("#1d4ed8", (0, (4, 2))))
                ax.axhline(r["value"], color=color, ls=ls, lw=1.5, label=f"{r['system']} ({r['value']:.3f})")
        ax.set_title(title)
        ax.set_xlabel("layer (0 = embedding output)")
        ax.set_xticks(layers)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=7, ncol=2, frameon=False)
    axes[0].set_ylabel("mean over test lemmas")
    fig.subplots_adjust(bottom=0.33, wspace=0.25)
    fig.suptitle(f"Word sense induction (WordNet examples, per-lemma k-means) — {result.model}")
    return fig


def similarity_figure(result: BenchmarkResult) -> plt.Figure:
    """Spearman per layer for the template and pooled reductions; the static model flat."""
    datasets = sorted({r["split"] for r in result.rows})
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4.2), sharey=True, squeeze=False)
    for ax, ds in zip(axes[0], datasets, strict=True):
        for system, color in ((f"{result.model}:template", "#c2410c"), (f"{result.model}:pooled", "#b45309")):
            layers, values = _layer_curve(result, system=system, split=ds, metric="spearman")
            if layers:
                cov = result.value(system=system, split=ds, metric="coverage")
                ls = "-" if system.endswith("template") else "--"
                ax.plot(layers, values, marker="o", lw=2, ls=ls, color=color, label=f"{system} (coverage {cov:.0%})")
                ax.set_xticks(layers)
        for r in result.select(split=ds, metric="spearman"):
            if r["layer"] is None:
                cov = result.value(system=r["system"], split=ds, metric="coverage")
                ax.axhline(r["value"], color="#1d4ed8", ls="--", lw=1.5, label=f"{r['system']} (coverage {cov:.0%})")
        ax.set_title(ds)
        ax.set_xlabel("layer (0 = embedding output)")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=7)
    axes[0][0].set_ylabel("Spearman with human ratings")
    fig.suptitle(f"Word similarity — {result.model}")
    return fig


_CONTEXTUALITY_PANELS = (
    ("anisotropy", None, "anisotropy baseline\n(mean cosine of random words)"),
    ("self_similarity", "self_similarity_adjusted", "self-similarity"),
    ("intra_sentence", "intra_sentence_adjusted", "intra-sentence similarity"),
    ("mev", "mev_adjusted", "maximum explainable variance\n(uncentred; dash-dot: centred, the paper's)"),
)

# The published BERT-base curves drawn beside ours (analyses/benchmarks/published.py), per panel.
_PUBLISHED_CURVES = {
    "anisotropy": "bert_baseline",
    "self_similarity": "bert_self_similarity",
    "intra_sentence": "bert_intra_sentence",
    "mev": "bert_mev_centred",
}


def _contextuality_curves(axes: np.ndarray, result: ContextualityResult, color: str) -> None:
    """One model's curves on the four panels: raw (solid), adjusted (dashed), the centred MEV (dash-dot)."""
    for ax, (raw, adjusted, _) in zip(axes.flat, _CONTEXTUALITY_PANELS, strict=True):
        layers, values = _layer_curve(result, metric=raw)
        depth = [layer / max(layers) for layer in layers]
        ax.plot(depth, values, marker="o", ms=3.5, lw=2, color=color, label=f"{result.model} raw")
        if adjusted:
            _, adj = _layer_curve(result, metric=adjusted)
            ax.plot(depth, adj, marker="o", ms=3, lw=1.4, ls="--", color=color, label=f"{result.model} adjusted")
        if raw == "mev" and "mev_centred" in result.metrics():
            _, centred = _layer_curve(result, metric="mev_centred")
            ax.plot(depth, centred, marker="s", ms=3, lw=1.4, ls="-.", color=color, label=f"{result.model} centred")


def contextuality_figure(results: Sequence[ContextualityResult]) -> plt.Figure:
    """One panel per Ethayarajh metric against relative depth (layer / number of layers).

    Solid: raw; dashed: anisotropy-adjusted. Several models share the axes (relative depth
    lets a 6-layer and a 12-layer model line up). The paper's findings are printed, not drawn.
    """
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    colors = ["#c2410c", "#1d4ed8", "#15803d", "#7c3aed"]
    for result, color in zip(results, colors, strict=False):
        _contextuality_curves(axes, result, color)
    published = results[0].published_rows if results else []
    if published:
        for ax, (raw, _, _) in zip(axes.flat, _CONTEXTUALITY_PANELS, strict=True):
            points = [(r["layer"] / 12, r[_PUBLISHED_CURVES[raw]]) for r in published]
            points = [(x, y) for x, y in points if y is not None]
            ax.plot(*zip(*points, strict=True), "k:", marker="x", ms=5, lw=1, label="BERT-base, published")
    findings = results[0].paper_findings if results else {}
    for ax, (raw, _, title) in zip(axes.flat, _CONTEXTUALITY_PANELS, strict=True):
        if raw == "mev" and results:
            bound = results[0].paper_mev_bound
            if bound is not None:
                ax.axhline(
                    bound, color="#6b7280", ls=":", lw=1.2, label=f"paper: MEV < {bound:.0%} (BERT, many contexts)"
                )
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("relative depth (layer / number of layers; 0 = embedding output)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        note = findings.get(raw)
        if note:
            ax.text(0.01, -0.25, "Ethayarajh 2019: " + note, transform=ax.transAxes, fontsize=6.5, wrap=True)
    names = ", ".join(r.model or "?" for r in results)
    fig.suptitle(f"How contextual? (Ethayarajh 2019 metrics on WordNet examples) — {names}")
    fig.tight_layout()
    return fig
