"""The lesson page: the seeds' story with live figures on the served model, and a checkpoint quiz.

The quiz and its scoring are an analysis (``analyses/lesson/quiz.py``, also behind ``contextlens
quiz`` and ``contextlens.notebook.quiz``); here each answer is checked on the server through it and
explained with a live figure computed by the same analyses as every other page.
"""

from __future__ import annotations

import asyncio
import html
import random
import re
import uuid
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI
from fastapi import Request as HttpRequest
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import Field, StrictInt

from contextlens.analyses.lesson import quiz as checkpoint
from contextlens.analyses.lesson.quiz import QUIZ
from contextlens.core.contextual_models import ContextualModel, as_contextual
from contextlens.core.numerals import integer_text, is_digits
from contextlens.errors import InputError
from contextlens.web import deferred, kinds, tables
from contextlens.web import html as pages
from contextlens.web.runs import (
    CompareRequest,
    NeighborsRequest,
    Request,
    TraceRequest,
    run_compare,
    run_neighbors,
    run_trace,
)
from contextlens.web.serving import WorkerPool, error_status

BANK = ["We walked along the river [bank].", "I opened a [bank] account.", "The [bank] approved the loan."]
TRACE = "The river [bank] flooded."


class QuizAnswer(Request):
    question: StrictInt = Field(ge=1, le=len(QUIZ), description="Question number, 1-based.")
    answer: StrictInt = Field(ge=1, le=checkpoint.OPTIONS, description="Option number, 1-based.")


class QuizAnswers(Request):
    answers: dict[int, StrictInt] = Field(
        max_length=len(QUIZ), description="Question number -> option number, both 1-based: the answers given so far."
    )


def live_figure(kind: str, model: ContextualModel | str) -> str:
    """One live figure as an HTML fragment, with div ids of its own: the same figure may appear twice
    on the page (a section and a quiz answer), and plotly draws only into the first of equal ids."""
    fragment = _live_figure(kind, model)
    for old in dict.fromkeys(re.findall(r'<div id="([0-9a-f-]{36})"', fragment)):
        fragment = fragment.replace(old, str(uuid.uuid4()))
    return fragment


def _trace_refused(model: ContextualModel | str) -> str | None:
    """Why the trace cannot run on the served model (it reads attention weights), or None."""
    loaded = as_contextual(model)
    if not loaded.gives_attention:
        return (
            '<p class="error">The trace needs attention weights, which come from the torch runtime or an '
            f"fp32 ONNX attention graph; this server runs ONNX Runtime {loaded.precision} (restart it with "
            "--runtime torch to see the trace).</p>"
        )
    return None


@lru_cache(maxsize=8)
def _result(kind: str, model: ContextualModel | str) -> Any:
    """The compare or trace result a section draws and tabulates, computed once per model: the
    lesson's inputs are fixed."""
    if kind == "compare":
        return run_compare(CompareRequest(sentences=BANK), model)
    return run_trace(TraceRequest(sentence=TRACE), model)


def live_numbers(kind: str, model: ContextualModel | str) -> str:
    """The numbers behind a section's figure, as the compare and trace pages show them (web/tables.py):
    the three sentences the legend numbers, the cosines per layer; the tokens, ids and rows."""
    if kind == "compare":
        return (
            "<p>The legend's sentence numbers are these (the target in brackets, then its tokens):</p>"
            + tables.compare_numbers(_result(kind, model), with_kind=False)
        )
    if kind == "trace":
        link = f'<a href="/trace?{urlencode({"sentence": TRACE})}" id="trace-link">trace</a>'
        if _trace_refused(model) is not None:
            return f"<p>The token → id → row table is on the {link} page (with --runtime torch).</p>"
        return (
            f"<p>The same on the {link} page, for a sentence of your own. Token → id → row, then the layers:</p>"
            + tables.trace_numbers(_result(kind, model), with_kind=False)
        )
    return ""


@lru_cache(maxsize=16)
def _live_figure(kind: str, model: ContextualModel | str) -> str:
    """Cached per model: the lesson's inputs are fixed."""
    from contextlens.reports import interactive
    from contextlens.reports.figure_registry import interactive_figures

    if kind == "compare":
        figs = interactive_figures(_result(kind, model))
    elif kind == "trace":
        refused = _trace_refused(model)
        if refused is not None:
            return refused
        figs = interactive_figures(_result(kind, model))
    elif kind == "cost":
        return cost_figure(model) + kinds.cost_section(model)
    elif kind == "kinds":
        return kinds.kinds_section(model)
    else:
        doc = run_neighbors(NeighborsRequest(word="bank", top=8), model).to_dict()
        ana = run_neighbors(NeighborsRequest(analogy="man:king::woman", top=3), model).to_dict()
        rows = "".join(
            f"<tr><td>{html.escape(n['word'])}</td><td>{n['cosine']:.3f}</td></tr>" for n in doc["neighbors"]
        )
        best = ", ".join(html.escape(n["word"]) for n in ana["neighbors"])
        return (
            f"<table><tr><th>nearest to “bank” ({html.escape(doc['static_model'])})</th><th>cosine</th></tr>{rows}"
            f"</table><p>analogy man:king::woman → {best}</p>"
        )
    return "".join(interactive.figure_div(f) for f in figs)


def cost_figure(model: ContextualModel | str) -> str:
    """Index bytes for a million vectors at the served model's width beside other common widths.
    The bars lie across, a width's label beside them: standing bars' labels ("384 (minilm)") were
    turned on end at 390 px, and the legend fit.js puts below the axis cut them."""
    import plotly.graph_objects as go

    from contextlens.analyses.search.dimension_cost import index_memory
    from contextlens.reports.interactive import LAYOUT, figure_div

    loaded = as_contextual(model)
    rows = index_memory(loaded.hidden_size)
    flat = [r["flat"] / 2**30 for r in rows]
    sq8 = [r["sq8"] / 2**30 for r in rows]
    labels = [kinds.width_label(r["dimensions"], loaded) for r in rows]
    fig = go.Figure()
    fig.add_bar(y=labels, x=flat, name="flat float32 (exact)", marker_color="#1d4ed8", orientation="h")
    fig.add_bar(y=labels, x=sq8, name="sq8 (1 byte per dimension)", marker_color="#15803d", orientation="h")
    fig.update_layout(
        **LAYOUT, height=420, barmode="group", title="Index memory for 1,000,000 vectors (GiB), by dimension",
        xaxis_title="GiB", yaxis_title="dimensions per vector", yaxis_autorange="reversed", yaxis_ticksuffix=" ",
    )  # fmt: skip
    return figure_div(fig)


SECTIONS = (
    (
        "1. One row per word, whatever the sentence",
        "A static model (and a transformer's own embedding table) hands “bank” the same vector in every sentence. "
        "The layers above it mix in the context. The curve shows the cosine of “bank” across three sentences, layer by "
        "layer: the static and input-row lines stay at 1, the hidden states move apart.",
        "compare",
    ),
    (
        "2. The pipeline",
        "Text becomes tokens, tokens become ids, ids pick rows of the embedding table, positions are added, then every "
        "layer rewrites the vector. Here is “bank” traced through the served model.",
        "trace",
    ),
    (
        "3. Three kinds of embedding",
        "Keep apart (a) the embedding-layer row: one per token, no context; (b) the hidden state: a position's vector "
        "after the layers, context-aware; (c) an embedding model's output: one vector per text, trained for retrieval. "
        "Try (a) and (b) on the <a href='/compare'>compare</a> and <a href='/probe'>probe</a> pages, (c) on "
        "<a href='/search'>search</a>, which searches the index the server was started with: unless it was given "
        "one, <code>contextlens serve</code> serves a small built-in one (<code>lee</code>: 50 news documents). To "
        "search your own texts, build an index of a text file (one document per line) with "
        "<code id='index-build'>{index_build}</code>, then start <code id='index-serve'>{index_serve}</code>. The "
        "static neighbours below come from (a)'s cousin, GloVe.",
        "neighbors",
    ),
    (
        "4. The three kinds in numbers, plus the static vector for contrast",
        "One text, three answers from the one model: its input row gives each token one vector whatever the "
        "sentence (a); its hidden state gives each token position a vector that carries its context (b); its sentence "
        "embedding gives the whole text one vector, for search (c). The first row is not one of the three: it is a "
        "separate static table (GloVe), the kind of model section 1 starts from, shown for contrast: one vector per "
        "word, like (a), but learnt from word co-occurrence, not inside the transformer.",
        "kinds",
    ),
    (
        "5. The cost of a dimension",
        "Every stored vector costs its dimensions times the bytes of one value, times how many you keep: the width "
        "a model gives you is a bill, paid in memory per million vectors, and each engine adds its own overhead.",
        "cost",
    ),
)


def index_commands(model: str) -> dict[str, str]:
    """The two command lines that give section 3's "(c) on search" an index (a test runs them)."""
    return {
        "index_build": f"contextlens index build DOCS.txt --out my-index -m {model}",
        "index_serve": f"contextlens serve -m {model} --index docs=my-index",
    }


QUIZ_COOKIE = "contextlens_quiz"  # the browser session's shuffle seed (a session cookie)


def _quiz_html(model: ContextualModel | str, answers: dict[int, int], seed: int = 0) -> str:
    """The quiz as one form, options in the session's balanced shuffle (``option_orders``); an option
    keeps its number (``value``), so answers mean the same in any order. With scripts on
    (static/page.js) a question's Check asks ``/api/quiz`` without a reload, answers are kept for the
    session and scored by ``/api/quiz-score``; each question carries its live evidence, hidden until
    answered. Without scripts the form sends every picked answer (``?a1=&a2=..``) and the server
    marks each of them and shows the score (``score``), the same one."""
    scored = checkpoint.score(answers)
    results = {r.question: r for r in scored.answers}
    blocks = []
    for i, (question, order) in enumerate(zip(QUIZ, checkpoint.option_orders(seed), strict=True), 1):
        picked = answers.get(i)
        opts = "".join(
            f'<div><label><input type="radio" name="a{i}" value="{k + 1}"{" checked" if picked == k + 1 else ""}> '
            f"{html.escape(question.options[k])}</label></div>"
            for k in order
        )
        feedback, marked = "", ""
        if i in results:
            right = results[i].correct
            verdict = (
                '<p class="ok" id="verdict">Right.</p>' if right
                else f'<p class="error" id="verdict">Not quite: the answer is '
                f"“{html.escape(question.options[question.right])}”.</p>"
            )  # fmt: skip
            feedback = f"{verdict}<p>{html.escape(question.explanation)}</p>"
            marked = f' data-answered="{picked}" data-correct="{int(right)}"'
        shown = "" if i in results else " hidden"
        blocks.append(
            f'<div class="question" id="quiz-{i}" data-question="{i}"{marked}>'
            f"<h3>Q{i}. {html.escape(question.text)}</h3>"
            f'<fieldset class="options"><legend class="dim">Q{i}: pick one</legend>{opts}</fieldset>'
            f'<button type="submit" id="check-{i}" name="check" value="{i}" '
            f'formaction="/lesson#quiz-{i}">Check</button>'
            f'<div class="feedback" aria-live="polite">{feedback}</div>'
            f'<div class="evidence"{shown}>{live_figure(question.evidence, model)}</div></div>'
        )
    line = html.escape(scored.line) if answers else ""
    score_html = (
        f'<p id="quiz-score" aria-live="polite">{line}</p>'
        '<button type="submit" id="quiz-submit">Score my answers</button> '
        '<a href="/lesson" id="quiz-reset" role="button">Start the quiz again</a>'
    )
    return (
        '<h2 id="quiz">Checkpoint quiz</h2><form id="quiz-form" method="get" action="/lesson#quiz-score">'
        + "".join(blocks) + score_html + "</form>"
    )  # fmt: skip


def _number(text: str) -> int:
    """A question or option number of the query (ASCII digits); ValueError for anything else."""
    number = integer_text(text)
    if number is None:
        raise ValueError(text)
    return number


def _answers(query: Any) -> dict[int, int]:
    """The answers a request carries: ``a1``..``aN`` (the quiz form), or one ``q`` and ``a`` (a
    link from an older page); ValueError for a question or option out of range."""
    answers = {}
    for key, value in query.items():
        if key.startswith("a") and is_digits(key[1:]) and value != "":
            answers[int(key[1:])] = _number(value)
    q, a = query.get("q"), query.get("a")
    if q and a:
        answers[_number(q)] = _number(a)
    try:
        checkpoint.score(answers)  # a question or option out of range
    except InputError:
        raise ValueError(answers) from None
    return answers


def routes(
    app: FastAPI,
    pool: WorkerPool,
    model: ContextualModel | str,
    label: str | None = None,
    waiting: deferred.Waiting | None = None,
) -> None:
    """The lesson and the quiz on ``model`` (the served one); ``label`` names it on the page. With
    ``waiting`` (the app's, web/deferred.py) a browser's visit whose figures take longer than
    ``SHOW_PAGE_AFTER_S`` (the first on a large model: mpnet's random-word baseline alone took 27 s)
    gets the text at once, with the status line, and its figures and quiz from ``/result/<token>``."""
    name = model if isinstance(model, str) else model.name
    label = label or name

    @app.post("/api/quiz", summary="Check a quiz answer")
    async def quiz(answer: QuizAnswer) -> dict[str, object]:
        """Whether the answer is right, the right option and why."""
        return checkpoint.check(answer.question, answer.answer).to_dict()

    @app.post("/api/quiz-score", summary="Score the quiz answers given so far")
    async def quiz_score(body: QuizAnswers) -> JSONResponse:
        """Each answer checked as /api/quiz does, and the score over them."""
        try:
            return JSONResponse(checkpoint.score(body.answers).to_dict())
        except InputError as exc:  # a question or option out of range
            return JSONResponse({"error": str(exc), "status": 422}, status_code=422)

    @app.get("/lesson", include_in_schema=False)
    async def lesson(request: HttpRequest, seed: str | None = None) -> HTMLResponse:
        kept = request.cookies.get(QUIZ_COOKIE, "")
        chosen = seed if is_digits(seed) else kept if is_digits(kept) else str(random.randrange(10**9))
        try:
            answers = _answers(request.query_params)
        except ValueError:
            message = (
                f"a question (q, or a1..a{len(QUIZ)}) must be 1..{len(QUIZ)} and its answer 1..{checkpoint.OPTIONS}"
            )
            return JSONResponse({"error": message, "status": 422}, status_code=422)
        task = asyncio.ensure_future(_lesson_parts(pool, model, answers, int(chosen[:9])))
        browser = waiting is not None and deferred.in_a_browser(request.headers)
        done, _ = await asyncio.wait({task}, timeout=deferred.SHOW_PAGE_AFTER_S if browser else None)
        if done:
            try:
                parts, status = task.result(), ""
            except Exception as exc:  # noqa: BLE001
                code, message = error_status(exc)
                return HTMLResponse(pages.frame("Lesson", f'<p class="error">error: {html.escape(message)}</p>', label),
                                    status_code=code)  # fmt: skip
        else:  # the first visit on a large model (only a browser's, so ``waiting`` is given): text now, figures after
            status = deferred.status_block(waiting.put(asyncio.ensure_future(_in_slots(task))))
            parts = [f'<div class="lesson-part" id="{_slot(i)}"></div>' for i in range(len(SECTIONS) + 1)]
        page = HTMLResponse(pages.frame("Static vs contextual: the lesson, live", _body(name, parts, status), label))
        page.set_cookie(QUIZ_COOKIE, chosen[:9], samesite="strict", httponly=True)  # no max-age: this session only
        return page


async def _lesson_parts(
    pool: WorkerPool, model: ContextualModel | str, answers: dict[int, int], seed: int
) -> list[str]:
    """Each section's live figure and numbers, then the quiz: what the lesson computes (kept per
    model by ``_result`` and ``_live_figure``, so only a model's first visit waits)."""
    figures = await pool.run(lambda: [live_figure(k, model) + live_numbers(k, model) for _, _, k in SECTIONS])
    return [*figures, await pool.run(lambda: _quiz_html(model, answers, seed))]


def _slot(i: int) -> str:
    return f"lesson-part-{i + 1}"


async def _in_slots(parts: asyncio.Future[list[str]]) -> str:
    """The parts as the deferred result: each in a ``data-slot`` that static/page.js moves into the
    page's empty part of that id."""
    return "".join(f'<div data-slot="{_slot(i)}">{part}</div>' for i, part in enumerate(await parts))


def _body(name: str, parts: list[str], status: str) -> str:
    """The lesson: the served model's line, the sections' text each above its part, the quiz last."""
    commands = {k: html.escape(v) for k, v in index_commands(name).items()}
    return (
        tables.kind_line(name)
        + '<p><a href="#quiz" id="skip-to-quiz">Skip to the quiz</a></p>'
        + status
        + "".join(
            f"<h2>{title}</h2><p>{text.format(**commands)}</p>{part}"
            for (title, text, _), part in zip(SECTIONS, parts[:-1], strict=True)
        )
        + parts[-1]
    )
