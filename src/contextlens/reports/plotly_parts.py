"""Pieces every plotly figure maker shares: labels shown literally, and the random-word baseline band."""

from __future__ import annotations

import html
from collections.abc import Sequence

import plotly.graph_objects as go


def plain(text: str) -> str:
    """Text shown literally in a plotly label: plotly reads <tags>, and tokens such as <s> are not tags."""
    return html.escape(text, quote=False)


def token_labels(tokens: Sequence[str], targets: Sequence[int]) -> list[str]:
    """Unique axis labels: position, a marker on the target, the token shown literally."""
    return [f"{i}:{'▶ ' if i in targets else ''}{plain(t)}" for i, t in enumerate(tokens)]


def baseline_band(fig: go.Figure, layers: list[int], bands: list[dict[str, float] | None]) -> None:
    """The random-word baseline per layer: a grey 5-95th percentile band and its mean dashed
    (compare, explore, probe); nothing without a baseline."""
    if not bands or bands[0] is None:
        return
    fig.add_scatter(x=layers, y=[b["p95"] for b in bands], mode="lines", line={"width": 0}, showlegend=False)
    fig.add_scatter(
        x=layers,
        y=[b["p5"] for b in bands],
        mode="lines",
        line={"width": 0},
        fill="tonexty",
        fillcolor="rgba(156,163,175,0.3)",
        name="random words, 5-95th pct",
    )
    fig.add_scatter(
        x=layers,
        y=[b["mean"] for b in bands],
        mode="lines",
        line={"color": "#6b7280", "dash": "dash", "width": 1},
        name="random words, mean",
    )
