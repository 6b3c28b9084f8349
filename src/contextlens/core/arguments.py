"""Argument checks of the public API: what a wrong argument gets back.

Every public entry point checks its arguments first, with these functions, so that a wrong one
(a str where a list of layers goes, a float layer, one text where a list of texts goes, None)
raises an :class:`~contextlens.errors.InputError` that names the Python parameter and says what
was expected, instead of a TypeError from deep inside or, worse, a silent wrong answer (a str
iterated as its characters, a float layer written into a provenance). None of them needs a
model's weights, so they run before any load; the faces map parameters to their flags.
"""

from __future__ import annotations

import contextlib
import math
import operator
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from contextlens.core.occurrences import Occurrence, locate
from contextlens.errors import EmptyTextError, InputError, ParameterError

MARKED_EXAMPLE = "'The river [bank] flooded.'"


def given(value: Any) -> str:
    """What was given, for a message: ``str 'all'``, ``float 2.0``, ``None``, ``list``."""
    if value is None:
        return "None"
    if isinstance(value, str | int | float):
        shown = repr(value)
        return f"{type(value).__name__} {shown if len(shown) <= 40 else shown[:37] + '...'}"
    return type(value).__name__


def whole_number(
    value: Any, name: str, minimum: int | None = None, maximum: int | None = None, floats: bool = False
) -> int:
    """``value`` as an int (numpy integers too; never a bool or a float, not even ``2.0``), from
    ``minimum`` to ``maximum``. With ``floats`` a whole float counts too (a count typed as
    ``1e6``), never nan, inf or 2.5. The error is a ParameterError naming ``name``."""
    number = None
    if floats and isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif not isinstance(value, bool):
        with contextlib.suppress(TypeError):
            number = operator.index(value)
    if number is None:
        raise ParameterError(name, f"must be a whole number{'' if floats else ' (int)'}, got {given(value)}")
    low = minimum is not None and number < minimum
    if low or (maximum is not None and number > maximum):
        bounds = f"at least {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise ParameterError(name, f"must be {bounds}, got {number}")
    return number


def seconds(value: Any, name: str) -> float:
    """A duration: a finite number of seconds, 0 or more (an int or a float, numpy's too; never a
    bool or a str: ``'x'`` was a bare ValueError, and -1 and nan were taken)."""
    if not isinstance(value, bool) and _is_number(value) and math.isfinite(float(value)) and float(value) >= 0:
        return float(value)
    raise ParameterError(name, f"must be a number of seconds, 0 or more, got {given(value)}")


def one_text(value: Any, name: str, what: str = "text") -> str:
    """A single text (a non-blank str), never None, a number or a list; ``what`` names it."""
    if isinstance(value, str) and value.strip():
        return value
    raise ParameterError(name, f"must be a {what} (a non-empty str), got {given(value)}")


def path_argument(value: Any, name: str) -> Path:
    """A file or folder path: a non-blank str or an ``os.PathLike``, never None or a number (``Path``
    of those is a TypeError far from the call)."""
    if isinstance(value, os.PathLike) or (isinstance(value, str) and value.strip()):
        return Path(value)
    raise ParameterError(name, f"must be a path (str or pathlib.Path), got {given(value)}")


def one_word(value: Any, name: str) -> str:
    """A single word (a non-blank str), never None, a number or a list."""
    return one_text(value, name, "word")


def flag(value: Any, name: str) -> bool:
    """A switch: True or False (a numpy bool too), never a str (``'no'`` is truthy) or a number."""
    if isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")):
        return bool(value)
    raise ParameterError(name, f"must be True or False, got {given(value)}")


def layer_number(value: Any, name: str = "layer") -> int:
    """One layer number (0 = the embedding output; negative counts from the top), not yet range-checked."""
    try:
        return whole_number(value, name)
    except InputError:
        raise InputError(
            f"{name} must be a layer number (int; 0 is the embedding output, -1 the top layer), got {given(value)}"
        ) from None


def optional_layer(value: Any, name: str) -> int | None:
    """A layer number, or None (the top layer)."""
    return None if value is None else layer_number(value, name)


MAX_BATCH_SIZE = 8192  # sequences per forward pass; a larger batch only takes more memory, at once


def batch_size(value: Any, name: str = "batch_size") -> int:
    """How many sequences one forward pass takes: a whole number from 1 to :data:`MAX_BATCH_SIZE`."""
    return whole_number(value, name, minimum=1, maximum=MAX_BATCH_SIZE)


def distinct(names: list[str], name: str, what: str = "model") -> list[str]:
    """``names`` when none is repeated; else a ParameterError naming the first repeated one."""
    seen: set[str] = set()
    for item in names:
        if item in seen:
            raise ParameterError(name, f"names {what} {item!r} twice; give each {what} once")
        seen.add(item)
    return names


def layer_numbers(layers: Any, name: str = "layers") -> list[int] | None:
    """A list of layer numbers, or None for all layers; a single number or a str is refused."""
    if layers is None:
        return None
    if _is_number(layers):
        raise InputError(f"{name} must be a list of layer numbers, got {given(layers)}; write {name}=[{layers}]")
    if not _is_collection(layers):
        raise InputError(
            f"{name} must be a list of layer numbers (ints; negative counts from the top) or None for all "
            f"layers, got {given(layers)}; e.g. {name}=[0, 6]"
        )
    return [layer_number(v, f"{name}[{i}]") for i, v in enumerate(layers)]


def occurrence(value: Any, name: str = "occurrence") -> Occurrence:
    """An :class:`Occurrence`, or a marked sentence (located here, as ``compare`` does)."""
    if isinstance(value, Occurrence):
        return value
    if isinstance(value, str):
        return locate(value)
    raise InputError(
        f"{name}: expected an Occurrence or a marked sentence like {MARKED_EXAMPLE}, got {given(value)}; "
        "make one with locate()"
    )


def occurrence_list(values: Any, name: str = "occurrences") -> list[Occurrence]:
    """A list of occurrences (or marked sentences); one occurrence alone is refused, naming the fix."""
    if isinstance(values, Occurrence | str) or not _is_collection(values):
        raise InputError(
            f"{name} must be a list of Occurrences (or marked sentences like {MARKED_EXAMPLE}), got "
            f"{given(values)}; wrap a single one in a list"
        )
    return [occurrence(v, f"{name}[{i}]") for i, v in enumerate(values)]


def text_list(values: Any, name: str = "texts") -> list[str]:
    """A non-empty list of non-blank texts; one str alone is refused (it would be read as its characters)."""
    if isinstance(values, str):
        raise InputError(f"{name} must be a list of texts, got one str; wrap it in a list: {name}=[text]")
    if not _is_collection(values):
        raise InputError(f"{name} must be a list of texts (str), got {given(values)}")
    out = list(values)
    if not out:
        raise InputError(f"{name} is empty; give at least one text")
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise InputError(f"{name}[{i}] must be a text (str), got {given(text)}")
        if not text.strip():
            raise EmptyTextError(f"{name}[{i}] is empty; every text must contain something to encode")
    return out


def word_list(values: Any, name: str) -> list[str]:
    """Words as a list: one str is one word (never its characters); None is no words."""
    if values is None:
        return []
    if isinstance(values, str):
        return [values]
    if not _is_collection(values):
        raise InputError(f"{name} must be a word (str) or a list of words, got {given(values)}")
    out = list(values)
    for i, word in enumerate(out):
        if not isinstance(word, str):
            raise InputError(f"{name}[{i}] must be a word (str), got {given(word)}")
    return out


def _is_number(value: Any) -> bool:
    try:
        operator.index(value)
    except TypeError:
        return isinstance(value, float)
    return True


def _is_collection(value: Any) -> bool:
    return isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping)


def sentences_to_compare(occurrences: list[Occurrence]) -> list[Occurrence]:
    """What ``compare`` compares: two or more occurrences (the one message every face shows)."""
    if len(occurrences) < 2:
        raise InputError(
            f"compare needs at least two sentences, got {len(occurrences)}; give the same word in two or more "
            "contexts, e.g. 'The [bank] called.' 'The river [bank] flooded.'"
        )
    return occurrences
