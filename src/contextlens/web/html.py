"""Server-rendered HTML: the page frame, a form built from a request schema, results and errors.

Inputs live in the URL (GET forms), so a link reproduces a page. Scripts come from this server only:
plotly.js from the installed package (``/static/plotly.js``), ``reports/fit.js`` (a figure fitted
to a phone) and ``static/page.js``, which redraws a
page's views in place (slider, head picker), runs the quiz and shows a clicked cell's text.
"""

from __future__ import annotations

import html
import re
import types
import typing
from typing import Any
from urllib.parse import urlencode

from pydantic import BaseModel

from contextlens.core.numerals import integer_text
from contextlens.reports import card_tables
from contextlens.web.page import Page
from contextlens.web.pages import nav as page_nav

URL_NAMES = {"sentences": "s"}  # short names in links: /compare?s=...&s=...
WORD_LISTS = {"words", "anchors", "positive", "negative"}  # split on spaces and commas; others per line

STYLE = (
    """
*, *::before, *::after { box-sizing: border-box; }
body { font-family: sans-serif; max-width: 1200px; margin: 1em auto; padding: 0 1em; color: #1f2937; line-height: 1.4; }
nav a { margin-right: .9em; display: inline-block; } nav { border-bottom: 1px solid #d1d5db; padding-bottom: .5em; }
nav .model { float: right; color: #6b7280; }
form { background: #f9fafb; border: 1px solid #e5e7eb; padding: .8em 1em; border-radius: 6px; }
form > div { margin: .25em 0; }
label { display: inline-block; min-width: 9em; vertical-align: top; }
textarea { width: 60em; max-width: 100%; height: 5.5em; } input[type=text] { width: 30em; max-width: 100%; }
input[type=range] { width: 20em; max-width: 70%; vertical-align: middle; }
small.hint { color: #6b7280; }
fieldset.options { border: 0; padding: 0; margin: .3em 0; }
textarea + small.hint { display: block; }
.error { color: #b91c1c; font-weight: bold; margin: .4em 0; }
.ok { color: #15803d; font-weight: bold; } .links a { margin-right: 1em; }
.dim { color: #6b7280; } p.what { font-size: 1.05em; }
table { border-collapse: collapse; } td, th { border: 1px solid #d1d5db; padding: .2em .6em; }
table.numbers td { text-align: right; } table.numbers td:first-child { text-align: left; }
table.numbers caption { text-align: left; font-weight: bold; padding: .3em 0; }
tr.mark td { color: #b91c1c; font-weight: bold; }
.scroll { overflow-x: auto; max-width: 100%; }
.figure { max-width: 100%; overflow: hidden; }
pre { background: #f3f4f6; padding: .6em; overflow-x: auto; max-height: 24em; }
#clicked:empty { display: none; }
#clicked { color: #374151; padding: .3em 0; min-height: 1.2em; position: sticky; bottom: 0; background: #fff; }
@media (max-width: 640px) {
  body { padding: 0 .5em; margin: .5em auto; }
  nav .model { float: none; display: block; }
  form > div > label { display: block; min-width: 0; font-weight: bold; }
  textarea, input[type=text], select { width: 100%; }
  input[type=range] { width: 80%; }
  small.hint { display: block; }
  h1 { font-size: 1.4em; }
  table.numbers { font-size: .78em; } table.numbers td, table.numbers th { padding: .15em .25em; }
  table.numbers th { hyphens: auto; }
}
"""
    + card_tables.STYLE
)  # the phone's card tables, shared with the HTML report


def frame(title: str, body: str, model: str, what: str = "") -> str:
    """The page: a viewport for phones, the local favicon, and scripts from this server only."""
    nav = " ".join(f'<a href="/{n}">{n}</a>' for n in page_nav())
    lead = f'<p class="what" id="what">{html.escape(what)}</p>' if what else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} — contextlens</title>
<link rel="icon" href="/favicon.ico">
<style>{STYLE}</style><script src="/static/plotly.js"></script><script src="/static/fit.js"></script>
<script src="/static/page.js" defer></script></head>
<body><nav><b>contextlens</b> · {nav} <span class="model">model: {html.escape(model)}</span></nav>
<h1>{html.escape(title)}</h1>
{lead}
{body}
<div id="clicked" aria-live="polite"></div>
</body></html>"""


def _is_list(annotation: Any) -> bool:
    return typing.get_origin(annotation) is list


def _is_bool(annotation: Any) -> bool:
    return annotation is bool


def _is_int(annotation: Any) -> bool:
    """``int``, ``StrictInt`` or either of them ``| None``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kinds = {typing.get_args(a)[0] if typing.get_origin(a) is typing.Annotated else a
                 for a in typing.get_args(annotation)} - {type(None)}  # fmt: skip
        return kinds == {int}
    return annotation is int


def query_to_request(schema: type[BaseModel], query: Any) -> dict[str, Any]:
    """URL query -> request fields: list fields from repeated or multi-line values, a number field's
    ASCII digits as its int (the requests' numbers are strict); empty inputs dropped."""
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
            number = integer_text(values[-1]) if _is_int(field.annotation) else None
            data[name] = values[-1] if number is None else number  # not a number: the request refuses it
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
    page: Page,
    values: dict[str, Any],
    error: str | None,
    extra: dict[str, list[str]] | None = None,
    layers: int | None = None,
    heads: int | None = None,
) -> str:
    """The page's inputs, pre-filled, with the error shown beside them; ``extra``: a field's served
    names (a select). For each of the page's ``controls``, a slider that redraws its views in place
    (page.js): ``layers``: layer from the controls' first layer to ``layers``; ``heads``: 0..heads-1."""
    schema, controls = page.request, page.controls.names if page.controls else ()
    rows = []
    shown = page.form_fields or tuple(schema.model_fields)
    for field_name, field in schema.model_fields.items():
        if field_name not in shown:
            continue
        key = URL_NAMES.get(field_name, field_name)
        unset = field.is_required() or callable(field.default_factory)
        value = values.get(field_name, None if unset else field.default)
        label = f'<label for="f-{key}">{html.escape(field_name.replace("_", " "))}</label>'
        hint = f' <small class="hint">{html.escape(field.description)}</small>' if field.description else ""
        if extra and field_name in extra:
            opts = "".join(
                f"<option{' selected' if o == value else ''}>{html.escape(o)}</option>" for o in extra[field_name]
            )
            widget = f'<select id="f-{key}" name="{key}">{opts}</select>'
        else:
            slider = _control_slider(page, field_name, key, value, layers, heads) if field_name in controls else None
            widget = slider or _input(field_name, key, field.annotation, value)
        rows.append(f"<div>{label}{widget}{hint}</div>")
    err = f'<div class="error" id="error" role="alert">error: {html.escape(error)}</div>' if error else ""
    go = '<button id="go" type="submit">Run</button>'
    return f'<form method="get" action="/{page.name}">{"".join(rows)}{err}{go}</form>'


def _control_slider(
    page: Page, field_name: str, key: str, value: Any, layers: int | None, heads: int | None
) -> str | None:
    """The slider of one of the page's controls (``layer``: from the controls' first layer to
    ``layers``; ``head``: 0..heads-1), or None where the page gives no range for it."""
    if field_name == "layer" and layers is not None:
        low = page.controls.first_layer  # attention layers are blocks 1..L, hidden states 0..L
        try:
            at = int(value if value is not None else -1)
        except ValueError:
            at = layers
        at = layers + 1 + at if at < 0 else at
        return _slider(key, low, layers, at)
    if field_name == "head" and heads is not None:
        try:
            at = int(value if value is not None else 0)
        except ValueError:
            at = 0
        return _slider(key, 0, heads - 1, at)
    return None


def _input(field_name: str, key: str, annotation: Any, value: Any) -> str:
    """A field's input by its type: a line of words, a box of sentences (one a line), a checkbox, a text."""
    if _is_list(annotation) and field_name in WORD_LISTS:  # a few words: one line
        text = " ".join(value or [])
        return f'<input type="text" id="f-{key}" name="{key}" value="{html.escape(text)}">'
    if _is_list(annotation):  # sentences: one per line
        return f'<textarea id="f-{key}" name="{key}">{html.escape(chr(10).join(value or []))}</textarea>'
    if _is_bool(annotation):
        checked = " checked" if value else ""
        return (
            f'<input type="hidden" name="{key}" value="off"><input type="checkbox" id="f-{key}" name="{key}"{checked}>'
        )
    text = "" if value is None else str(value)
    return f'<input type="text" id="f-{key}" name="{key}" value="{html.escape(text)}">'


def _slider(key: str, low: int, high: int, at: int) -> str:
    """A range input with its value beside it; arrow keys step it, and focus stays on it, and the
    page redraws its views in place (no submit)."""
    return (
        f'<input type="range" id="f-{key}" name="{key}" min="{low}" max="{high}" value="{at}" '
        f'aria-label="{key}" oninput="this.nextElementSibling.value=this.value">'
        f'<output for="f-{key}">{at}</output>'
    )


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


def result_block(page: Page, query: str, content: str, document: dict[str, Any] | None = None) -> str:
    """Links to the same result as JSON and PNG (where the page answers them), the page's content
    (figures and numbers, the views' slots and data, or its own view), and for a page without
    figures its table or JSON (``document``)."""
    import json

    links = ""
    if page.api:
        links += f'<a id="json-link" href="/{page.name}.json?{html.escape(query)}">JSON</a>'
    makers = page.figures
    if makers is not None and makers.png is not None:
        links += f'<a id="png-link" href="/{page.name}.png?{html.escape(query)}">PNG</a>'
    body = content
    if document is not None:
        body += rows_table(document) or f'<pre id="result">{html.escape(json.dumps(document, indent=2))}</pre>'
    links = f'<p class="links">{links}</p>' if links else ""
    return f'<section id="results">{links}{body}</section>'
