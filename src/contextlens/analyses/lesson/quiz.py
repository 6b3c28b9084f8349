"""The lesson's checkpoint quiz: five questions written from the seed's "common misconceptions", and
their scoring, for every face (the web lesson, ``contextlens quiz``, ``contextlens.notebook.quiz``).

Questions and options are numbered from 1, in the quiz's own order; a face may show the options in
another order (:func:`option_orders`) but an answer always names an option by its own number, so an
answer means the same on every face. An answer out of range is an :class:`~contextlens.errors.InputError`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from contextlens.errors import InputError


@dataclass(frozen=True)
class Question:
    """One question; ``right`` is the 0-based index of the right option; ``evidence`` names the
    lesson analysis whose live result explains the answer (``compare``, ``trace`` or ``neighbors``)."""

    text: str
    options: tuple[str, ...]
    right: int
    explanation: str
    evidence: str


QUIZ: tuple[Question, ...] = (
    Question(
        "A transformer such as BERT or MiniLM: where does the vector for “bank” start?",
        (
            "Nowhere fixed: the model computes it from the whole sentence at once",
            "In a fixed row of its embedding table, the same in every sentence",
            "In the first attention layer, which mixes it with the words around it",
        ),
        1,
        "Every token starts as a fixed row of the model's own embedding table; attention builds on top of it. "
        "In the trace, the input row of “bank” is a lookup; only the layers above it change with context.",
        "trace",
    ),
    Question(
        "Is a contextual embedding always the better choice?",
        (
            "Yes: a contextual vector carries more information, so it wins on each task",
            "It depends: a static table is far cheaper and still ranks similar words well",
            "Only for long texts; for single words both kinds give the same vectors",
        ),
        1,
        "For fast retrieval or word similarity a static table needs no forward pass; for meaning in context the "
        "contextual state wins. The static neighbours, computed in microseconds, are sensible words.",
        "neighbors",
    ),
    Question(
        "Can you compare the hidden state of “bank” from one model with the hidden state of “bank” from another?",
        (
            "Yes, once both vectors are normalised to unit length",
            "Yes, as long as both models have the same hidden size",
            "No: each model has its own representation space",
        ),
        2,
        "Hidden states are not interoperable across models: different architecture, training and space "
        "(contextlens refuses such a comparison with a ProvenanceMismatchError). Compare within one model.",
        "compare",
    ),
    Question(
        "Once attention has run, is the initial embedding table useless?",
        (
            "Mostly: by the top layer the hidden state no longer depends on it",
            "No: it is the input every layer builds on",
            "It matters only for rare words that attention cannot place yet",
        ),
        1,
        "The embedding table is the foundation: layer 0 of the trace is the input row plus position, and each "
        "later layer is a change made to it.",
        "trace",
    ),
    Question(
        "Is word2vec (a static model) obsolete and wrong?",
        (
            "Largely: its neighbours mix every sense of a word, so they are mostly noise",
            "No: it cannot see context, but it is fast, compact and good at similarity",
            "Yes for English; it still helps in languages without a good transformer",
        ),
        1,
        "Static vectors cannot tell the river bank from the money bank (their line is flat at cosine 1 in the "
        "comparison), but they are compact and fast, and their neighbours and analogies still make sense.",
        "compare",
    ),
)
OPTIONS = len(QUIZ[0].options)  # every question has this many options


@dataclass(frozen=True)
class CheckedAnswer:
    """One answer marked: ``question`` and ``answer`` 1-based, ``right_answer`` the right option's number."""

    question: int
    answer: int
    correct: bool
    right_answer: int
    explanation: str

    def to_dict(self) -> dict[str, object]:
        return {
            "question": self.question,
            "answer": self.answer,
            "correct": self.correct,
            "right_answer": self.right_answer,
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class QuizScore:
    """The answers given so far, each marked, and the score over them (``questions``: the quiz's size)."""

    answers: tuple[CheckedAnswer, ...]
    questions: int

    @property
    def right(self) -> int:
        return sum(1 for a in self.answers if a.correct)

    @property
    def answered(self) -> int:
        return len(self.answers)

    @property
    def line(self) -> str:
        return f"score: {self.right} right of {self.answered} answered ({self.questions} questions)"

    def to_dict(self) -> dict[str, object]:
        return {
            "answers": [a.to_dict() for a in self.answers],
            "right": self.right,
            "answered": self.answered,
            "questions": self.questions,
            "line": self.line,
        }


def question(number: int) -> Question:
    """Question ``number`` (1-based); InputError naming the range otherwise."""
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(QUIZ):
        raise InputError(f"question {number!r} is not one of the quiz's questions: give 1..{len(QUIZ)}")
    return QUIZ[number - 1]


def check(number: int, answer: int) -> CheckedAnswer:
    """Answer ``answer`` (an option number, 1-based) to question ``number`` marked, with why."""
    q = question(number)
    if isinstance(answer, bool) or not isinstance(answer, int) or not 1 <= answer <= len(q.options):
        raise InputError(f"answer {answer!r} to question {number} is not an option: give 1..{len(q.options)}")
    return CheckedAnswer(number, answer, answer - 1 == q.right, q.right + 1, q.explanation)


def score(answers: Mapping[int, int]) -> QuizScore:
    """Every given answer (question number -> option number) marked by :func:`check`, in question
    order, and the score over them; the one scoring of the quiz."""
    return QuizScore(tuple(check(q, a) for q, a in sorted(answers.items())), len(QUIZ))


def answers_in_order(options: list[int]) -> dict[int, int]:
    """Answers given in question order (``[2, 1, 3]``: question 1 -> option 2, ...) as a mapping."""
    if len(options) > len(QUIZ):
        raise InputError(f"{len(options)} answers given; the quiz has {len(QUIZ)} questions")
    return {i: option for i, option in enumerate(options, 1)}


def option_orders(seed: int) -> list[list[int]]:
    """Per question, the order its options are shown in (0-based option numbers), shuffled by ``seed``
    and balanced: the right answers' places cover every place (as evenly as the count allows), so
    answering "always the second option" scores at most 2 of 5 whatever the seed."""
    rng = random.Random(seed)
    places = [k % OPTIONS for k in range(len(QUIZ))]
    rng.shuffle(places)
    orders = []
    for q, place in zip(QUIZ, places, strict=True):
        others = [k for k in range(len(q.options)) if k != q.right]
        rng.shuffle(others)
        orders.append(others[:place] + [q.right] + others[place:])
    return orders
