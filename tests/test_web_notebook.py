"""Notebook display: result objects render as offline HTML through IPython's formatters."""

from __future__ import annotations

from contextlens.analyses.lesson.divergence import Comparison, compare
from contextlens.core.occurrences import parse_marked
from contextlens.reports.interactive import remote_resources


class _Formatter:
    def __init__(self) -> None:
        self.registered: dict[type, object] = {}

    def for_type(self, cls: type, fn: object) -> None:
        self.registered[cls] = fn


class _FakeIPython:
    """Just the part of IPython's shell that registering formatters touches."""

    def __init__(self) -> None:
        self.html = _Formatter()
        self.display_formatter = type("DF", (), {"formatters": {"text/html": self.html}})()


def test_results_render_as_offline_html_with_their_figures(minilm, glove):
    from contextlens import notebook

    result = compare([parse_marked("The river [bank]."), parse_marked("A [bank] loan.")], minilm, glove)
    page = notebook.to_html(result)
    assert "plotly-graph-div" in page and "across 2 sentences" in page
    assert remote_resources(page) == []  # plotly.js inlined: renders with the network off

    shell = _FakeIPython()
    notebook.load_ipython_extension(shell)
    assert shell.html.registered[Comparison] is notebook.in_notebook  # figures without plotly.js: the page has it
    assert len(shell.html.registered) == 8  # the six lesson results, same-sense and sense induction
