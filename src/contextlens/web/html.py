"""Server-rendered HTML: the page frame, a form built from a request schema, results and errors.

Inputs live in the URL (GET forms), so a link reproduces a page. The only script is plotly.js,
served from the package (``/static/plotly.js``), plus a few lines that show a clicked cell's text.
"""

from __future__ import annotations

import html
import re
import typing
from typing import Any
from urllib.parse import urlencode

from pydantic import BaseModel

from contextlens.web.runs import PAGES

URL_NAMES = {"sentences": "s"}  # short names in links: /compare?s=...&s=...
SLIDER_PAGES = {"explore", "attention", "probe", "rank"}  # a layer slider that redraws the page
WORD_LISTS = {"words", "anchors", "positive", "negative"}  # split on spaces and commas; others per line
EXAMPLES: dict[str, dict[str, Any]] = {
    "compare": {"sentences": ["I sat on the river [bank].", "I opened a [bank] account.", "The [bank] approved it."]},
    "explore": {"words": ["bank", "bat"], "permutations": 200},
    "attention": {"sentences": ["The [bank] approved the loan.", "The river [bank] flooded."]},
    "probe": {"sentences": ["She sat on the river [bank].", "He robbed the [bank]."], "anchors": ["shore", "money"]},
    "trace": {"sentence": "The river [bank] flooded."},
    "neighbors": {"analogy": "man:king::woman"},
    "rank": {},
    "search": {"query": "money and loans"},
}

STYLE = """
body { font-family: sans-serif; max-width: 1200px; margin: 1em auto; padding: 0 1em; color: #1f2937; }
nav a { margin-right: .9em; } nav { border-bottom: 1px solid #d1d5db; padding-bottom: .5em; }
form { background: #f9fafb; border: 1px solid #e5e7eb; padding: .8em 1em; border-radius: 6px; }
label { display: inline-block; min-width: 9em; vertical-align: top; margin: .25em 0; }
textarea { width: 60em; max-width: 95%; height: 5.5em; } input[type=text] { width: 30em; }
.error { color: #b91c1c; font-weight: bold; margin: .4em 0; }
.ok { color: #15803d; font-weight: bold; } .links a { margin-right: 1em; }
table { border-collapse: collapse; } td, th { border: 1px solid #d1d5db; padding: .2em .6em; }
pre { background: #f3f4f6; padding: .6em; overflow-x: auto; max-height: 24em; }
#clicked:empty { display: none; }
#clicked { color: #374151; padding: .3em 0; min-height: 1.2em; position: sticky; bottom: 0; background: #fff; }
"""

CLICK_JS = """
document.querySelectorAll('.plotly-graph-div').forEach(function (d) {
  if (!d.on) return;
  d.on('plotly_click', function (ev) {
    var p = ev.points[0]; var t = p.text || p.hovertext;
    if (t) document.getElementById('clicked').innerHTML = t;
  });
});
"""


def frame(title: str, body: str, model: str) -> str:
    nav = " ".join(f'<a href="/{n}">{n}</a>' for n in ["lesson", *PAGES])
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} — contextlens</title>
<style>{STYLE}</style><script src="/static/plotly.js"></script></head>
<body><nav><b>contextlens</b> · {nav} <span style="float:right;color:#6b7280">model: {html.escape(model)}</span></nav>
<h1>{html.escape(title)}</h1>
{body}
<div id="clicked"></div>
<script>{CLICK_JS}</script>
</body></html>"""


def _is_list(annotation: Any) -> bool:
    return typing.get_origin(annotation) is list


def _is_bool(annotation: Any) -> bool:
    return annotation is bool


def query_to_request(schema: type[BaseModel], query: Any) -> dict[str, Any]:
    """URL query -> request fields: list fields from repeated or multi-line values; empty inputs dropped."""
    data: dict[str, Any] = {}
    for name, field in schema.model_fields.items():
        keys = [name] + ([URL_NAMES[name]] if name in URL_NAMES else [])
        values = [v for k in keys for v in query.getlist(k)]
        if _is_list(field.annotation):
            sep = r"[\s,]+" if name in WORD_LISTS else r"\r?\n"
            items = [x.strip() for v in values for x in re.split(sep, v) if x.strip()]
            if items:
                data[name] = items
        elif _is_bool(field.annotation):
            if values:
                data[name] = values[-1].lower() in ("1", "on", "true", "yes")
        elif values and values[-1].strip() != "":
            data[name] = values[-1]
    return data


def request_to_query(name: str, data: dict[str, Any]) -> str:
    """Request fields -> a URL query string that reproduces the page."""
    pairs: list[tuple[str, str]] = []
    for key, value in data.items():
        url_key = URL_NAMES.get(key, key)
        if isinstance(value, list):
            pairs += [(url_key, str(v)) for v in value]
        elif isinstance(value, bool):
            if value:
                pairs.append((url_key, "on"))
        elif value is not None:
            pairs.append((url_key, str(value)))
    return urlencode(pairs)


def form(
    name: str,
    values: dict[str, Any],
    error: str | None,
    extra: dict[str, list[str]] | None = None,
    layers: int | None = None,
) -> str:
    """The page's inputs, pre-filled, with the error shown beside them; ``layers``: a layer slider 0..layers."""
    schema = PAGES[name].request
    rows = []
    for field_name, field in schema.model_fields.items():
        key = URL_NAMES.get(field_name, field_name)
        value = values.get(field_name, field.default if not callable(field.default_factory) else None)
        label = f'<label for="f-{key}">{html.escape(field_name.replace("_", " "))}</label>'
        hint = f' <small style="color:#6b7280">{html.escape(field.description)}</small>' if field.description else ""
        if extra and field_name in extra:
            opts = "".join(
                f"<option{' selected' if o == value else ''}>{html.escape(o)}</option>" for o in extra[field_name]
            )
            widget = f'<select id="f-{key}" name="{key}">{opts}</select>'
        elif field_name == "layer" and layers is not None and name in SLIDER_PAGES:
            low = 1 if name == "attention" else 0  # attention layers are blocks 1..L, hidden states 0..L
            try:
                at = int(value if value is not None else -1)
            except ValueError:
                at = layers
            at = layers + 1 + at if at < 0 else at
            widget = (
                f'<input type="range" id="f-{key}" name="{key}" min="{low}" max="{layers}" value="{at}" '
                f'oninput="this.nextElementSibling.value=this.value" onchange="this.form.submit()">'
                f"<output>{at}</output>"
            )
        elif _is_list(field.annotation) and field_name in WORD_LISTS:  # a few words: one line
            text = " ".join(value or [])
            widget = f'<input type="text" id="f-{key}" name="{key}" value="{html.escape(text)}">'
        elif _is_list(field.annotation):  # sentences: one per line
            widget = f'<textarea id="f-{key}" name="{key}">{html.escape(chr(10).join(value or []))}</textarea>'
        elif _is_bool(field.annotation):
            checked = " checked" if value else ""
            widget = (
                f'<input type="hidden" name="{key}" value="off">'
                f'<input type="checkbox" id="f-{key}" name="{key}"{checked}>'
            )
        else:
            text = "" if value is None else str(value)
            widget = f'<input type="text" id="f-{key}" name="{key}" value="{html.escape(text)}">'
        rows.append(f"<div>{label}{widget}{hint}</div>")
    err = f'<div class="error" id="error" role="alert">error: {html.escape(error)}</div>' if error else ""
    return f'<form method="get" action="/{name}">{"".join(rows)}{err}<button id="go" type="submit">Run</button></form>'


def rows_table(document: dict[str, Any]) -> str:
    """Neighbours or search hits as a table (the JSON link has the full document)."""
    rows = document.get("neighbors") or document.get("hits")
    if not rows:
        return ""
    cols = [c for c in rows[0] if c != "id"]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)

    def cell(v: Any) -> str:
        return f"{v:.4f}" if isinstance(v, float) else html.escape(str(v))

    body = "".join("<tr>" + "".join(f"<td>{cell(r[c])}</td>" for c in cols) + "</tr>" for r in rows)
    return f'<table id="result"><tr>{head}</tr>{body}</table>'


def result_block(name: str, query: str, figures: list[str], document: dict[str, Any] | None) -> str:
    """Figures, then links to the same result as JSON and PNG, then the JSON itself."""
    import json

    links = f'<p class="links"><a id="json-link" href="/{name}.json?{html.escape(query)}">JSON</a>'
    makers = PAGES[name].figures
    if makers is not None and makers.png is not None:
        links += f'<a id="png-link" href="/{name}.png?{html.escape(query)}">PNG</a>'
    links += "</p>"
    body = "".join(f'<div class="figure">{f}</div>' for f in figures)
    if document is not None and not figures:
        body += rows_table(document) or f'<pre id="result">{html.escape(json.dumps(document, indent=2))}</pre>'
    return f'<section id="results">{links}{body}</section>'
