"""Tokens as a reader should see them: byte-level BPE markers decoded (``Ġbank`` -> ``␣bank``).

Why: a byte-level BPE tokenizer (GPT-2, SmolLM2, RoBERTa) stores every byte as a printable
character, so the space before a word is the character ``Ġ`` and a newline is ``Ċ``; printed raw,
``Ġbank`` reads as a strange word. :func:`display_token` maps the characters back to their bytes
and decodes them, then shows the whitespace a token carries visibly: a leading space as ``␣``
(the token starts a word), a newline as ``↵``. SentencePiece's ``▁`` (the same leading space) is
shown as ``␣`` too. WordPiece tokens (``bank``, ``##bank``) are left as they are: ``##`` is the
tokenizer's own notation for "continues a word", not a byte encoding. The raw tokens stay in
every JSON document; these are for text, tables and figures.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

SPACE, NEWLINE, TAB = "␣", "↵", "⇥"


@functools.cache
def _byte_decoder() -> dict[str, int]:
    """GPT-2's ``bytes_to_unicode`` inverted: printable character -> the byte it stands for."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = list(printable), 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def is_byte_level(tokenizer: object) -> bool:
    """Whether a Hugging Face tokenizer is byte-level BPE (its pre-tokenizer or decoder is ByteLevel,
    or, for a slow tokenizer, it has a ``byte_encoder``)."""
    if hasattr(tokenizer, "byte_encoder"):
        return True
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return False
    for part in (getattr(backend, "pre_tokenizer", None), getattr(backend, "decoder", None)):
        if part is not None and "ByteLevel" in f"{type(part).__name__} {part.__getstate__()!r}":
            return True
    return False


def display_token(token: str, byte_level: bool = False) -> str:
    """One token for reading: bytes decoded when ``byte_level``; a leading space as ``␣``, newlines
    and tabs as ``↵`` and ``⇥``. Special tokens (``<s>``, ``[CLS]``) pass through."""
    text = token
    if byte_level:
        table = _byte_decoder()
        if all(c in table for c in token):
            text = bytes(table[c] for c in token).decode("utf-8", errors="backslashreplace")
    elif token.startswith("▁"):  # SentencePiece's word start
        text = " " + token[1:]
    return text.replace(" ", SPACE).replace("\n", NEWLINE).replace("\t", TAB)


def display_tokens(tokens: Sequence[str], byte_level: bool = False) -> list[str]:
    return [display_token(t, byte_level) for t in tokens]
