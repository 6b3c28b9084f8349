"""Alignment: characters -> tokens. The one span-to-token rule of contextlens.

Occurrences are character spans (:mod:`contextlens.core.occurrences`); a model sees tokens. A
token belongs to the target when it is not a special token, covers at least one character and
overlaps ``[start, end)`` (:func:`overlapping`), so a word split into several tokens
(``river ##bank``) is covered by all of them. A text longer than the model's maximum length is
cut to a window of tokens around the target (:func:`window`), never simply at its end, and the
result says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextlens.core.backbone import Backbone
from contextlens.core.occurrences import Occurrence
from contextlens.errors import InputError


@dataclass(frozen=True)
class TokenizedOccurrence:
    """An occurrence mapped onto the model's tokens (after any windowing)."""

    occurrence: Occurrence
    input_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    offsets: tuple[tuple[int, int], ...]  # character spans in the original text; (0, 0) special
    special: tuple[bool, ...]
    target_positions: tuple[int, ...]
    truncated: bool = False
    window: tuple[int, int] | None = None  # characters of the original text that were kept

    def __len__(self) -> int:
        return len(self.input_ids)


def tokenize_many(
    model: Backbone, occurrences: Sequence[Occurrence], max_length: int | None = None
) -> list[TokenizedOccurrence]:
    """Map occurrences onto ``model``'s tokens in one tokenizer call; window the too long ones."""
    if not occurrences:
        return []
    limit = max_length or model.max_length
    distinct = list(dict.fromkeys(o.text for o in occurrences))  # a text is tokenized once
    encs = model.tokenizer(
        distinct,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        add_special_tokens=True,
        truncation=False,
        verbose=False,
    )
    tokenized: dict[str, tuple] = {}
    # read the Rust encodings directly: their tokens are the vocabulary's strings (what
    # convert_ids_to_tokens returns), without a Python call per token
    for text, e in zip(distinct, encs.encodings, strict=True):
        tokenized[text] = (tuple(e.ids), tuple(e.offsets), tuple(map(bool, e.special_tokens_mask)), tuple(e.tokens))
    out = []
    for occurrence in occurrences:
        ids, offsets, special, tokens = tokenized[occurrence.text]
        targets = overlapping(offsets, special, occurrence.start, occurrence.end)
        if not targets:
            raise InputError(
                f"no token of {model.name} covers {occurrence.word!r} at characters "
                f"{occurrence.start}:{occurrence.end} of {occurrence.text!r}; the tokenizer dropped it"
            )
        truncated, kept = False, None
        if len(ids) > limit:
            cut_ids, cut_offsets, cut_special, targets, kept = window(ids, offsets, special, targets, limit)
            ids, offsets, special = tuple(cut_ids), tuple(cut_offsets), tuple(cut_special)
            tokens = tuple(model.tokenizer.convert_ids_to_tokens(cut_ids))
            truncated = True
        out.append(TokenizedOccurrence(occurrence, ids, tokens, offsets, special, tuple(targets), truncated, kept))
    return out


def overlapping(offsets: Sequence[tuple[int, int]], special: Sequence[bool], start: int, end: int) -> list[int]:
    """Positions of the non-special, non-empty tokens that overlap characters ``[start, end)``."""
    return [i for i, (a, b) in enumerate(offsets) if not special[i] and b > a and a < end and b > start]


def window(ids, offsets, special, targets, limit):
    """Keep ``limit`` tokens: the specials at both ends and a body window centred on the target."""
    n = len(ids)
    head = 0
    while head < n and special[head]:
        head += 1
    tail = n
    while tail > head and special[tail - 1]:
        tail -= 1
    budget = limit - head - (n - tail)
    span = targets[-1] - targets[0] + 1
    if budget < span:
        raise InputError(f"the target spans {span} tokens, more than the {budget} that fit in one window")
    centre = (targets[0] + targets[-1]) // 2
    lo = max(head, min(centre - budget // 2, tail - budget))
    hi = lo + budget
    keep = list(range(head)) + list(range(lo, hi)) + list(range(tail, n))
    new_pos = {old: new for new, old in enumerate(keep)}
    kept = (offsets[lo][0], offsets[hi - 1][1])
    return (
        [ids[i] for i in keep],
        [offsets[i] for i in keep],
        [special[i] for i in keep],
        [new_pos[t] for t in targets],
        kept,
    )
