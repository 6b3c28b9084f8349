"""`contextlens quiz`: the lesson's checkpoint quiz in the terminal, scored by the one quiz analysis.

Asked one question at a time (options in a balanced shuffle, typed by the number shown), or answered
at once with ``--answers 2,1,3`` (the options' own numbers, as the web API takes them). ``--json``
prints the score document ``POST /api/quiz-score`` answers for the same answers.
"""

from __future__ import annotations

import random
import sys
from typing import Annotated

import typer
from rich.markup import escape

from contextlens.analyses.lesson import quiz
from contextlens.cli.common import JsonOpt, console, err_console, print_json
from contextlens.cli.registry import app
from contextlens.core.numerals import integer_text
from contextlens.errors import InputError


@app.command("quiz")
def quiz_cmd(
    answers: Annotated[
        str | None,
        typer.Option(
            "--answers", help="Answer without asking: option numbers in question order, e.g. 2,1,3 (the first 3)."
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="The options' shuffle when asked (default: a new one each run).")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """The lesson's checkpoint quiz: five questions on static and contextual embeddings, scored."""
    out = err_console if json_out else console  # with --json, stdout holds the document only
    if answers is not None:
        scored = quiz.score(quiz.answers_in_order(_numbers(answers)))
    else:
        scored = quiz.score(_ask(out, random.randrange(10**9) if seed is None else seed))
    if json_out:
        print_json(scored.to_dict())
        return
    if answers is not None:
        for checked in scored.answers:
            _question(console, checked.question, list(range(len(quiz.QUIZ[0].options))))
            _verdict(console, checked)
    console.print(f"[bold]{escape(scored.line)}[/bold]")


def _numbers(text: str) -> list[int]:
    """``--answers``: whole numbers separated by commas."""
    parts = [p.strip() for p in text.split(",")]
    numbers = [integer_text(p, signed=False) for p in parts]
    if not parts or any(n is None for n in numbers):
        raise InputError(f"--answers must be option numbers separated by commas, e.g. 2,1,3; got {text!r}")
    return [n for n in numbers if n is not None]


def _question(out, number: int, order: list[int]) -> None:
    """Question ``number`` with its options in ``order`` (0-based option numbers), labelled 1..n as shown."""
    q = quiz.question(number)
    out.print(f"\n[bold]Q{number}. {escape(q.text)}[/bold]")
    for shown, k in enumerate(order, 1):
        out.print(f"  {shown}. {escape(q.options[k])}")


def _verdict(out, checked: quiz.CheckedAnswer) -> None:
    q = quiz.question(checked.question)
    if checked.correct:
        out.print("[green]Right.[/green]")
    else:
        out.print(f"[red]Not quite:[/red] the answer is “{escape(q.options[checked.right_answer - 1])}”.")
    out.print(f"[dim]{escape(checked.explanation)}[/dim]")


def _ask(out, seed: int) -> dict[int, int]:
    """Each question asked on ``out``, an answer read from stdin (the number shown beside an option),
    marked at once. An empty line or the end of the input stops the quiz; it is scored as far as it went."""
    given: dict[int, int] = {}
    for number, order in enumerate(quiz.option_orders(seed), 1):
        _question(out, number, order)
        shown = _read(out, len(order))
        if shown is None:
            break
        given[number] = order[shown - 1] + 1  # the option's own number
        _verdict(out, quiz.check(number, given[number]))
    return given


def _read(out, count: int) -> int | None:
    """A number 1..count typed on stdin (asked again until it is one); None at an empty line or the end."""
    while True:
        out.print(f"your answer (1-{count}, empty to stop): ", end="")
        line = sys.stdin.readline()
        if not line.strip():
            if not line:
                out.print()
            return None
        number = integer_text(line.strip(), signed=False)
        if number is not None and 1 <= number <= count:
            return number
        out.print(f"[red]type a number from 1 to {count}[/red]")
