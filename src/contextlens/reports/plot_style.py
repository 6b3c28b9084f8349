"""The house style of every plotly figure: colours, layout and the toolbar's config.

A module of its own, with no plotly or analysis import, so a page that only passes the style on to
plotly.js in the browser (the sense map, the views) does not load the figure builders to get it.
"""

from __future__ import annotations

from pathlib import Path

COLOURS = ["#c2410c", "#1d4ed8", "#15803d", "#7c3aed", "#0e7490", "#be123c", "#a16207"]
# No button that sends a figure off the machine: plotly.js shows "Share chart..." (an upload to
# Plotly's cloud) unless told not to, and an empty server URL leaves it nowhere to send anyway.
# (plotly.js 3, in plotly 7, has no "Edit in Chart Studio" button and no option for it: naming
# showEditInChartStudio printed plotly's "Unrecognized config options" warning on every serve and demo.)
PLOT_CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "showSendToCloud": False,
    "plotlyServerURL": "",
}
LAYOUT = {"template": "plotly_white", "font": {"family": "sans-serif", "size": 12}, "margin": {"t": 70}}
# The script that fits a figure to a phone's width (panels stacked, the title below the toolbar):
# served by the web app as /static/fit.js and inlined in every report.
FIT_JS = Path(__file__).with_name("fit.js")


def short_marked(text: str, width: int) -> str:
    """A marked sentence (``The river [bank] flooded.``) cut to about ``width`` characters for a
    label, keeping the bracketed target: a plain cut at the end dropped it from a long sentence's label."""
    if len(text) <= width:
        return text
    start, end = text.find("["), text.find("]") + 1
    if start < 0 or end <= start or end <= width - 1:  # no target, or it lies in the first ``width``
        return text[: width - 1].rsplit(" ", 1)[0] + "…"
    room = max(width - 2, end - start)
    left = max(0, min(start - (room - (end - start)) // 2, len(text) - room))
    right = left + room
    before, after = text[left:start], text[end:right]
    head = text[:start] if left == 0 else "…" + before.split(" ", 1)[-1] if " " in before else "…"
    tail = after if right >= len(text) else after.rsplit(" ", 1)[0] + "…" if " " in after else "…"
    return head + text[start:end] + tail
