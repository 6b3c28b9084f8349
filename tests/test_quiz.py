"""The checkpoint quiz as an analysis (analyses/lesson/quiz.py): its scoring, and the faces that use
it besides the web lesson: `contextlens quiz` in the terminal and ``contextlens.notebook.quiz``."""

from __future__ import annotations

import io
import json

import pytest

from contextlens.analyses.lesson import quiz
from contextlens.errors import InputError
from tests.helpers import run_cli, run_cli_subprocess

RIGHT = [q.right + 1 for q in quiz.QUIZ]  # every question's right option, 1-based


def test_check_marks_an_answer_and_names_the_right_option():
    right = quiz.check(1, RIGHT[0])
    assert right.correct and right.right_answer == RIGHT[0] and right.explanation == quiz.QUIZ[0].explanation
    wrong = quiz.check(3, 1)
    assert not wrong.correct and wrong.right_answer == 3
    assert wrong.to_dict() == {"question": 3, "answer": 1, "correct": False, "right_answer": 3,
                               "explanation": quiz.QUIZ[2].explanation}  # fmt: skip


def test_score_counts_the_right_answers_of_those_given_in_question_order():
    scored = quiz.score({3: 3, 1: 2, 2: 1})
    assert [a.question for a in scored.answers] == [1, 2, 3]
    assert (scored.right, scored.answered, scored.questions) == (2, 3, 5)
    assert scored.line == "score: 2 right of 3 answered (5 questions)"
    assert quiz.score(dict(enumerate(RIGHT, 1))).right == 5 and quiz.score({}).line.startswith("score: 0 right of 0")


@pytest.mark.parametrize(
    ("answers", "message"),
    [({6: 1}, "question 6 is not one of the quiz's questions: give 1..5"),
     ({0: 1}, "question 0"), ({1: 4}, "answer 4 to question 1 is not an option: give 1..3"),
     ({1: 0}, "answer 0"), ({1: True}, "answer True")],
)  # fmt: skip
def test_a_question_or_option_out_of_range_is_one_typed_line(answers, message):
    with pytest.raises(InputError) as err:
        quiz.score(answers)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_answers_in_order_and_too_many():
    assert quiz.answers_in_order([2, 1]) == {1: 2, 2: 1}
    with pytest.raises(InputError, match="6 answers given; the quiz has 5 questions"):
        quiz.answers_in_order([1] * 6)


def test_the_cli_scores_given_answers_as_the_web_api_does():
    """`contextlens quiz --answers 2,1,3 --json` in a fresh process prints the document of the one
    scoring; the table form names each verdict and the score line."""
    done = run_cli_subprocess("quiz", "--answers", "2,1,3", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == quiz.score({1: 2, 2: 1, 3: 3}).to_dict()
    shown = run_cli_subprocess("quiz", "--answers", "2,1")
    assert shown.returncode == 0, shown.stderr
    assert "Right." in shown.stdout and "Not quite" in shown.stdout
    assert shown.stdout.strip().endswith("score: 1 right of 2 answered (5 questions)")


@pytest.mark.parametrize(
    ("answers", "message"),
    [("2,x", "--answers must be option numbers separated by commas"), ("2,7", "answer 7 to question 2"),
     ("1,1,1,1,1,1", "6 answers given")],
)  # fmt: skip
def test_the_cli_refuses_bad_answers_in_one_line(answers, message):
    done = run_cli("quiz", "--answers", answers)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {message}"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_cli_asks_each_question_reads_an_answer_and_scores(monkeypatch):
    """Asked interactively (stdin): options shown in the seed's balanced shuffle, an answer typed by
    its shown number, a bad line asked again, an empty line stops; the score is the analysis's."""
    order = quiz.option_orders(7)
    shown_right = order[0].index(quiz.QUIZ[0].right) + 1  # where question 1's right option is shown
    shown_wrong = next(k for k in (1, 2, 3) if order[1][k - 1] != quiz.QUIZ[1].right)
    typed = f"{shown_right}\nnine\n{shown_wrong}\n\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(typed))
    done = run_cli("quiz", "--seed", "7", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # with --json the questions go to stderr, the document to stdout
    assert [a["question"] for a in doc["answers"]] == [1, 2]
    assert [a["correct"] for a in doc["answers"]] == [True, False]
    assert doc["answers"][1]["answer"] == order[1][shown_wrong - 1] + 1  # the option's own number
    assert "Q1. " in done.stderr and "Q3. " in done.stderr and "type a number from 1 to 3" in done.stderr
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # the end of the input: scored as far as it went
    ended = run_cli("quiz", "--seed", "7")
    assert ended.returncode == 0 and "score: 0 right of 0 answered (5 questions)" in ended.stdout


def test_the_notebook_shows_and_scores_the_same_quiz():
    from contextlens import notebook

    sheet = notebook.quiz({1: 2, 3: 1})
    assert sheet.score == quiz.score({1: 2, 3: 1})
    page = sheet._repr_html_()
    assert page.count("<ol>") == 5 and "Right." in page and "Not quite: the answer is 3." in page
    assert "score: 1 right of 2 answered (5 questions)" in page
    with pytest.raises(InputError, match="question 9"):
        notebook.quiz({9: 1})


def test_a_learner_guessing_by_the_options_shape_scores_no_better_than_chance():
    """Regression (issue 33): the right answer was always the hedged option and the wrong ones said
    "always", "entirely", "every task". Now no option says such an absolute, and neither "pick
    the longest" nor "pick the hedged one" gets more than 2 of the 5 (chance: 5/3)."""
    absolutes = ("always", "entirely", "every task", "never", "any task", "whatever", "completely")
    hedges = ("not always", "depends", "may ", "might", "often", "usually", "can ")
    for q in quiz.QUIZ:
        for option in q.options:
            assert not any(word in option.lower() for word in absolutes), option
    longest = sum(max(range(len(q.options)), key=lambda k: len(q.options[k])) == q.right for q in quiz.QUIZ)
    hedged = sum(
        next((k for k, o in enumerate(q.options) if any(h in o.lower() for h in hedges)), -1) == q.right
        for q in quiz.QUIZ
    )
    assert longest <= 2 and hedged <= 2, (longest, hedged)
    assert len({q.right for q in quiz.QUIZ}) >= 2  # the right option is not in one place in the quiz's own order
