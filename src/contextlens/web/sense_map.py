"""The sense map: its requests, runs and view, over the corpora served with ``serve --corpus NAME=DIR``
(the page's record, web/pages.py, serves them).

A request names a served corpus by its NAME only; the folder behind it was checked when the server
started. ``POST /api/sense-map`` answers the whole map (every extracted layer) at once, so the
page's layer slider redraws in the browser with no request; a clicked point asks
``POST /api/corpus-search`` (the document of ``contextlens corpus search --json``) for the
occurrences nearest it.
"""

from __future__ import annotations

import dataclasses
import html
import json
from pathlib import Path
from typing import Any

from pydantic import Field, StrictInt

from contextlens.core.contextual_models import ContextualModel
from contextlens.core.numerals import integer_text
from contextlens.errors import InputError
from contextlens.reports.plot_style import LAYOUT, PLOT_CONFIG
from contextlens.web.kept import folder_fingerprint
from contextlens.web.page import Served
from contextlens.web.runs import MAX_TEXT, MAX_TOP, Word
from contextlens.web.runs import Request as Schema

NOT_SERVED = (  # the note on the page while no corpus is served
    '<p class="error">No corpus is served: extract one with <code>contextlens corpus extract CORPUS --word bank '
    "--out DIR</code> and start <code>contextlens serve --corpus NAME=DIR</code>.</p>"
)


class SenseMapRequest(Schema):
    corpus: str = Field(max_length=100, description="Name of a corpus served with --corpus NAME=DIR.")
    word: Word = Field(min_length=1, description="A word the corpus extraction holds.")
    k: str = Field("auto", max_length=4, description="Senses per layer: auto (silhouette) or a number 1..8.")
    seed: StrictInt = Field(0, ge=0, le=2**31 - 1)


class CorpusSearchRequest(Schema):
    corpus: str = Field(max_length=100, description="Name of a corpus served with --corpus NAME=DIR.")
    like: str = Field(min_length=1, max_length=MAX_TEXT, description="An example occurrence, target in [brackets].")
    layer: StrictInt | None = Field(None, ge=-64, le=64, description="An extracted layer (default: the top one).")
    top: StrictInt = Field(10, ge=1, le=MAX_TOP)


def served_folder(name: str, corpora: dict[str, str]) -> Path:
    """The folder served as ``name``; an unknown name lists the served ones (never a path)."""
    if name not in corpora:
        served = ", ".join(sorted(corpora)) or "none (start serve with --corpus NAME=DIR)"
        raise InputError(f"no corpus named {name!r} is served; served corpora: {served}")
    return Path(corpora[name])


def _k(value: str) -> str | int:
    value = value.strip().lower()
    if value == "auto":
        return value
    number = integer_text(value, signed=False)
    if number is None:
        raise InputError(f"`k` must be auto or a number of senses 1..8, got {value!r}")
    return number


def run_sense_map(req: SenseMapRequest, _model: ContextualModel | None, served: Served):
    """The map, kept by the server per corpus, word, k and seed and the folder's files (its manifest:
    model, layers): a reload answers from memory, a re-extracted folder is computed anew."""
    from contextlens.analyses.corpus import sense_map as maps
    from contextlens.analyses.corpus.folder_check import CHECKED

    folder, k = served_folder(req.corpus, served.corpora), _k(req.k)
    fingerprint = folder_fingerprint(folder, frozenset({CHECKED}))
    key = ("sense-map", req.corpus, fingerprint, req.word.strip().lower(), str(k), req.seed)
    return served.kept.get_or_make(key, lambda: maps.sense_map(folder, req.word, k, req.seed, corpus=req.corpus))


def run_corpus_search(req: CorpusSearchRequest, model: ContextualModel, served: Served):
    from contextlens.analyses.corpus.folder_check import checked_folder
    from contextlens.analyses.corpus.occurrence_search import search_occurrences

    folder = served_folder(req.corpus, served.corpora)
    manifest = checked_folder(folder)  # checked at start-up; again here, as it may have changed since
    mine = (manifest.model, manifest.precision, manifest.runtime) == (model.name, model.precision, model.runtime)
    result = search_occurrences(folder, req.like, req.layer, req.top, model=model if mine else None)
    return dataclasses.replace(result, folder=Path(req.corpus))  # the served name, never the server's path


def map_block(document: dict[str, Any], layer: int | None) -> str:
    """The map's figure, slider, summary and nearest list; the data inline, drawn by SCRIPT."""
    layers = [entry["layer"] for entry in document["layers"]]
    start = layers.index(layer) if layer in layers else len(layers) - 1
    data = json.dumps(document).replace("</", "<\\/")
    config = json.dumps(PLOT_CONFIG)
    from contextlens.analyses.corpus.senses import NO_DISTINCTIVE_WORDS

    layout = json.dumps({**LAYOUT, "height": 480, "margin": {"t": 40, "l": 40, "r": 10, "b": 40}})
    n = len(document["occurrences"])
    return (
        f'<p id="sense-map-what">Each dot is one occurrence of <b>{html.escape(document["word"])}</b> in the corpus '
        f"<b>{html.escape(document['corpus'])}</b> ({n} occurrences, {html.escape(document['model'])} "
        f"{html.escape(document['backend'])}), placed by {html.escape(document['projection'])}, coloured by the sense "
        "induced at that layer (k-means, k by silhouette). Hover a dot for its sentence; click it for the "
        "occurrences nearest it at that layer (corpus search); move the slider to change layer.</p>"
        f'<div><label for="layer">layer</label><input type="range" id="layer" min="0" max="{len(layers) - 1}" '
        f'value="{start}" aria-valuetext="layer {layers[start]}"> <output id="layer-out">layer {layers[start]}'
        "</output></div>"
        '<div id="sense-map" class="figure"></div>'
        '<div id="summary"></div><h3>Nearest occurrences</h3>'
        '<div id="nearest" aria-live="polite"><p>Click a dot.</p></div>'
        f'<script id="sense-data" type="application/json">{data}</script>'
        f"<script>var SM_CONFIG={config}, SM_LAYOUT={layout}, SM_NONE={json.dumps(NO_DISTINCTIVE_WORDS)};"
        f"{SCRIPT}</script>"
    )


SCRIPT = """
(function () {
  var doc = JSON.parse(document.getElementById('sense-data').textContent);
  var slider = document.getElementById('layer'), out = document.getElementById('layer-out');
  var WIDE = '<div style="overflow-x:auto;max-width:100%">';  // a safety net: on a phone the rows are cards
  var SENSES = ['sense', 'occurrences', 'distinctive words', 'WordNet sense (cosine)'];
  var NEAREST = ['rank', 'cosine', 'occurrence'];
  function head(names) {
    return '<tr class="head">' + names.map(function (h) { return '<th>' + h + '</th>'; }).join('') + '</tr>';
  }
  function row(names, values) {  // each cell names its column: a phone shows "label: value" (table.cards)
    return '<tr>' + values.map(function (v, i) {
      return '<td data-label="' + names[i] + '">' + v + '</td>';
    }).join('') + '</tr>';
  }
  var colours = ['#1d4ed8', '#dc2626', '#15803d', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];
  function esc(s) { var d = document.createElement('div'); d.textContent = s; return d.innerHTML; }
  function hover(o) {
    var s = o.sentence, a = o.start, b = o.end;
    return esc(s.slice(Math.max(0, a - 60), a)) + '<b>' + esc(s.slice(a, b)) + '</b>' + esc(s.slice(b, b + 60));
  }
  function senseName(s) {  // short: a phone's legend does not wrap; the table below has the full names
    var w = s.distinctive_words.slice(0, 2).join(', ');
    var g = s.gloss ? s.gloss.synset : '';
    var name = 'sense ' + (s.cluster + 1) + ' (' + s.size + ')' + (w ? ': ' + w : '') + (g ? ' · ' + g : '');
    return name.length > 38 ? name.slice(0, 37) + '…' : name;
  }
  function draw() {
    var L = doc.layers[+slider.value], traces = [];
    out.textContent = 'layer ' + L.layer; slider.setAttribute('aria-valuetext', 'layer ' + L.layer);
    L.senses.forEach(function (s) {
      var idx = []; L.labels.forEach(function (c, i) { if (c === s.cluster) idx.push(i); });
      traces.push({type: 'scatter', mode: 'markers', name: esc(senseName(s)),
        x: idx.map(function (i) { return L.x[i]; }), y: idx.map(function (i) { return L.y[i]; }),
        customdata: idx, text: idx.map(function (i) { return hover(doc.occurrences[i]); }),
        hovertemplate: '%{text}<extra></extra>', marker: {size: 9, color: colours[s.cluster % colours.length]}});
    });
    var layout = Object.assign({}, SM_LAYOUT, {title: {text: esc(doc.word) + ' at layer ' + L.layer + ': k = ' +
      L.k + (L.silhouette === null ? '' : ', silhouette ' + L.silhouette.toFixed(3))},
      legend: {orientation: 'h', y: -0.2}, xaxis: {title: {text: 'PC 1'}}, yaxis: {title: {text: 'PC 2'}}});
    var box = document.getElementById('sense-map'), fit = window.contextlensFit;  // a phone: title below the toolbar
    var fig = fit ? fit.fitted(traces, layout, box.clientWidth || innerWidth) : {data: traces, layout: layout};
    Plotly.react(box, fig.data, fig.layout, SM_CONFIG);
    var rows = L.senses.map(function (s) {
      var words = s.distinctive_words.length ? esc(s.distinctive_words.join(', ')) :  // never a blank cell
        '<span class="dim none-stand-out">' + esc(SM_NONE) + '</span>';
      return row(SENSES, [s.cluster + 1, s.size, words, s.gloss ? esc(s.label) :  // unlabelled: its two candidates
        '<span class="dim">' + esc(s.label) + '</span>']);
    }).join('');
    document.getElementById('summary').innerHTML = WIDE + '<table id="senses" class="cards">' + head(SENSES) + rows +
      '</table></div>' +
      '<p>silhouette per k: ' + esc(Object.entries(L.silhouettes).map(function (e) {
        return 'k=' + e[0] + ' ' + e[1].toFixed(3); }).join(', ')) + ' (k = 1 when none reaches the floor)</p>';
    var u = new URL(location.href); u.searchParams.set('layer', L.layer); history.replaceState(null, '', u);
  }
  function nearest(i) {
    var L = doc.layers[+slider.value], o = doc.occurrences[i], box = document.getElementById('nearest');
    box.innerHTML = '<p>searching…</p>';
    fetch('/api/corpus-search', {method: 'POST', headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({corpus: doc.corpus, like: o.marked, layer: L.layer, top: 8})})
      .then(function (r) { return r.json(); }).then(function (d) {
        if (d.error) { box.innerHTML = '<p class="error">error: ' + esc(d.error) + '</p>'; return; }
        box.innerHTML = '<p id="nearest-of">Nearest to: ' + hover(o) + ' (layer ' + d.layer + ', ' + d.searched +
          ' occurrences searched)</p>' + WIDE + '<table id="nearest-table" class="cards">' +
          head(NEAREST) + d.hits.map(function (h) { return row(NEAREST, [h.rank, h.cosine.toFixed(4), hover(h)]); })
          .join('') + '</table></div>';
      }).catch(function (e) { box.innerHTML = '<p class="error">error: ' + esc(String(e)) + '</p>'; });
  }
  slider.addEventListener('input', draw);
  draw();
  document.getElementById('sense-map').on('plotly_click', function (ev) { nearest(ev.points[0].customdata); });
})();
"""


def view(result: Any, _req: SenseMapRequest, query: Any) -> str:
    """The page's own view of ``result`` (its record's ``render``), at the query's ``layer`` if it has one."""
    return map_block(result.to_dict(), integer_text(query.get("layer")))


def corpus_choices(served: Served) -> dict[str, list[str]]:
    return {"corpus": sorted(served.corpora)}


def first_word(served: Served) -> dict[str, Any]:
    """The first visit's inputs: the first served corpus and the first word extracted in it."""
    from contextlens.analyses.corpus.manifest import read_manifest

    names = sorted(served.corpora)
    if not names:
        return {}
    manifest = read_manifest(Path(served.corpora[names[0]]))
    return {"corpus": names[0], "word": manifest.targets[0] if manifest and manifest.targets else ""}
