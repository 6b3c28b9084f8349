"""Figures (matplotlib PNG) for analysis results. Reports draw; analyses only compute."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from contextlens.analyses.lesson.divergence import Comparison  # noqa: E402
from contextlens.analyses.lesson.sense_gap import same_and_cross  # noqa: E402
from contextlens.core.atomic_files import atomic_path  # noqa: E402
from contextlens.errors import OutputPathError  # noqa: E402


def save(fig: plt.Figure, path: Path | str) -> Path:
    """Write a figure (PNG unless the suffix says .svg/.pdf; parent folders created) and free it.

    Returns the path actually written. A failed write is an OutputPathError, one line.
    """
    path = Path(path)
    if path.suffix == "":
        path = path.with_name(path.name + ".png")
    try:
        with atomic_path(path) as tmp:  # a kill mid-write leaves the old figure, not a 0-byte file
            fig.savefig(tmp, dpi=130, bbox_inches="tight", format=path.suffix[1:].lower())
    except (OSError, ValueError) as exc:  # matplotlib: ValueError for an unknown format
        raise OutputPathError(f"cannot write {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    finally:
        plt.close(fig)
    return path


def divergence_figure(result: Comparison, title: str | None = None, labels: list[str] | None = None) -> plt.Figure:
    """The lesson's "same start, diverging paths": cosine of the target against layer.

    For two sentences one line; for more, one line per pair plus their mean. The static vector
    and the input row are drawn as flat lines at their cosine; the model's random-word baseline
    (5th-95th percentile of unrelated words' cosines, and its mean) as a grey band.
    """
    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    layers = result.layers
    n = result.n
    if n == 2:
        ax.plot(layers, result.layer_cosines, marker="o", lw=2.2, color="#c2410c", label="hidden state (contextual)")
    elif labels is not None:
        _sense_lines(ax, result, labels)
    else:
        label_each = n <= 4  # beyond a handful of pairs a legend entry per pair is noise
        all_pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
        for k, (i, j) in enumerate(all_pairs):
            label = f"sentences {i + 1}-{j + 1}" if label_each else ("each pair" if k == 0 else None)
            color = None if label_each else "#9ca3af"
            ax.plot(layers, result.matrices[:, i, j], lw=1, alpha=0.55, color=color, label=label)
        ax.plot(layers, result.layer_cosines, marker="o", lw=2.6, color="#c2410c", label="mean over pairs")
    bands = result.layer_baselines()
    baseline_band(ax, layers, bands)
    # both lines sit at 1.0 for one word: the static line wide and pale, the input row dotted on top of it
    if result.static_cosine is not None:
        ax.axhline(
            result.static_cosine, color="#1d4ed8", ls="-", lw=6, alpha=0.3, label=f"static ({result.static_model})"
        )
    ax.axhline(result.input_row_cosine, color="#15803d", ls=(0, (1, 1.5)), lw=2.2, label="input row (embedding table)")
    worst = result.most_divergent_layer
    at = result.layer_cosines[layers.index(worst)]
    ax.plot([worst], [at], "o", ms=13, mfc="none", mec="#b91c1c", mew=1.8)  # a ring, no arrow across the band
    right_half = layers.index(worst) > len(layers) / 2  # the text on the inner side, inside the axes
    ax.annotate(
        f"most divergent: layer {worst}", xy=(worst, at), xytext=(-12 if right_half else 12, -16),
        textcoords="offset points", ha="right" if right_half else "left", color="#b91c1c", fontsize=9,
    )  # fmt: skip
    words = sorted({o.word.lower() for o in result.occurrences})
    ax.set_title(title or f"“{'/'.join(words)}” across {n} sentences — {result.model}")
    ax.set_xlabel("layer (0 = embedding output)")
    ax.set_ylabel("cosine similarity")
    ax.set_xticks(layers)
    low = min(min(result.layer_cosines), float(result.matrices.min()), *[b["p5"] for b in bands if b is not None])
    ax.set_ylim(max(-1.0, low - 0.1), 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)  # outside: it covered the band
    fig.tight_layout()
    return fig


def _sense_lines(ax: plt.Axes, result: Comparison, labels: list[str]) -> None:
    """Each same-sense and cross-sense pair's line, their two means, and the mean over all pairs."""
    layers, n = result.layers, result.n
    means = same_and_cross(result.matrices, labels)
    for same, color, name in ((True, "#7c3aed", "same-sense"), (False, "#9ca3af", "cross-sense")):
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if (labels[i] == labels[j]) == same]
        for k, (i, j) in enumerate(pairs):
            ax.plot(
                layers,
                result.matrices[:, i, j],
                lw=1,
                alpha=0.5,
                color=color,
                label=f"{name} pairs" if k == 0 else None,
            )
        ax.plot(layers, means[0 if same else 1], lw=2.6, marker="s", color=color, label=f"{name} mean")
    ax.plot(layers, result.layer_cosines, marker="o", lw=2.6, color="#c2410c", label="mean over all pairs")


def baseline_band(ax: plt.Axes, layers: list[int], bands: list[dict[str, float] | None]) -> None:
    """The random-word baseline per layer as a grey 5-95th percentile band with its mean dashed
    (compare, explore and probe draw the same band); nothing without a baseline."""
    if not bands or bands[0] is None:
        return
    ax.fill_between(
        layers,
        [b["p5"] for b in bands],
        [b["p95"] for b in bands],
        color="#9ca3af",
        alpha=0.25,
        label="random words, 5-95th pct",
    )
    ax.plot(layers, [b["mean"] for b in bands], color="#6b7280", ls="--", lw=1.2, label="random words, mean")
