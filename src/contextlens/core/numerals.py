"""Whole numbers written as text: an option read as text (``--k``, ``--layer``), a URL query
(``?seed=``, ``?layer=``), a vectors file's header, a process id in a file name.

Only ASCII digits count. ``str.isdigit()`` is true for superscripts and other digit-like signs
(``'²'``) that ``int()`` refuses, so a check that said yes was followed by a ValueError (a
traceback, a 500); ``int()`` itself reads other scripts' digits (``'٣'`` is 3) and ``'1_000'``.
Every such check in the package goes through these two functions.
"""

from __future__ import annotations

import re

_INTEGER = re.compile(r"[+-]?[0-9]+")  # [0-9], not \d: \d matches every script's digits
MAX_DIGITS = 4000  # int() refuses longer digit strings (Python's int_max_str_digits, 4300)


def is_digits(text: object) -> bool:
    """True for a non-empty run of the ASCII digits 0-9 and nothing else (no sign, space or ``_``)."""
    return isinstance(text, str) and text.isascii() and text.isdigit()


def integer_text(text: object, signed: bool = True) -> int | None:
    """The int that ``text`` writes in ASCII digits (a leading ``-`` or ``+`` where ``signed``,
    spaces around ignored), or None when it writes none: ``'²'``, ``'٣'``, ``'1_0'``, ``'2.5'``, ``''``."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if len(text) > MAX_DIGITS or not _INTEGER.fullmatch(text) or (not signed and not is_digits(text)):
        return None
    return int(text)
