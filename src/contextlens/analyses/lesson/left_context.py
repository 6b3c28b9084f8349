"""What a decoder's target could see: only the words to its left.

Why: a decoder (smollm2) reads left to right, so "bank" in "The [bank] called about my account."
is encoded from "The" alone; the words that decide its sense come after it and cannot reach it.
A result over a decoder says so, naming what each target saw, whenever words follow a target.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextlens.core.occurrences import ALPHA_WORD_RE, Occurrence


def left_context_note(model: str, occurrences: Sequence[Occurrence]) -> str | None:
    """The note for a decoder's result, or None when no word follows any target (nothing was hidden)."""
    if not any(ALPHA_WORD_RE.search(o.text[o.end :]) for o in occurrences):
        return None
    seen = "; ".join(
        f"{i}: {o.text[: o.start].strip()!r}" if o.text[: o.start].strip() else f"{i}: nothing"
        for i, o in enumerate(occurrences, 1)
    )
    return (
        f"{model} is a decoder: each target sees only the words to its left ({seen}); "
        "words after it that decide the sense are invisible to it"
    )
