"""Nearest words and analogies in a static model: the frozen space the lesson starts from.

One function for both faces: ``contextlens neighbors`` and the web page return the same document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contextlens.core.jsonable import plain_json
from contextlens.core.static_models import StaticModel, as_static
from contextlens.errors import InputError


@dataclass(frozen=True)
class Neighbors:
    """The query (positive and negative words, or an analogy) and its nearest words by cosine."""

    static_model: str
    positive: list[str]
    negative: list[str]
    neighbors: list[tuple[str, float]] = field(default_factory=list)
    analogy: str | None = None
    composed: dict[str, str] = field(default_factory=dict)  # unseen word -> how its vector was composed

    @property
    def title(self) -> str:
        """How the query reads: ``king:man::queen`` or ``king + woman - man``."""
        return self.analogy or " + ".join(self.positive) + "".join(f" - {n}" for n in self.negative)

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        query: dict[str, Any] = {"analogy": self.analogy} if self.analogy else {}
        return {
            "static_model": self.static_model,
            **query,
            "positive": self.positive,
            "negative": self.negative,
            "neighbors": [{"word": w, "cosine": s} for w, s in self.neighbors],
            **({"composed": self.composed} if self.composed else {}),
        }


def parse_analogy(text: str) -> tuple[str, str, str]:
    """``a:b::c`` (or ``a:b:c``) into its three words."""
    parts = text.replace("::", ":").split(":")
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise InputError(f"`analogy` {text!r} is not of the form a:b::c (e.g. king:man::queen)")
    a, b, c = (p.strip() for p in parts)
    return a, b, c


def neighbors(
    static: StaticModel | str,
    word: str | None = None,
    positive: Sequence[str] = (),
    negative: Sequence[str] = (),
    analogy: str | None = None,
    top: int = 10,
) -> Neighbors:
    """Nearest words to ``word`` (+ ``positive`` - ``negative``), or the answers to ``analogy`` (b - a + c)."""
    if top < 1:
        raise InputError(f"`top` must be at least 1, got {top}")
    if analogy is not None and analogy.strip() and (word or positive or negative):
        raise InputError(
            "give either `analogy` or `word` (with `positive`/`negative`), not both: an analogy would ignore the words"
        )
    model = as_static(static)
    if analogy is not None and analogy.strip():
        a, b, c = parse_analogy(analogy)
        found = model.analogy(a, b, c, topn=top)
        return Neighbors(model.name, [b, c], [a], list(found), f"{a}:{b}::{c}", _composed(model, [a, b, c]))
    pos = ([word] if word else []) + list(positive)
    neg = list(negative)
    if not pos and not neg:
        raise InputError("give a word, an `analogy` a:b::c, or `positive`/`negative` words")
    found = list(model.most_similar(pos, neg, topn=top))
    return Neighbors(model.name, pos, neg, found, composed=_composed(model, [*pos, *neg]))


def _composed(model: StaticModel, words: Sequence[str]) -> dict[str, str]:
    """The query words the model never saw, each with how its vector was composed (fastText:
    character n-grams; a distilled model: the teacher's word pieces)."""
    notes = {w: model.composition_note(w) for w in words}
    return {w: n for w, n in notes.items() if n is not None}
