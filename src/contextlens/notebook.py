"""Jupyter display for result objects: ``import contextlens.notebook`` (or ``%load_ext contextlens.notebook``).

Analyses stay free of report imports: this face registers IPython HTML formatters for the result
classes, drawing the same plotly figures as the HTML pages. plotly.js (4.8 MB) goes into the
notebook **once**, as the output of the cell that loads this module, not into every result: three
results weigh kilobytes, not 15 MB, and the notebook still renders offline (nothing is fetched).
A result whose page has no plotly.js (that cell's output was cleared) says so instead of a blank.
``quiz()`` shows the lesson's checkpoint quiz, ``quiz({1: 2})`` marks and scores answers to it.
``reports/fit.js`` (a figure refitted below 640 px: the pages' and the reports' phone fitting) goes
in with plotly.js, once; each result adds only the one line that fits its own figures.

tqdm's notebook bars need ipywidgets, which a plain Jupyter lacks; the libraries below (transformers,
huggingface_hub) import ``tqdm.auto`` and print a "TqdmWarning: IProgress not found" box. Loading
this module imports ``tqdm.auto`` first with that warning silenced, so their bars fall back to text.
"""

from __future__ import annotations

import html
import json
import uuid
import warnings
from collections.abc import Mapping
from typing import Any

from contextlens.errors import InputError, NoFigureError
from contextlens.reports.figure_registry import (
    figures_for,
    figures_for_type,
    interactive_figures,
    result_types,
    type_name,
)


def _drawn(result: Any) -> bool:
    """Whether ``result`` has interactive figures in the one registry."""
    try:
        return figures_for(result).plotly is not None
    except NoFigureError:
        return False


NO_PLOTLY = (
    "plotly.js is not on this page: run the cell with <code>import contextlens.notebook</code> "
    "(or <code>%load_ext contextlens.notebook</code>) again, then this one."
)


def plotly_script() -> str:
    """plotly.js as one inline script (the package's own copy: nothing is fetched)."""
    from plotly.offline import get_plotlyjs

    return f'<script type="text/javascript">{get_plotlyjs()}</script>'


def fit_script() -> str:
    """reports/fit.js as one inline script: ``window.contextlensFit``, which the results call."""
    from contextlens.reports.plot_style import FIT_JS

    return f'<script type="text/javascript">{FIT_JS.read_text(encoding="utf-8")}</script>'


def _fitted(box: str) -> str:
    """The line that fits the figures inside ``box`` to a phone's width (nothing when fit.js is absent)."""
    return (
        f'<script>if (window.contextlensFit) document.getElementById("{box}").querySelectorAll(".plotly-graph-div")'
        ".forEach(function (d) { window.contextlensFit.fitDiv(d); });</script>"
    )


def _when_missing() -> str:
    """A line shown in place of the figures when window.Plotly is not defined on the page."""
    box = f"contextlens-{uuid.uuid4()}"
    message = json.dumps(NO_PLOTLY)
    return (
        f'<div id="{box}"></div><script>if (!window.Plotly) {{ var d = document.getElementById("{box}"); '
        f"if (d) d.innerHTML = {message}; }}</script>"
    )


def to_html(result: Any, plotlyjs: bool = True) -> str:
    """A result as one offline HTML fragment: its figures, or its JSON document. ``plotlyjs``:
    inline plotly.js and fit.js (a fragment that renders alone); the notebook's formatter leaves
    them out, as the page already has them from loading this module."""
    if not callable(getattr(result, "to_dict", None)):
        raise InputError(
            f"result must be a contextlens result (Comparison, Exploration, Trace, ...), got {type(result).__name__}"
        )
    if _drawn(result):
        from contextlens.reports.interactive import figure_div

        with warnings.catch_warnings():  # plotly's Python side does not know every plotly.js option
            warnings.filterwarnings("ignore", message=r"\s*Unrecognized config options supplied")
            figures = "".join(figure_div(f) for f in interactive_figures(result))
        box = f"contextlens-{uuid.uuid4()}"
        scripts = plotly_script() + fit_script() if plotlyjs else _when_missing()
        return f'{scripts}<div id="{box}">{figures}</div>{_fitted(box)}'
    return f"<pre>{html.escape(json.dumps(result.to_dict(), indent=2))}</pre>"


_SHOWN: set[int] = set()  # the shells (by id) whose notebook already has plotly.js in an output


def register(ip: Any = None) -> bool:
    """Register the formatters in the running IPython (``ip``); False when there is none. plotly.js
    goes into the notebook once per shell: ``%load_ext contextlens.notebook`` imports this module
    (which registers) and then calls :func:`load_ipython_extension` (which registers again)."""
    if ip is None:
        try:
            from IPython import get_ipython  # type: ignore[import-not-found]
        except ImportError:
            return False
        ip = get_ipython()
    if ip is None:
        return False
    quiet_tqdm()
    formatter = ip.display_formatter.formatters["text/html"]
    for cls in result_types():
        if figures_for_type(type_name(cls)).plotly is not None:
            formatter.for_type(cls, in_notebook)
    if type(ip).__name__ == "ZMQInteractiveShell" and id(ip) not in _SHOWN:  # a notebook's kernel, first time
        _SHOWN.add(id(ip))
        from IPython.display import HTML, display  # type: ignore[import-not-found]

        display(HTML(plotly_script() + fit_script()))  # once, in this cell's output
    return True


def in_notebook(result: Any) -> str:
    """The formatter: the result's figures without plotly.js (the page has it once)."""
    return to_html(result, plotlyjs=False)


def quiet_tqdm() -> None:
    """Import ``tqdm.auto`` now with its IProgress warning silenced: later imports get text bars."""
    import sys

    if "tqdm.auto" in sys.modules:
        return
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="IProgress not found")
            import tqdm.auto  # noqa: F401
    except ImportError:  # no tqdm: nothing prints the warning either
        pass


class QuizSheet:
    """The lesson's checkpoint quiz in a notebook (the one quiz analysis, ``analyses/lesson/quiz.py``):
    each question with its options numbered by their own numbers, and the answers given marked with
    the score. ``score`` is the analysis's result (``.to_dict()``: the web's ``/api/quiz-score``)."""

    def __init__(self, answers: Mapping[int, int] | None = None) -> None:
        from contextlens.analyses.lesson import quiz as checkpoint

        self.score = checkpoint.score(dict(answers or {}))

    def _repr_html_(self) -> str:
        from contextlens.analyses.lesson.quiz import QUIZ

        marked = {a.question: a for a in self.score.answers}
        blocks = []
        for number, question in enumerate(QUIZ, 1):
            options = "".join(f"<li>{html.escape(o)}</li>" for o in question.options)
            block = f"<p><b>Q{number}. {html.escape(question.text)}</b></p><ol>{options}</ol>"
            if number in marked:
                a = marked[number]
                verdict = "Right." if a.correct else f"Not quite: the answer is {a.right_answer}."
                block += f"<p>your answer: {a.answer}. <b>{verdict}</b> {html.escape(a.explanation)}</p>"
            blocks.append(block)
        hint = "<p>Answer with <code>quiz({1: 2, 3: 1})</code>: question number → option number.</p>"
        return "".join(blocks) + (f"<p><b>{html.escape(self.score.line)}</b></p>" if marked else hint)


def quiz(answers: Mapping[int, int] | None = None) -> QuizSheet:
    """The checkpoint quiz, shown as HTML in the notebook; ``answers`` (question -> option, both
    1-based) marked and scored. A question or option out of range is an InputError."""
    return QuizSheet(answers)


def load_ipython_extension(ip: Any) -> None:
    register(ip)


register()
