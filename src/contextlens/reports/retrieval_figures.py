"""The retrieval figure: quality against layer, and quality against bytes per vector."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from contextlens.analyses.benchmarks.result import BenchmarkResult  # noqa: E402

MAIN_METRIC = {"retrieval-lee": "ndcg@10", "retrieval-wordnet": "mrr"}
DTYPE_COLORS = {"float32": "#1d4ed8", "float16": "#0891b2", "int8": "#c2410c", "binary": "#7c3aed"}
STATIC_COLORS = ("#a16207", "#be185d", "#0f766e", "#6d28d9")
KIND_COLORS = {"input-row": "#15803d", "sentence": "#b91c1c", "hidden-mean": "#334155"}


def retrieval_figure(result: BenchmarkResult, metric: str | None = None) -> plt.Figure:
    """Left: the metric at each hidden layer, with input rows and the model's sentence embedding
    beside it. Right: the metric against bytes per vector (log scale) for the sentence embedding
    (for a model without one, its last-layer hidden mean; colour = dtype; solid = truncation,
    ending at the full dimension; dashed = PCA) with input rows in float32 for contrast."""
    metric = metric or MAIN_METRIC.get(result.benchmark) or result.rows[0]["metric"]
    rows = [r for r in result.rows if r["metric"] == metric]
    full = [r for r in rows if r["reduction"] is None and r["dtype"] == "float32"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [1, 1.35]})

    _layers_panel(left, result, full, metric)
    _cost_panel(right, rows, metric)
    meta = result.meta
    size = meta.get("documents") or meta.get("queries")
    fig.suptitle(f"{result.benchmark} — {result.model} ({size} {'documents' if 'documents' in meta else 'queries'})")
    fig.tight_layout()
    return fig


def _layers_panel(left: plt.Axes, result: BenchmarkResult, full: list[dict], metric: str) -> None:
    """The metric at each hidden layer, with input rows, the sentence embedding, static models and chance."""
    layers = sorted((r["layer"], r["value"]) for r in full if r["kind"] == "hidden-mean")
    left.plot([x for x, _ in layers], [y for _, y in layers], marker="o", color=KIND_COLORS["hidden-mean"],
              lw=2, label="hidden-mean at layer")  # fmt: skip
    for kind in ("input-row", "sentence"):
        value = next((r["value"] for r in full if r["kind"] == kind), None)
        if value is not None:
            left.axhline(value, color=KIND_COLORS[kind], ls="--" if kind == "input-row" else "-", lw=1.6,
                         label=f"{kind} ({value:.3f})")  # fmt: skip
    for n, r in enumerate(r for r in full if r["kind"] == "static"):
        left.axhline(r["value"], color=STATIC_COLORS[n % len(STATIC_COLORS)], ls="-.", lw=1.6,
                     label=f"static {r['static']}, no forward pass ({r['value']:.3f})")  # fmt: skip
    chance = result.meta.get(f"random_{metric}")
    if chance is not None:
        left.axhline(chance, color="#9ca3af", ls=":", lw=1.4, label=f"random order ({chance:.3f})")
    left.set_xlabel("layer (0 = embedding output)")
    left.set_ylabel(metric)
    step = max(1, -(-len(layers) // 16))  # at most ~16 tick labels
    left.set_xticks([x for x, _ in layers][::step])
    left.set_title("which kind, which layer (full dim, float32)")
    left.grid(alpha=0.3)
    left.legend(fontsize=8, loc="best")


def _cost_panel(right: plt.Axes, rows: list[dict], metric: str) -> None:
    """The metric against bytes per vector for the main system at each dtype and reduction, input rows beside."""
    # The cost sweep covers the sentence embedding, or for a model without one its last layer.
    has_sentence = any(r["kind"] == "sentence" for r in rows)
    top = max((r["layer"] for r in rows if r["kind"] == "hidden-mean"), default=None)
    main = ("sentence", None) if has_sentence else ("hidden-mean", top)
    main_label = "sentence" if has_sentence else f"hidden-mean L{top}"
    for system, width, alpha in ((main, 1.8, 1.0), (("input-row", None), 1.2, 0.55)):
        is_main = system == main
        for dtype in ("float32", "float16", "int8", "binary") if is_main else ("float32",):
            for reduction, style in (("truncate", "-"), ("pca", "--")):
                pts = sorted(
                    (r["bytes_per_vector"], r["value"])
                    for r in rows
                    if (r["kind"], r["layer"]) == system
                    and r["dtype"] == dtype
                    and (r["reduction"] == reduction or (reduction == "truncate" and r["reduction"] is None))
                )
                if not pts:
                    continue
                color = DTYPE_COLORS[dtype] if is_main else KIND_COLORS["input-row"]
                label = f"{main_label} {dtype}, {reduction}" if is_main else f"input-row float32, {reduction}"
                right.plot([x for x, _ in pts], [y for _, y in pts], ls=style, marker="o", ms=3.5, lw=width,
                           alpha=alpha, color=color, label=label)  # fmt: skip
    right.set_xscale("log", base=2)
    right.set_xlabel("bytes per vector (log scale)")
    right.set_ylabel(metric)
    right.set_title("quality against storage: dimension (truncate / PCA) x dtype")
    right.grid(alpha=0.3, which="both")
    right.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
