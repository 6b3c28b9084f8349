"""Figures for the seeds' claims tested: the CKA heatmap and the cost of a forward pass."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

if TYPE_CHECKING:
    from contextlens.analyses.benchmarks.layer_probes import LayerProbeResult
    from contextlens.analyses.representations.cka import CkaResult
    from contextlens.analyses.search.cost import CostReport


def cka_figure(result: CkaResult) -> plt.Figure:
    """Layers of A (rows) x layers of B (columns), CKA in colour; each row's best match ringed."""
    m = result.matrix
    fig, ax = plt.subplots(figsize=(1.2 + 0.42 * m.shape[1], 1.2 + 0.42 * m.shape[0]))
    draw_cka(fig, ax, result)
    return fig


def draw_cka(fig: plt.Figure, ax: plt.Axes, result: CkaResult) -> None:
    """The CKA heatmap on ``ax`` (the one drawing of it: alone here, beside two models' curves in
    reports/two_models_figures.py)."""
    m = result.matrix
    im = ax.imshow(m, vmin=0, vmax=1, cmap="viridis", origin="lower", aspect="auto")
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            ax.text(
                j,
                i,
                f"{m[i, j]:.2f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if m[i, j] < 0.6 else "black",
            )
        best = int(np.nanargmax(m[i]))
        ax.add_patch(plt.Rectangle((best - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#f97316", lw=2))
    ax.set_xticks(range(m.shape[1]), [str(v) for v in result.layers_b])
    ax.set_yticks(range(m.shape[0]), [str(v) for v in result.layers_a])
    ax.set_xlabel(f"{result.model_b} layer")
    ax.set_ylabel(f"{result.model_a} layer")
    ax.set_title(
        f"linear CKA, {result.model_a} x {result.model_b}\n"
        f"{result.tokens:,} tokens of {result.aligned_texts} {result.corpus} texts (orange: best match per row)",
        fontsize=9,
    )
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="CKA")


def cost_figure(report: CostReport) -> plt.Figure:
    """Per-token time and memory of static vs contextual, log scale, side by side."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    static, ctx = report.static_name, report.model_name
    bars = {
        f"{static}\nlookup": report.lookup_seconds_per_token,
        f"{ctx}\nforward": report.forward_seconds_per_token,
    }
    left.bar(list(bars), list(bars.values()), color=["#2563eb", "#c2410c"])
    left.set_yscale("log")
    left.set_ylabel("seconds per token (median)")
    left.set_title(f"time per token: forward / lookup = {report.ratio:,.0f}x", fontsize=10)
    for k, v in enumerate(bars.values()):
        left.text(k, v, f"{v:.2e}", ha="center", va="bottom", fontsize=8)
    mem = {
        f"{static}\ntable": report.static_table_bytes,
        f"{ctx}\nweights": report.model_weight_bytes,
        f"{ctx}\nactivations\n(1 batch)": report.activation_bytes,
    }
    right.bar(list(mem), [v / 2**20 for v in mem.values()], color=["#2563eb", "#c2410c", "#f59e0b"])
    right.set_yscale("log")
    right.set_ylabel("MiB")
    right.set_title("memory", fontsize=10)
    for k, v in enumerate(mem.values()):
        right.text(k, v / 2**20, f"{v / 2**20:,.1f}", ha="center", va="bottom", fontsize=8)
    fig.suptitle(f"static lookup vs contextual forward pass, measured on this machine ({report.machine})", fontsize=10)
    fig.tight_layout()
    return fig


def layer_probe_figure(results: list[LayerProbeResult]) -> plt.Figure:
    """Probe accuracy against relative depth: pos and sense (solid), their controls (dashed), one
    panel per model; the input row and the static vector as flat lines; expected layers marked."""
    fig, axes = plt.subplots(1, len(results), figsize=(6.5 * len(results), 4.8), squeeze=False)
    colours = {"pos": "#2563eb", "sense": "#c2410c"}
    for ax, result in zip(axes[0], results, strict=True):
        top = result.num_layers
        layers = list(range(top + 1))
        for task, colour in colours.items():
            acc = [result.value(system=result.model, layer=layer, split=task) for layer in layers]
            ctl = [result.value(system=result.model, layer=layer, split=f"{task}-control") for layer in layers]
            ax.plot(layers, acc, marker="o", color=colour, lw=2, label=task)
            ax.plot(layers, ctl, ls="--", color=colour, alpha=0.6, label=f"{task} control")
            row = result.value(system=f"{result.model} input row", split=task)
            ax.axhline(row, color=colour, ls=":", lw=1, alpha=0.8)
            expected = result.expected_layer.get(task)
            if expected is not None:
                ax.axvline(expected, color=colour, lw=1, alpha=0.4)
                ax.text(
                    expected,
                    0.02,
                    f" E[{task}] = {expected:.1f}",
                    color=colour,
                    fontsize=8,
                    rotation=90,
                    va="bottom",
                    transform=ax.get_xaxis_transform(),
                )
        ax.set_xticks(layers)
        ax.set_xlabel(f"{result.model} layer (dotted: input row)")
        ax.set_ylabel("probe accuracy (unseen lemmas)")
        ax.set_ylim(0, 1)
        ax.set_title(f"{result.model}: linear probes per layer ({result.size} data)", fontsize=10)
        # below the axes: inside, it covered the pos curve (which sits near the top at every layer)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=4, frameon=False)
    fig.tight_layout()
    return fig
