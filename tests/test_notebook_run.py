"""A real notebook, executed headless (nbclient + ipykernel), then opened in Chromium with the network cut.

The notebook face must: put plotly.js in the notebook once (the output of the cell that loads
contextlens.notebook), not once per result; print no "TqdmWarning: IProgress not found" box; offer
every analysis from ``contextlens``; and its figures must draw from the notebook's own outputs with
nothing fetched from the network.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import BROWSER_WAIT_MS, CHROMIUM, FIT_PROBLEMS, HANG_SECONDS, abort_requests_leaving

ANALYSES = (
    "compare, explore, attend, trace, probe, rank_pairs, neighbors, same_sense, three_kinds, induce_senses, "
    "sense_map, search_occurrences, extract_corpus, run_wic, run_wsd, run_similarity, run_contextuality, "
    "run_wsi, run_layer_probes, estimate, pg_estimate, search_index, VectorIndex, compare_layers, train_static, "
    "distill_static, evaluate_static, measure_cost, export_projector"
)
CELLS = [
    "%load_ext contextlens.notebook",  # the documented way: it imports the module, then loads the extension
    "import contextlens.notebook",
    f"from contextlens import {ANALYSES}\nfrom contextlens import load_contextual, load_static, parse_marked",
    "m, g = load_contextual('minilm'), load_static('glove-50d')\n"
    "compare(['The river [bank] flooded.', 'I opened a [bank] account.'], m, g)",
    "explore(['bank'], m, permutations=50)",
    "trace(parse_marked('The river [bank] flooded.'), m)",
]


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    client = NotebookClient(nb, timeout=HANG_SECONDS, kernel_name="python3")
    old = dict(os.environ)
    os.environ.update(env)  # the kernel is a child process: it inherits this environment
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    path = tmp_path_factory.mktemp("notebook") / "lesson.ipynb"
    nbformat.write(nb, path)
    return nb, path


def _html_outputs(nb) -> list[tuple[int, str]]:
    return [
        (i, out["data"]["text/html"])
        for i, cell in enumerate(nb.cells)
        for out in cell.get("outputs", [])
        if "data" in out and "text/html" in out["data"]
    ]


def test_plotly_js_is_in_the_notebook_once_and_results_are_small(executed):
    nb, path = executed
    html = _html_outputs(nb)
    with_plotly = [i for i, text in html if "window.Plotly = Plotly" in text]
    assert with_plotly == [0]  # the cell that loaded contextlens.notebook, and no other
    assert sum(text.count("window.Plotly = Plotly") for _, text in html) == 1  # once in that cell too
    results = [text for i, text in html if i >= 3]
    assert len(results) == 3 and all("plotly-graph-div" in t for t in results)
    assert max(len(t) for t in results) < 400_000  # each result: its figures' data only (was 4.8 MB each)
    assert path.stat().st_size < 6_000_000  # plotly.js once (4.8 MB) plus three results


def test_no_progress_widget_warning_and_no_error(executed):
    nb, _ = executed
    streams = [out.get("text", "") for cell in nb.cells for out in cell.get("outputs", [])]
    assert not any("IProgress" in s or "TqdmWarning" in s for s in streams), streams
    assert not any("Unrecognized config options" in s for s in streams), streams
    assert not any(out.get("output_type") == "error" for cell in nb.cells for out in cell.get("outputs", []))


@pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")
def test_the_executed_notebooks_figures_draw_with_the_network_cut(executed, browser, tmp_path):
    nb, _ = executed
    page_file = tmp_path / "notebook.html"
    body = "".join(f'<div class="output">{text}</div>' for _, text in _html_outputs(nb))
    page_file.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{body}</body></html>')
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    leaks = abort_requests_leaving(pg, lambda url: url.startswith("file://"))
    pg.goto(page_file.as_uri())
    divs = len(pg.query_selector_all(".plotly-graph-div"))
    pg.wait_for_function(
        f"document.querySelectorAll('.plotly-graph-div .main-svg').length >= {divs}", timeout=BROWSER_WAIT_MS
    )
    assert divs >= 3 and leaks == []
    assert "plotly.js is not on this page" not in pg.inner_text("body")
    pg.hover(".plotly-graph-div")  # the modebar: no button that uploads the chart
    titles = [b.get_attribute("data-title") or "" for b in pg.query_selector_all(".modebar-btn")]
    assert titles and not any("Share" in t or "Chart Studio" in t for t in titles), titles
    context.close()


@pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")
def test_a_result_without_plotly_on_the_page_says_so(executed, browser, tmp_path):
    nb, _ = executed
    page_file = tmp_path / "cleared.html"  # the import cell's output cleared: no plotly.js
    body = "".join(text for i, text in _html_outputs(nb) if i >= 2)
    page_file.write_text(f"<!DOCTYPE html><html><body>{body}</body></html>")
    context = browser.new_context()
    pg = context.new_page()
    pg.goto(page_file.as_uri())
    assert "plotly.js is not on this page: run the cell with import contextlens.notebook" in pg.inner_text("body")
    context.close()


@pytest.mark.skipif(not shutil.which(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")
def test_on_a_phone_the_notebooks_figures_are_fitted_by_fit_js_sent_once(executed, browser, tmp_path):
    """reports/fit.js comes with plotly.js, once (the import cell's output); each result carries only
    the line that fits its own figures. At 390 px every figure is refitted (panels stacked, title
    below the toolbar): none wider than its box, no title under the toolbar or cut."""
    nb, _ = executed
    html = _html_outputs(nb)
    assert [i for i, text in html if "root.contextlensFit = {" in text] == [0]  # fit.js itself: once
    results = [text for i, text in html if i >= 2]
    assert all(t.count("contextlensFit.fitDiv") == 1 for t in results)  # one line per result
    page_file = tmp_path / "phone.html"
    body = "".join(f'<div class="output">{text}</div>' for _, text in html)
    head = '<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">'
    page_file.write_text(f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>")
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    pg = context.new_page()
    leaks = abort_requests_leaving(pg, lambda url: url.startswith("file://"))
    pg.goto(page_file.as_uri())
    divs = len(pg.query_selector_all(".plotly-graph-div"))
    pg.wait_for_function(
        f"document.querySelectorAll('.plotly-graph-div .main-svg').length >= {divs}", timeout=BROWSER_WAIT_MS
    )
    fitted = pg.evaluate("document.querySelectorAll('.plotly-graph-div[data-fitted]').length")
    problems = pg.evaluate(FIT_PROBLEMS)
    wide = pg.evaluate("document.documentElement.scrollWidth")
    context.close()
    assert divs >= 3 and fitted == divs and leaks == []
    assert problems == [] and wide <= 391
