"""Matplotlib figures (PNG) for the lesson's analyses: explorer, ranking, attention, probe, trace.

Each function takes a result object and returns a figure; :func:`contextlens.reports.figures.save`
writes it. Reports draw; analyses only compute.
"""

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from contextlens.analyses.lesson.attention import AttentionResult  # noqa: E402
from contextlens.analyses.lesson.polysemy import Exploration, WordExploration  # noqa: E402
from contextlens.analyses.lesson.probe import ProbeResult  # noqa: E402
from contextlens.analyses.lesson.ranking import Ranking  # noqa: E402
from contextlens.analyses.lesson.same_sense import SameSenseAnswer  # noqa: E402
from contextlens.analyses.lesson.trace import Trace  # noqa: E402
from contextlens.reports.figures import baseline_band  # noqa: E402
from contextlens.reports.plot_style import short_marked  # noqa: E402

SENSE_COLOURS = ["#c2410c", "#1d4ed8", "#15803d", "#7c3aed", "#0e7490", "#be123c", "#a16207"]


def sentence_labels(word: WordExploration, width: int = 38) -> list[str]:
    """Short row labels for a word's sentences: sense and the start of the sentence."""
    out = []
    for i, (occ, sense) in enumerate(zip(word.occurrences, word.senses, strict=True), 1):
        text = short_marked(occ.marked(), width)
        out.append(f"{i}. {sense + ': ' if sense else ''}{text}")
    return out


def _sense_colours(senses: list[str | None]) -> dict[str | None, str]:
    order = list(dict.fromkeys(senses))
    return {s: SENSE_COLOURS[i % len(SENSE_COLOURS)] for i, s in enumerate(order)}


def explore_figure(result: Exploration) -> plt.Figure:
    """Per word: the cosine heatmap at the chosen layer and the PCA projection; then the gap per layer."""
    words = result.words
    fig = plt.figure(figsize=(14, 5.2 * len(words) + 4.5))
    grid = fig.add_gridspec(len(words) + 1, 2, width_ratios=[1.35, 1], height_ratios=[5.2] * len(words) + [4.2])
    low = result.colour_floor  # one colour scale for every word, so spreads compare by eye
    for row, w in enumerate(words):
        _heatmap(fig.add_subplot(grid[row, 0]), w, low)
        _pca(fig.add_subplot(grid[row, 1]), w)
    _gap_lines(fig.add_subplot(grid[len(words), 0]), result)
    _mean_cosine_lines(fig.add_subplot(grid[len(words), 1]), result)
    fig.suptitle(
        f"Polysemy explorer — {result.model}, layer {result.layer} (words ranked by spread)", fontsize=14, y=1.0
    )
    fig.tight_layout()
    return fig


def _heatmap(ax: plt.Axes, w: WordExploration, low: float) -> None:
    m = w.matrix
    im = ax.imshow(m, cmap="viridis", vmin=low, vmax=1.0)
    labels = sentence_labels(w)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xticks(range(len(labels)), [str(i) for i in range(1, len(labels) + 1)], fontsize=7)
    colours = _sense_colours(w.senses)
    for tick, sense in zip(ax.get_yticklabels(), w.senses, strict=True):
        tick.set_color(colours[sense])
    n = len(labels)
    if n <= 16:
        for i in range(n):
            for j in range(n):
                ax.text(
                    j,
                    i,
                    f"{m[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=5.5,
                    color="white" if m[i, j] < (low + 1) / 2 else "black",
                )
    gap = "" if w.gap is None else f", gap {w.gap:+.3f} (p={w.p_value:.3f})"
    ax.set_title(f"“{w.word}”: cosine at layer {w.layer} — spread {w.spread:.3f}{gap}", fontsize=10)
    plt.colorbar(im, ax=ax, fraction=0.04, pad=0.02)


def _pca(ax: plt.Axes, w: WordExploration) -> None:
    colours = _sense_colours(w.senses)
    for sense in colours:
        idx = [i for i, s in enumerate(w.senses) if s == sense]
        ax.scatter(
            w.pca[idx, 0],
            w.pca[idx, 1],
            s=60,
            color=colours[sense],
            label=sense or "unlabelled",
            edgecolor="white",
            linewidth=0.8,
        )
        for i in idx:
            ax.annotate(str(i + 1), (w.pca[i, 0], w.pca[i, 1]), xytext=(4, 3), textcoords="offset points", fontsize=7)
    ev = w.pca_explained
    ax.set_xlabel(f"PC1 ({ev[0]:.0%} of variance)")
    ax.set_ylabel(f"PC2 ({ev[1]:.0%})")
    ax.set_title(f"“{w.word}”: hidden states at layer {w.layer}, PCA", fontsize=10)
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)


def _gap_lines(ax: plt.Axes, result: Exploration) -> None:
    drawn = False
    for i, w in enumerate(result.words):
        if w.gaps is None:
            continue
        colour = SENSE_COLOURS[i % len(SENSE_COLOURS)]
        ax.plot(w.layers, w.gaps, marker="o", lw=2, color=colour, label=w.word)
        sig = [k for k, p in enumerate(w.p_values or []) if p < 0.05]
        ax.scatter([w.layers[k] for k in sig], [w.gaps[k] for k in sig], s=90, facecolor="none", edgecolor=colour)
        drawn = True
    ax.axhline(0, color="#444", lw=1)
    ax.set_xlabel("layer (0 = embedding output)")
    ax.set_ylabel("same-sense − cross-sense cosine")
    title = "Separation gap per layer (open circle: permutation p < 0.05"
    reasons = sorted({w.no_gap_reason for w in result.words if w.no_gap_reason})
    missing = "No separation gap: " + "; ".join(reasons) if reasons else "No separation gap"
    shuffles = f"{result.permutations} shuffles, smallest possible p {result.p_floor:.4f})"
    ax.set_title(f"{title}, {shuffles}" if drawn else textwrap.fill(missing, 70), fontsize=10)
    if drawn:
        ax.legend(fontsize=8, ncol=min(5, len(result.words)))
        ax.set_xticks(result.words[0].layers)
    ax.grid(alpha=0.3)


def _mean_cosine_lines(ax: plt.Axes, result: Exploration) -> None:
    """Each word's mean pairwise cosine (1 - spread) per layer over the random-word band."""
    first = result.words[0]
    baseline_band(ax, first.layers, first.layer_baselines())
    for i, w in enumerate(result.words):
        ax.plot(w.layers, w.mean_cosines, marker="o", lw=2, color=SENSE_COLOURS[i % len(SENSE_COLOURS)], label=w.word)
    ax.set_xlabel("layer (0 = embedding output)")
    ax.set_ylabel("mean pairwise cosine (1 − spread)")
    ax.set_xticks(first.layers)
    ax.set_title("Each word's mean cosine beside random pairs of different words", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)


def slope_figure(result: Ranking) -> plt.Figure:
    """Slope chart: each pair's rank under the static cosine (left) and the contextual cosine (right)."""
    n = len(result.pairs)
    fig, ax = plt.subplots(figsize=(8.5, max(5.0, 0.36 * n + 1.5)))
    moved = {id(p) for p in result.top_moves}
    for p in result.pairs:
        big = id(p) in moved
        colour = ("#15803d" if p.move > 0 else "#c2410c") if big else "#9ca3af"
        ax.plot([0, 1], [p.static_rank, p.contextual_rank], color=colour, lw=2.4 if big else 1.1, marker="o")
        label = f"{p.pair.a}–{p.pair.b}"
        ax.text(
            -0.03,
            p.static_rank,
            f"{label}  {p.static_cosine:.2f}",
            ha="right",
            va="center",
            fontsize=8,
            color=colour if big else "#333",
        )
        ax.text(
            1.03,
            p.contextual_rank,
            f"{p.contextual_cosine:.2f}  {label}",
            ha="left",
            va="center",
            fontsize=8,
            color=colour if big else "#333",
        )
    ax.set_ylim(n + 0.7, 0.3)
    ax.set_xlim(-0.65, 1.65)
    ax.set_xticks(
        [0, 1],
        [f"static cosine\n({result.static_model})", f"contextual cosine\n({result.model}, layer {result.layer})"],
    )
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(
        f"Rank of {n} word pairs (1 = most similar): {result.inversions} inversions, "
        f"Kendall τ = {result.kendall_tau:.3f}\n"
        f"template: {result.template!r}; coloured: the {len(result.top_moves)} largest moves",
        fontsize=10,
    )
    return fig


def attention_figure(result: AttentionResult) -> plt.Figure:
    """Top row: token × layer heatmap of each target's head-mean attention; bottom row: token × token
    attention at the chosen layer and head."""
    maps = result.maps
    fig, axes = plt.subplots(2, len(maps), figsize=(6.2 * len(maps), 10.5), squeeze=False)
    for col, amap in enumerate(maps):
        ax = axes[0, col]
        data = amap.head_mean.T  # (seq, L)
        im = ax.imshow(data, cmap="magma_r", aspect="auto", vmin=0, vmax=max(float(data.max()), 1e-9))
        ax.set_yticks(range(len(amap.tokens)), _token_labels(amap.display_tokens, amap.target_positions), fontsize=8)
        ax.set_xticks(range(amap.num_layers), [str(i) for i in range(1, amap.num_layers + 1)], fontsize=8)
        ax.set_xlabel("attention layer (block)")
        target = " ".join(amap.display_target_tokens)
        ax.set_title(f"{textwrap.fill(amap.occurrence.marked(), 60)}\n“{target}” attends to (head mean)", fontsize=9)
        plt.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
        ax = axes[1, col]
        m = amap.matrix(result.layer, result.head)
        im = ax.imshow(m, cmap="magma_r", vmin=0, vmax=max(float(m.max()), 1e-9))
        labels = _token_labels(amap.display_tokens, amap.target_positions)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.set_xticks(range(len(labels)), labels, fontsize=8, rotation=60, ha="right")
        ax.set_ylabel("from token (query)")
        ax.set_xlabel("to token (key)")
        for p in amap.target_positions:
            ax.add_patch(plt.Rectangle((-0.5, p - 0.5), len(labels), 1, fill=False, edgecolor="#1d4ed8", lw=1.8))
        ax.set_title(f"layer {result.layer}, head {result.head}: token × token", fontsize=9)
        plt.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    excluded = " (special tokens excluded, rows renormalised)" if maps[0].exclude_special else ""
    fig.suptitle(f"Attention from the target — {result.model}{excluded}", fontsize=12)
    fig.tight_layout()
    return fig


def _token_labels(tokens: list[str], targets: list[int]) -> list[str]:
    return [f"▶ {t}" if i in targets else t for i, t in enumerate(tokens)]


def probe_figure(result: ProbeResult) -> plt.Figure:
    """The seed's bar chart (score per anchor at the chosen layer) and each score across layers."""
    groups = result.static_groups()
    fig, (bars, lines) = plt.subplots(1, 2, figsize=(14, 5), gridspec_kw={"width_ratios": [1, 1.2]})
    scores = np.vstack([result.at(), *[row for _, row in groups]]) if groups else result.at()
    names = [s.occurrence.marked() for s in result.sentences]
    names += [f"static {result.static_model}: {word} (any sentence)" for word, _ in groups]
    width = 0.8 / len(result.anchors)
    x = np.arange(len(names))
    for j, anchor in enumerate(result.anchors):
        colour = SENSE_COLOURS[j % len(SENSE_COLOURS)]
        pos = x - 0.4 + width * (j + 0.5)
        bars.bar(pos, scores[:, j], width * 0.92, color=colour, label=anchor)
        for px, v in zip(pos, scores[:, j], strict=True):
            bars.text(
                px,
                v + (0.01 if v >= 0 else -0.01),
                f"{v:.2f}",
                ha="center",
                va="bottom" if v >= 0 else "top",
                fontsize=8,
            )
    bars.set_xticks(x, [textwrap.fill(name, 28) for name in names], fontsize=8)
    if groups:
        bars.axvline(len(result.sentences) - 0.5, color="#999", ls=":", lw=1)
    bars.axhline(0, color="#444", lw=0.8)
    base = result.layer_baselines()[result.layers.index(result.layer)]
    if base is not None:  # over the contextual sentences only: the static scores have no such baseline
        span = [-0.5, len(result.sentences) - 0.5]
        bars.fill_between(span, base["p5"], base["p95"], color="#9ca3af", alpha=0.25, zorder=0,
                          label="random words, 5-95th pct")  # fmt: skip
        bars.plot(span, [base["mean"]] * 2, color="#6b7280", ls="--", lw=1.2, label="random words, mean")
    bars.set_ylim(min(0.0, float(scores.min()) * 1.15), max(0.05, float(scores.max()) * 1.15))
    bars.set_ylabel("cosine with the anchor")
    bars.set_title(f"target vs anchors at layer {result.layer}", fontsize=10)
    bars.legend(fontsize=8)
    styles = ["-", "--", ":", "-."]
    baseline_band(lines, result.layers, result.layer_baselines())
    for i, s in enumerate(result.sentences):
        for j, anchor in enumerate(result.anchors):
            short = short_marked(s.occurrence.marked(), 30)
            lines.plot(
                result.layers,
                s.scores[:, j],
                ls=styles[i % len(styles)],
                marker="o",
                ms=3,
                color=SENSE_COLOURS[j % len(SENSE_COLOURS)],
                label=f"{i + 1}. {short} · {anchor}",
            )
    lines.set_xlabel("layer (0 = embedding output)")
    lines.set_ylabel("cosine with the anchor")
    lines.set_xticks(result.layers)
    lines.set_title("the same scores across layers", fontsize=10)
    lines.legend(fontsize=7)
    lines.grid(alpha=0.3)
    fig.suptitle(f"Sense probe — {result.model} (anchors: {', '.join(result.anchors)})", fontsize=12)
    fig.tight_layout()
    return fig


def trace_figure(result: Trace) -> plt.Figure:
    """Cosine to the input row and norm per layer, and the target's attention per layer."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5), gridspec_kw={"width_ratios": [1, 1.1]})
    layers = [t.layer for t in result.layers]
    left.plot(
        layers,
        [t.cosine_to_input_row for t in result.layers],
        marker="o",
        color="#c2410c",
        lw=2,
        label="cosine to its input row",
    )
    left.set_ylim(min(0.0, min(t.cosine_to_input_row for t in result.layers) - 0.05), 1.05)
    left.set_xlabel("layer (0 = embedding output)")
    left.set_ylabel("cosine to the input row", color="#c2410c")
    left.set_xticks(layers)
    left.grid(alpha=0.3)
    twin = left.twinx()
    twin.plot(layers, [t.norm for t in result.layers], marker="s", color="#1d4ed8", lw=1.5, ls="--", label="norm")
    twin.axhline(result.target_input_row_norm, color="#1d4ed8", lw=1, ls=":", label="input row norm")
    twin.set_ylabel("norm of the hidden state", color="#1d4ed8")
    handles = left.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    # below the axes: inside, the twin axis's lines (drawn over the left axis) struck the entries through
    left.legend(
        handles, [h.get_label() for h in handles], fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13),
        ncol=3, frameon=False,
    )  # fmt: skip
    left.set_title(f"“{' '.join(result.display_target_tokens)}”: how much of the input row is left", fontsize=10)
    data = result.attention_rows.T
    im = right.imshow(data, cmap="magma_r", aspect="auto", vmin=0, vmax=max(float(data.max()), 1e-9))
    right.set_yticks(
        range(len(result.tokens)), _token_labels(result.display_tokens, result.target_positions), fontsize=8
    )
    right.set_xticks(range(data.shape[1]), [str(i) for i in range(1, data.shape[1] + 1)], fontsize=8)
    right.set_xlabel("attention layer (block)")
    right.set_title("what the target attends to (head mean)", fontsize=10)
    plt.colorbar(im, ax=right, fraction=0.04, pad=0.02)
    fig.suptitle(f"Trace of {result.occurrence.marked()!r} — {result.model}", fontsize=12)
    fig.tight_layout()
    return fig


def same_sense_figure(answer: SameSenseAnswer) -> plt.Figure:
    """The rule's reliability diagram on the held-out test pairs (share that really is the same
    sense against P(same), per bin; the diagonal is perfect calibration), with this pair's P(same)."""
    rule = answer.rule
    fig, ax = plt.subplots(figsize=(6.5, 5))
    bins = rule.reliability
    ax.plot([0, 1], [0, 1], color="#9ca3af", ls=":", lw=1.2, label="perfect calibration")
    ax.bar(
        [(b["low"] + b["high"]) / 2 for b in bins],
        [b["share_same"] for b in bins],
        width=[0.9 * (b["high"] - b["low"]) for b in bins],
        color="#c7d2fe",
        edgecolor="#4338ca",
        label="share same sense (test pairs; count at the foot)",
    )
    ax.plot([b["mean_probability"] for b in bins], [b["share_same"] for b in bins], "o-", color="#4338ca", lw=1.4)
    for b in bins:  # the counts at the bars' foot, where this pair's line (which stops above them) cannot cross
        ax.text((b["low"] + b["high"]) / 2, 0.015, str(b["pairs"]), ha="center", va="bottom", fontsize=7)
    ax.axvline(answer.probability, ymin=0.07, color="#c2410c", lw=2,
               label=f"this pair: P(same) = {answer.probability:.2f}")  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("P(same sense), logistic fit on the dev pairs")
    ax.set_ylabel("share of test pairs that are the same sense")
    ax.set_title(
        f"same-sense rule — {rule.model}, layer {rule.layer}: test accuracy {rule.test_accuracy:.3f} "
        f"(chance {rule.chance:.3f}), ECE {rule.test_ece:.3f}",
        fontsize=9,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return fig
