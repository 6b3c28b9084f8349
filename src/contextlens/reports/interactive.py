"""Interactive plotly figures and self-contained HTML pages for the lesson's analyses.

The pages open with no network: plotly.js is inlined once per page (no CDN), no fonts, images or
scripts are fetched. Each ``*_figures`` function takes a result object and returns plotly figures;
:func:`write_page` (:mod:`.html_page`, named here too) puts them into one HTML file.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from contextlens.analyses.lesson.attention import AttentionResult
from contextlens.analyses.lesson.divergence import Comparison
from contextlens.analyses.lesson.probe import ProbeResult
from contextlens.analyses.lesson.ranking import Ranking
from contextlens.analyses.lesson.same_sense import SameSenseAnswer
from contextlens.analyses.lesson.trace import Trace
from contextlens.analyses.representations.cka import CkaResult
from contextlens.analyses.search.cost import CostReport
from contextlens.reports.explorer_figures import explore_figures, explore_layer_figures, word_figure_parts  # noqa: F401 - named here too
from contextlens.reports.html_page import figure_div, page, remote_resources, write_page  # noqa: F401 - the faces' names
from contextlens.reports.plot_style import COLOURS, FIT_JS, LAYOUT, PLOT_CONFIG, short_marked  # noqa: E402,F401 - the house style
from contextlens.reports.plotly_parts import baseline_band, plain, token_labels  # noqa: F401 - named here too


def divergence_figures(result: Comparison) -> list[go.Figure]:
    """Interactive version of the divergence figure: cosine of the target against layer."""
    fig = go.Figure()
    baseline_band(fig, result.layers, result.layer_baselines())
    _pair_lines(fig, result)
    # the static and input-row lines are flat and, for one word, both at 1.0: drawn as legend traces,
    # the static one wide and pale, the input row dotted on top of it, so both stay visible
    ends = [result.layers[0], result.layers[-1]]
    if result.static_cosine is not None:
        fig.add_scatter(
            x=ends, y=[result.static_cosine] * 2, mode="lines", name=plain(f"static ({result.static_model})"),
            line={"color": COLOURS[1], "width": 9}, opacity=0.3,
        )  # fmt: skip
    fig.add_scatter(
        x=ends, y=[result.input_row_cosine] * 2, mode="lines", name="input row (embedding table)",
        line={"color": COLOURS[2], "width": 2.5, "dash": "dot"},
    )  # fmt: skip
    # the label hangs below the lowest curve at that layer: above it lie the pair lines and, at 1.0,
    # the static and input-row lines it sat on; it leans into the plot from the nearer side
    worst = result.most_divergent_layer
    at = result.layers.index(worst)
    lowest = min(result.layer_cosines[at], result.lowest_pair_cosines[at])
    side = "right" if at > (len(result.layers) - 1) / 2 else "left"
    fig.add_annotation(
        x=worst, y=lowest, text=f"most divergent: layer {worst}", showarrow=True, arrowhead=0, ax=0, ay=20,
        xanchor=side, font={"color": "#b91c1c"},
    )  # fmt: skip
    words = "/".join(sorted({o.word.lower() for o in result.occurrences}))
    fig.update_layout(
        **LAYOUT,
        title=plain(f"“{words}” across {result.n} sentences — {result.model}"),
        height=470,
        legend={"orientation": "h", "x": 0, "y": -0.22},  # below: at the side it covered the band
        xaxis_title="layer (0 = embedding output)",
        yaxis_title="cosine similarity",
    )
    return [fig]


def _pair_lines(fig: go.Figure, result: Comparison) -> None:
    """The hidden state's cosine per layer: one line for two sentences, else each pair's and their mean."""
    if result.n == 2:
        fig.add_scatter(
            x=result.layers,
            y=result.layer_cosines,
            mode="lines+markers",
            name="hidden state",
            line={"color": COLOURS[0], "width": 3},
        )
    else:
        for i in range(result.n):
            for j in range(i + 1, result.n):
                fig.add_scatter(
                    x=result.layers,
                    y=result.matrices[:, i, j],
                    mode="lines",
                    opacity=0.5,
                    name=f"sentences {i + 1}-{j + 1}",
                    line={"width": 1},
                )
        fig.add_scatter(
            x=result.layers,
            y=result.layer_cosines,
            mode="lines+markers",
            name="mean over pairs",
            line={"color": COLOURS[0], "width": 3},
        )


COUNTS_CLEAR = 0.1  # share of the plot's height left to the counts at the bars' foot (y = 0.03 of 1.05)


def same_sense_figures(answer: SameSenseAnswer) -> list[go.Figure]:
    """Interactive reliability diagram of the same-sense rule on the test pairs, with this pair's P(same)."""
    rule, bins = answer.rule, answer.rule.reliability
    fig = go.Figure()
    centres = [(b["low"] + b["high"]) / 2 for b in bins]
    fig.add_bar(
        x=centres,
        y=[b["share_same"] for b in bins],
        width=[0.9 * (b["high"] - b["low"]) for b in bins],
        name="share same sense (test pairs; count at the foot)",
        marker_color="#c7d2fe",
    )
    # the counts level at each bar's foot, not on the bar: there plotly turned them on end in a
    # phone's narrow bars, across "this pair" at the top of the line
    fig.add_scatter(
        x=centres, y=[0.03] * len(bins), mode="text", text=[str(b["pairs"]) for b in bins],
        textfont={"size": 10, "color": "#374151"}, showlegend=False, hoverinfo="skip",
    )  # fmt: skip
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dot", "color": "#9ca3af"}, name="calibrated")
    # this pair's line stops above the counts' row (issue 33: at 390 px it crossed the count of its bin)
    fig.add_vline(x=answer.probability, line_color=COLOURS[0], y0=COUNTS_CLEAR, y1=1,
                  annotation_text=f"this pair {answer.probability:.2f}")  # fmt: skip
    fig.update_layout(
        **LAYOUT,
        title=plain(
            f"same-sense rule — {rule.model}, layer {rule.layer}: test accuracy {rule.test_accuracy:.3f} "
            f"(chance {rule.chance:.3f}), ECE {rule.test_ece:.3f}"
        ),
        height=420,
        xaxis={"title": "P(same sense), logistic fit on the dev pairs", "range": [0, 1]},
        yaxis={"title": "share of test pairs that are the same sense", "range": [0, 1.05]},
    )
    return [fig]


def slope_figures(result: Ranking) -> list[go.Figure]:
    fig = go.Figure()
    moved = {id(p) for p in result.top_moves}
    for p in result.pairs:
        big = id(p) in moved
        colour = (COLOURS[2] if p.move > 0 else COLOURS[0]) if big else "#9ca3af"
        name = plain(f"{p.pair.a}–{p.pair.b}")
        fig.add_scatter(
            x=["static", "contextual"],
            y=[p.static_rank, p.contextual_rank],
            mode="lines+markers+text",
            name=name,
            text=[f"{name} {p.static_cosine:.2f}", f"{p.contextual_cosine:.2f} {name}"],
            textposition=["middle left", "middle right"],
            line={"color": colour, "width": 3 if big else 1.2},
            hovertemplate=f"{name}: static {p.static_cosine:.3f} (rank {p.static_rank:g}), contextual "
            f"{p.contextual_cosine:.3f} (rank {p.contextual_rank:g})<extra></extra>",
        )
    fig.update_yaxes(autorange="reversed", title="rank (1 = most similar)")
    fig.update_layout(
        **LAYOUT,
        height=max(500, 28 * len(result.pairs) + 150),
        showlegend=False,
        meta={"wide": True},  # its pair labels need the width: on a phone fit.js shrinks their font
        title=f"{len(result.pairs)} pairs: {result.inversions} inversions, Kendall τ = "
        f"{result.kendall_tau:.3f} ({plain(result.static_model)} vs {plain(result.model)} layer {result.layer})",
    )
    fig.update_xaxes(range=[-0.9, 1.9])
    return [fig]


def attention_grid_title(result: AttentionResult, layer: int | None = None, head: int | None = None) -> str:
    """The token × token figure's title at ``layer``/``head`` (default: the result's)."""
    note = " (special tokens excluded, rows renormalised)" if result.maps[0].exclude_special else ""
    layer = result.layer if layer is None else layer
    head = result.head if head is None else head
    return f"Layer {layer}, head {head}: token × token, the target's row outlined{note}"


def attention_figures(result: AttentionResult) -> list[go.Figure]:
    """Per target: its head-mean row per layer, its rollout row per layer, then token × token at the
    chosen layer and head with the target's row outlined (the last figure: a face swaps its z)."""
    n = len(result.maps)
    titles = [plain(short_marked(m.occurrence.marked(), 50)) for m in result.maps]
    rows = make_subplots(rows=1, cols=n, subplot_titles=titles, horizontal_spacing=0.15)
    rolled = make_subplots(rows=1, cols=n, subplot_titles=titles, horizontal_spacing=0.15)
    grid = make_subplots(rows=1, cols=n, subplot_titles=titles, horizontal_spacing=0.15)
    row_max = max(float(m.head_mean.max()) for m in result.maps)  # one colour scale for all panels
    roll_max = max(float(m.rollout.max()) for m in result.maps)
    grid_max = max(float(m.matrix(result.layer, result.head).max()) for m in result.maps)
    for col, m in enumerate(result.maps, 1):
        labels = token_labels(m.display_tokens, m.target_positions)
        layers = [str(i) for i in range(1, m.num_layers + 1)]
        for fig, z, top, what in ((rows, m.head_mean, row_max, "head mean"), (rolled, m.rollout, roll_max, "rollout")):
            _layer_panel(fig, z, layers, labels, top, what, col, n)
        grid.add_trace(
            go.Heatmap(
                z=m.matrix(result.layer, result.head),
                x=labels,
                y=labels,
                colorscale="Magma",
                reversescale=True,
                zmin=0,
                zmax=grid_max,
                showscale=col == n,
                hovertemplate="from %{y} to %{x}: %{z:.3f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        grid.update_yaxes(autorange="reversed", title="from (attending token)" if col == 1 else None, row=1, col=col)
        grid.update_xaxes(title="to (attended token)", row=1, col=col)
        axis = "" if col == 1 else str(col)
        for t in m.target_positions:  # the target's row: what the other figures show, outlined
            grid.add_shape(
                type="rect", xref=f"x{axis}", yref=f"y{axis}", x0=-0.5, x1=len(labels) - 0.5, y0=t - 0.5, y1=t + 0.5,
                line={"color": "#2563eb", "width": 3}, fillcolor="rgba(0,0,0,0)",
            )  # fmt: skip
    note = " (special tokens excluded, rows renormalised)" if result.maps[0].exclude_special else ""
    rows.update_layout(**LAYOUT, height=460, title=f"What the target attends to, per layer (head mean){note}")
    rolled.update_layout(
        **LAYOUT, height=460,
        title=f"Attention rollout of the target: carried through the residual stream up to each layer{note}",
    )  # fmt: skip
    grid.update_layout(**LAYOUT, height=520, title=attention_grid_title(result))
    return [rows, rolled, grid]


def _layer_panel(
    fig: go.Figure, z: np.ndarray, layers: list[str], labels: list[str], top: float, what: str, col: int, n: int
) -> None:
    """One target's attention row per layer (head mean or rollout) as a heatmap in column ``col`` of ``n``."""
    fig.add_trace(
        go.Heatmap(
            z=z.T,
            x=layers,
            y=labels,
            colorscale="Magma",
            reversescale=True,
            zmin=0,
            zmax=top,
            showscale=col == n,
            hovertemplate=f"layer %{{x}}, to %{{y}}: %{{z:.3f}} ({what})<extra></extra>",
        ),
        row=1,
        col=col,
    )
    fig.update_yaxes(autorange="reversed", title="attended token" if col == 1 else None, row=1, col=col)
    fig.update_xaxes(title="attention layer (block)", row=1, col=col)


def probe_figures(result: ProbeResult) -> list[go.Figure]:
    """The seed's bar chart at the chosen layer, and the scores across layers."""
    groups = result.static_groups()
    scores = np.vstack([result.at(), *[row for _, row in groups]]) if groups else result.at()
    names = [plain(short_marked(s.occurrence.marked(), 50)) for s in result.sentences]
    static_names = [plain(f"static {result.static_model}: {word} (any sentence)") for word, _ in groups]
    bars = go.Figure()
    for j, anchor in enumerate(result.anchors):
        bars.add_bar(
            x=names + static_names,
            y=scores[:, j],
            name=plain(anchor),
            marker_color=COLOURS[j % len(COLOURS)],
            text=[f"{v:.2f}" for v in scores[:, j]],
            textposition="outside",
        )
    base = result.layer_baselines()[result.layers.index(result.layer)]
    if base is not None:
        n = len(result.sentences)  # over the contextual sentences only: the static scores have no such baseline
        bars.add_shape(
            type="rect", xref="x", x0=-0.5, x1=n - 0.5, y0=base["p5"], y1=base["p95"],
            fillcolor="rgba(156,163,175,0.3)", line_width=0, layer="below",
        )  # fmt: skip
        bars.add_shape(
            type="line", xref="x", x0=-0.5, x1=n - 0.5, y0=base["mean"], y1=base["mean"],
            line={"color": "#6b7280", "dash": "dash"},
        )  # fmt: skip
        bars.add_annotation(  # above the plot, where no bar reaches (fit.js wraps it on a phone)
            xref="paper", yref="paper", x=0, y=1, xanchor="left", yanchor="bottom", showarrow=False,
            text="random words: mean (dashed), 5-95th pct (grey)",
        )  # fmt: skip
    bars.update_layout(
        **LAYOUT,
        barmode="group",
        height=430,
        yaxis_title="cosine with the anchor",
        title=f"Sense probe at layer {result.layer} — {plain(result.model)}",
    )
    lines = go.Figure()
    baseline_band(lines, result.layers, result.layer_baselines())
    dashes = ["solid", "dash", "dot", "dashdot"]
    for i, s in enumerate(result.sentences):
        for j, anchor in enumerate(result.anchors):
            lines.add_scatter(
                x=result.layers,
                y=s.scores[:, j],
                mode="lines+markers",
                name=plain(f"{i + 1}. {anchor}"),
                line={"color": COLOURS[j % len(COLOURS)], "dash": dashes[i % len(dashes)]},
                hovertemplate=f"{names[i]} · {plain(anchor)}<br>layer %{{x}}: %{{y:.3f}}<extra></extra>",
            )
    lines.update_layout(
        **LAYOUT,
        height=420,
        title="The same scores across layers",
        xaxis_title="layer (0 = embedding output)",
        yaxis_title="cosine with the anchor",
    )
    return [bars, lines]


def trace_figures(result: Trace) -> list[go.Figure]:
    layers = [t.layer for t in result.layers]
    fig = make_subplots(
        rows=1,
        cols=2,
        specs=[[{"secondary_y": True}, {}]],
        horizontal_spacing=0.14,
        subplot_titles=("cosine to the input row and norm", "what the target attends to (head mean)"),
    )
    fig.add_trace(
        go.Scatter(
            x=layers,
            y=[t.cosine_to_input_row for t in result.layers],
            name="cosine to input row",
            mode="lines+markers",
            line={"color": COLOURS[0], "width": 3},
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=layers,
            y=[t.norm for t in result.layers],
            name="norm",
            mode="lines+markers",
            line={"color": COLOURS[1], "dash": "dash"},
        ),
        row=1,
        col=1,
        secondary_y=True,
    )
    labels = token_labels(result.display_tokens, result.target_positions)
    fig.add_trace(
        go.Heatmap(
            z=result.attention_rows.T,
            x=[str(i) for i in range(1, len(layers))],
            y=labels,
            colorscale="Magma",
            reversescale=True,
            zmin=0,
            hovertemplate="layer %{x}, %{y}: %{z:.3f}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    fig.update_yaxes(autorange="reversed", row=1, col=2)
    fig.update_yaxes(title="cosine to the input row", row=1, col=1, secondary_y=False)
    # the norm's own axis: titled, and ticks at round steps (they were 10.693, 11.693...)
    fig.update_yaxes(title="norm (length) of the hidden state", tickmode="auto", tickformat=".1f", nticks=6,
                     showgrid=False, row=1, col=1, secondary_y=True)  # fmt: skip
    fig.update_xaxes(title="layer (0 = embedding output)", row=1, col=1)
    fig.update_xaxes(title="attention layer (block)", row=1, col=2)
    fig.update_layout(
        **LAYOUT,
        height=500,
        title=f"Trace of {plain(result.occurrence.marked())} — {plain(result.model)}",
        legend={"orientation": "h", "x": 0, "y": -0.22},
    )
    return [fig]


def cost_figures(report: CostReport) -> list[go.Figure]:
    """Interactive version of the cost figure: time per token and memory, static vs contextual, log scale."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"time per token ({report.ratio:,.0f}x)", "memory"))
    static, ctx = plain(report.static_name), plain(report.model_name)
    fig.add_bar(
        x=[f"{static} lookup", f"{ctx} forward"],
        y=[report.lookup_seconds_per_token, report.forward_seconds_per_token],
        marker_color=[COLOURS[1], COLOURS[0]],
        text=[f"{report.lookup_seconds_per_token:.2e} s", f"{report.forward_seconds_per_token:.2e} s"],
        row=1,
        col=1,
    )
    mem = [report.static_table_bytes, report.model_weight_bytes, report.activation_bytes]
    fig.add_bar(
        x=[f"{static} table", f"{ctx} weights", f"{ctx} activations (1 batch)"],
        y=[v / 2**20 for v in mem],
        marker_color=[COLOURS[1], COLOURS[0], COLOURS[6]],
        text=[f"{v / 2**20:,.1f} MiB" for v in mem],
        row=1,
        col=2,
    )
    fig.update_yaxes(type="log", title_text="seconds per token (median)", row=1, col=1)
    fig.update_yaxes(type="log", title_text="MiB", row=1, col=2)
    fig.update_layout(
        **LAYOUT,
        title=f"static lookup vs contextual forward pass, measured on {report.sentences} sentences",
        height=420,
        showlegend=False,
    )
    return [fig]


def cka_figures(result: CkaResult) -> list[go.Figure]:
    """Interactive version of the CKA heatmap: layers of A (rows) x layers of B (columns)."""
    m = result.matrix
    fig = go.Figure(
        go.Heatmap(
            z=m,
            x=[str(v) for v in result.layers_b],
            y=[str(v) for v in result.layers_a],
            zmin=0,
            zmax=1,
            colorscale="Viridis",
            text=[[f"{v:.2f}" for v in row] for row in m],
            texttemplate="%{text}",
            colorbar={"title": "CKA"},
            hovertemplate="layer %{y} x layer %{x}: CKA %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        **LAYOUT,
        title=f"linear CKA, {plain(result.model_a)} x {plain(result.model_b)}: {result.tokens:,} tokens of "
        f"{result.aligned_texts} {result.corpus} sentences",
        height=520,
        xaxis_title=f"{plain(result.model_b)} layer",
        yaxis_title=f"{plain(result.model_a)} layer",
    )
    return [fig]
