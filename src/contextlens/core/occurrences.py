"""Occurrences: one target word in one text, located by its character span.

Character offsets are the ground truth everywhere in contextlens; tokens are mapped onto them
later (see :mod:`contextlens.core.alignment`). A target is given in one of three ways:

* marker syntax: ``"The river [bank] flooded."`` (exactly one pair of brackets);
* a word plus an occurrence index: ``locate("The bank by the bank", "bank", index=1)``;
* a character span: ``Occurrence.from_span(text, 4, 8)``.

Texts and words are normalized to Unicode NFC once, when the occurrence is made (``"cafe"`` +
combining accent becomes ``"café"``); the offsets of an occurrence always index its NFC text.
"""

from __future__ import annotations

import difflib
import operator
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from contextlens.errors import EmptyTextError, InputError, MarkerError, TargetNotFoundError

OPEN_MARKER = "["
CLOSE_MARKER = "]"
_WORD_RE = re.compile(r"\w+(?:[-']\w+)*")
# Alphabetic words (with one apostrophe part, "don't"), as the corpus benchmarks count words.
ALPHA_WORD_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


@dataclass(frozen=True)
class Occurrence:
    """A target word in a text: ``text[start:end]`` is the word."""

    text: str
    start: int
    end: int

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise InputError(f"expected the text as a str, got {type(self.text).__name__}")
        for name in ("start", "end"):
            value = getattr(self, name)
            if isinstance(value, bool):
                raise InputError(f"{name} must be a character offset (int), got {value!r}")
            try:
                object.__setattr__(self, name, operator.index(value))
            except TypeError:
                raise InputError(f"{name} must be a character offset (int), got {type(value).__name__}") from None
        if not self.text.strip():
            raise EmptyTextError("the text is empty; give a sentence that contains the target word")
        _check_encodable(self.text)
        if not (0 <= self.start < self.end <= len(self.text)):
            raise InputError(
                f"span {self.start}:{self.end} does not lie inside the text of length "
                f"{len(self.text)}; give 0 <= start < end <= length"
            )
        if not self.word.strip():
            raise InputError(f"span {self.start}:{self.end} covers only whitespace; mark a word")
        if not unicodedata.is_normalized("NFC", self.text):
            self._to_nfc()

    def _to_nfc(self) -> None:
        """Re-express the span in the NFC form of the text (offsets move where characters merge)."""
        text, start, end = self.text, self.start, self.end
        nfc = unicodedata.normalize("NFC", text)
        new_start = len(unicodedata.normalize("NFC", text[:start]))
        new_end = max(new_start, min(len(nfc), len(unicodedata.normalize("NFC", text[:end]))))
        if not nfc[new_start:new_end].strip():
            raise InputError(f"span {start}:{end} covers only a combining mark of {text!r}; mark the whole word")
        object.__setattr__(self, "text", nfc)
        object.__setattr__(self, "start", new_start)
        object.__setattr__(self, "end", new_end)

    @property
    def word(self) -> str:
        """The target as written in the text."""
        return self.text[self.start : self.end]

    @classmethod
    def from_span(cls, text: str, start: int, end: int) -> Occurrence:
        """The occurrence at characters ``start:end`` of ``text``."""
        return cls(text, start, end)

    def marked(self) -> str:
        """The text in marker syntax, e.g. ``"The river [bank] flooded."``."""
        return f"{self.text[: self.start]}[{self.word}]{self.text[self.end :]}"

    def to_dict(self) -> dict[str, object]:
        return {"text": self.text, "start": self.start, "end": self.end, "word": self.word}


def parse_marked(text: str, named_by: str | None = None) -> Occurrence:
    """Read ``"The river [bank] flooded."``: the brackets are removed and mark the target. An
    unmarked text's error offers the parameter ``named_by`` only where the caller has one: a file's
    line or a ``like`` example has no other way to name its word, so its error offers none."""
    _require_text(text)
    opens, closes = text.count(OPEN_MARKER), text.count(CLOSE_MARKER)
    if opens != closes:
        raise MarkerError(
            f"unbalanced markers in {text!r}: {opens} '[' and {closes} ']'; "
            "put exactly one word in brackets, like 'The river [bank] flooded.'"
        )
    if opens > 1:
        raise MarkerError(f"{opens} marked targets in {text!r}; mark exactly one word per sentence")
    if opens == 0:
        raise MarkerError(
            f"no [marked] target in {text!r}; put the target in brackets, like 'The river [bank] flooded.'"
            + (f", or name it with `{named_by}`" if named_by else "")
        )
    start = text.index(OPEN_MARKER)
    close = text.index(CLOSE_MARKER)
    if close < start:
        raise MarkerError(f"']' comes before '[' in {text!r}; write the target as [word]")
    inner = text[start + 1 : close]
    if not inner.strip():
        raise MarkerError(f"the brackets in {text!r} are empty; put the target word inside them")
    # Keep the target's own surrounding whitespace outside the span.
    lead = len(inner) - len(inner.lstrip())
    trail = len(inner) - len(inner.rstrip())
    clean = text[:start] + inner + text[close + 1 :]
    return Occurrence(clean, start + lead, start + len(inner) - trail)


def find_word(text: str, word: str, index: int = 0, *, case_sensitive: bool = False) -> Occurrence:
    """The ``index``-th whole-word occurrence of ``word`` in ``text`` (case-insensitive by default)."""
    _require_text(text)
    if not isinstance(word, str):
        raise InputError(f"word: expected the target word as a str, got {type(word).__name__}; e.g. word='bank'")
    given = index
    try:
        index = operator.index(index) if not isinstance(index, bool) else None
    except TypeError:
        index = None
    if index is None:
        raise InputError(f"index: the occurrence index must be an int (0 for the first occurrence), got {given!r}")
    if not word.strip():
        raise InputError("the target word is empty; name the word to look for")
    text = unicodedata.normalize("NFC", text)
    word = unicodedata.normalize("NFC", word.strip())
    matches = list(word_pattern([word], case_sensitive).finditer(text))
    if not matches:
        raise TargetNotFoundError(_not_found_message(text, word))
    if index < 0:
        index += len(matches)
    if not 0 <= index < len(matches):
        raise TargetNotFoundError(
            f"{word!r} occurs {len(matches)} time(s) in {text!r}; occurrence index must be "
            f"between 0 and {len(matches) - 1}"
        )
    m = matches[index]
    return Occurrence(text, m.start(), m.end())


def word_pattern(words: list[str], case_sensitive: bool = False) -> re.Pattern[str]:
    """One regex for whole-word matches of any of ``words`` (NFC; longest first)."""
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", 0 if case_sensitive else re.IGNORECASE)


def find_all(text: str, pattern: re.Pattern[str]) -> list[Occurrence]:
    """Every match of a :func:`word_pattern` in an NFC ``text``, in text order (corpus scanning)."""
    return [Occurrence(text, m.start(), m.end()) for m in pattern.finditer(text)]


def locate(text: str, word: str | None = None, index: int = 0) -> Occurrence:
    """One entry point for both spellings: marker syntax, or ``word`` (+ ``index``)."""
    _require_text(text)
    if word is not None:
        if OPEN_MARKER in text or CLOSE_MARKER in text:
            raise MarkerError(f"{text!r} has [markers] and a word was named too; use one of the two")
        return find_word(text, word, index)
    return parse_marked(text, named_by="word")


# One neutral sentence for a word standing alone (rank, probe anchors, the similarity benchmark).
LONE_WORD_TEMPLATE = "The word is [{word}]."


def in_template(word: str, template: str = LONE_WORD_TEMPLATE) -> Occurrence:
    """The word placed in a template such as ``"The word is [{word}]."`` (brackets mark it)."""
    if template.count("[{word}]") != 1:
        raise InputError(
            f"template {template!r} must contain '[{{word}}]' exactly once, e.g. 'The word is [{{word}}].'"
        )
    if not word.strip() or len(word.split()) != 1 or "[" in word or "]" in word:
        raise InputError(f"{word!r} is not a single word; give words without spaces or brackets")
    return parse_marked(template.replace("{word}", word.strip()))


def words_in(text: str) -> list[str]:
    """The word tokens of a text, as a simple regex sees them (used for suggestions)."""
    return _WORD_RE.findall(text)


def is_single_word(text: str) -> bool:
    """True for one word such as ``shore`` or ``well-known`` (no spaces, no punctuation around)."""
    return _WORD_RE.fullmatch(text.strip()) is not None


def _require_text(text: str) -> None:
    if not isinstance(text, str):
        raise InputError(f"text: expected a text (str), got {type(text).__name__}")
    if not text.strip():
        raise EmptyTextError("the text is empty; give a sentence that contains the target word")


def _not_found_message(text: str, word: str) -> str:
    candidates = sorted(set(words_in(text)), key=str.lower)
    lowered = {c.lower(): c for c in candidates}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=3, cutoff=0.6)
    contains = [c for lc, c in lowered.items() if word.lower() in lc and lc not in close]
    hints = [lowered[c] for c in close] + contains[:3]
    hint = f"; close words in the text: {', '.join(hints)}" if hints else ""
    return f"{word!r} does not occur as a whole word in {text!r}{hint}"


def locate_all(sentences: Sequence[str], word: str | None = None, index: int = 0) -> list[Occurrence]:
    """Marker syntax per sentence, or ``word`` (+ its ``index``-th occurrence) in every sentence:
    how both faces read the sentences a user types."""
    if not sentences:
        raise InputError("no sentences given; pass sentences like 'The river [bank] flooded.'")
    return [locate(s, word or None, index) for s in sentences]


def _check_encodable(text: str) -> None:
    """Refuse text that is not valid Unicode (a lone surrogate from a bad decode): no tokenizer takes it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"the text is not valid Unicode (a lone surrogate at character {exc.start}); "
            "read the file as UTF-8 and give the sentence again"
        ) from None
