"""The attention model view: every head of every layer at once for one target (BertViz's model view, offline).

The page's record (web/pages.py) serves ``GET /model-view``; its document is ``POST /api/attention``'s.

One ``attend`` call gives the target's attention row for all L layers x H heads (the document of
``POST /api/attention``); the page draws each (layer, head) as a small bar strip over the sentence's
tokens, in plain SVG (no script to load, nothing leaves the machine). A cell is a link to that
head's token map on ``/attention``; a token button highlights that token's bar in every cell, and
each cell's tooltip names its most-attended tokens. The head mean and the rollout close each row.
"""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import urlencode

from pydantic import Field, StrictBool, StrictInt

from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.errors import InputError
from contextlens.web.page import Served
from contextlens.web.runs import MAX_SENTENCES, MAX_TEXT, AttentionRequest, run_attention
from contextlens.web.runs import Request as Schema
from contextlens.web.tables import kind_line

EXAMPLE = "The river [bank] flooded after the storm."
CELL_W, CELL_H = 76, 34  # pixels of one small multiple
TOP = 3  # tokens named in a cell's tooltip


class ModelViewRequest(Schema):
    sentence: str = Field(min_length=1, max_length=MAX_TEXT, description="Target in [brackets].")
    word: str | None = Field(None, max_length=100)
    occurrence: StrictInt = Field(0, ge=-MAX_SENTENCES, le=MAX_TEXT)
    exclude_special: StrictBool = False


def run_model_view(req: ModelViewRequest, model: ContextualModel | str, _: Served | None = None):
    """The attention result with every layer and head (the close-up layer and head are not used)."""
    loaded = as_contextual(model)
    if not loaded.gives_attention:  # an int8 ONNX model has no attention graph
        raise InputError(
            "the model view needs attention weights, which come from the torch runtime or an fp32 ONNX attention "
            f"graph; this server runs ONNX Runtime {loaded.precision} (restart it with --runtime torch)"
        )
    asked = AttentionRequest(
        sentences=[req.sentence], word=req.word, occurrence=req.occurrence, exclude_special=req.exclude_special,
        layer=1, head=0, top=TOP,
    )  # fmt: skip
    return run_attention(asked, model)


def _strip(row: list[float], cls: str = "") -> str:
    """One attention row as bars over the tokens (height = weight, 0..1 on the cell's full height)."""
    n = max(len(row), 1)
    w = CELL_W / n
    bars = "".join(
        f'<rect class="t{i}" x="{i * w:.2f}" y="{CELL_H * (1 - v):.2f}" width="{max(w - 0.6, 0.6):.2f}" '
        f'height="{CELL_H * v:.2f}"/>'
        for i, v in enumerate(row)
    )
    return (
        f'<svg class="strip {cls}" viewBox="0 0 {CELL_W} {CELL_H}" preserveAspectRatio="none" width="{CELL_W}" '
        f'height="{CELL_H}" aria-hidden="true">{bars}</svg>'
    )


def _top(tokens: list[str], row: list[float], special: list[bool], exclude: bool) -> str:
    order = sorted((i for i in range(len(row)) if not (exclude and special[i])), key=lambda i: -row[i])[:TOP]
    return ", ".join(f"{tokens[i]} {row[i]:.2f}" for i in order)


def grid(document: dict[str, Any], query: dict[str, Any]) -> str:
    """The L x H small multiples of one sentence's document (``sentences[0]`` of /api/attention)."""
    sent = document["sentences"][0]
    tokens, special, exclude = sent["display_tokens"], sent["special"], sent["exclude_special"]  # Ġ decoded
    per_head, mean, roll = sent["per_head"], sent["head_mean"], sent["rollout"]
    layers, heads = len(per_head), len(per_head[0])
    targets = set(sent["target_positions"])
    chips = "".join(
        f'<button type="button" class="tok{" target" if i in targets else ""}" data-t="{i}" aria-pressed="false">'
        f"{html.escape(t)}</button>"
        for i, t in enumerate(tokens)
    )
    summary = "".join(
        f"<tr><td>{layer}</td><td>{html.escape(_top(tokens, mean[layer - 1], special, exclude))}</td>"
        f"<td>{html.escape(_top(tokens, roll[layer - 1], special, exclude))}</td></tr>"
        for layer in range(1, len(per_head) + 1)
    )
    head_row = "".join(f"<th>h{h}</th>" for h in range(heads)) + "<th>mean</th><th>rollout</th>"
    rows = []
    for layer in range(1, layers + 1):
        cells = []
        for h in range(heads):
            row = per_head[layer - 1][h]
            link = "/attention?" + urlencode(
                [("s", query["sentence"]), ("layer", layer), ("head", h), ("top", TOP)]
                + [(k, str(query[k])) for k in ("word", "occurrence") if query.get(k) not in (None, "", 0)]
                + ([("exclude_special", "on")] if exclude else [])
            )
            tip = f"layer {layer}, head {h}: {_top(tokens, row, special, exclude)}"
            cells.append(
                f'<td><a class="cell" id="cell-{layer}-{h}" href="{html.escape(link)}" title="{html.escape(tip)}" '
                f'aria-label="{html.escape(tip)} (open this head\'s token map)" '
                f'data-row="{",".join(f"{v:.4f}" for v in row)}">{_strip(row)}</a></td>'
            )
        for name, rows_of in (("mean", mean), ("rollout", roll)):
            row = rows_of[layer - 1]
            tip = f"layer {layer}, {name}: {_top(tokens, row, special, exclude)}"
            cells.append(f'<td><span class="cell {name}" title="{html.escape(tip)}">{_strip(row, name)}</span></td>')
        rows.append(f"<tr><th>L{layer}</th>{''.join(cells)}</tr>")
    select_css = "".join(f'.mv[data-sel="{i}"] .t{i}{{fill:#dc2626}}' for i in range(len(tokens)))
    target = ", ".join(html.escape(tokens[p]) for p in sent["target_positions"])
    return (
        f"<style>{STYLE}{select_css}</style>"
        f'<p id="what">Each small strip is one attention head: the bars are how much the target '
        f"(<b>{target}</b>) attends to each token of the sentence, left to right, at that layer; a full bar is "
        f"weight 1. {layers} layers x {heads} heads = {layers * heads} heads of {html.escape(document['model'])}. "
        "The last two columns are the head mean and the rollout (Abnar &amp; Zuidema 2020). Click a strip to open "
        "that head's token map; click a token to highlight it in every head.</p>"
        + kind_line(document["model"])
        + f'<div class="tokens" id="tokens">{chips}</div>'
        f'<div class="mvwrap"><table class="mv" id="model-view"><tr><th></th>{head_row}</tr>{"".join(rows)}</table>'
        "</div><h3>Most attended, per layer</h3>"
        '<table id="model-view-top"><tr><th>layer</th><th>head mean: top tokens (weight)</th>'
        f"<th>rollout: top tokens (weight)</th></tr>{summary}</table><script>{SCRIPT}</script>"
    )


# The grid takes the page's width, up to the strips' own size: each strip's SVG scales to its cell
# (viewBox), so on a phone all the heads fit side by side, smaller, and still link and hover.
STYLE = """
.mvwrap { overflow-x: auto; max-width: 100%; }
.mv { table-layout: fixed; width: 100%; max-width: 1200px; } .mv th:first-child { width: 2.2em; }
.mv td, .mv th { border: none; padding: 1px; font-size: 11px; color: #6b7280; }
.mv .strip { background: #f3f4f6; display: block; width: 100%; height: 34px; } .mv rect { fill: #1d4ed8; }
@media (max-width: 640px) {
  .mv th:first-child { width: 1.7em; } .mv td, .mv th { padding: .5px; font-size: 9px; }
  .mv tr:first-child th { writing-mode: vertical-rl; transform: rotate(180deg); text-align: left; }
  .mv .strip { height: 26px; }
}
.mv .mean rect { fill: #6b7280; } .mv .rollout rect { fill: #15803d; }
.mv a.cell:focus, .mv a.cell:hover { outline: 2px solid #f59e0b; display: block; }
.tokens { margin: .5em 0; } .tok { margin: 2px; font-size: 13px; }
.tok[aria-pressed=true] { background: #dc2626; color: #fff; } .tok.target { font-weight: bold; border: 2px solid #111; }
"""

SCRIPT = """
(function () {
  var grid = document.getElementById('model-view');
  document.querySelectorAll('#tokens .tok').forEach(function (b) {
    b.addEventListener('click', function () {
      var on = b.getAttribute('aria-pressed') !== 'true';
      document.querySelectorAll('#tokens .tok').forEach(function (o) { o.setAttribute('aria-pressed', 'false'); });
      b.setAttribute('aria-pressed', on ? 'true' : 'false');
      if (on) grid.dataset.sel = b.dataset.t; else delete grid.dataset.sel;
    });
  });
})();
"""


def view(result: Any, req: ModelViewRequest, _query: Any = None) -> str:
    """The page's own view of ``result`` (its record's ``render``): the grid of every head."""
    return grid(result.to_dict(), req.model_dump())
