"""Encode speed, side by side in one run: static models (a table look-up and a mean per text, no
forward pass) and contextual models (a forward pass per batch), timed one after the other on the
same texts, with the memory their vectors or weights take. ``eval static`` and ``eval retrieval
--static`` report it; ``benchmarks/static_speed.py`` repeats it and keeps the best time."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contextlens.core.static_models import StaticModel


def word_count(texts: Sequence[str]) -> int:
    """Words by gensim's tokenizer: one count for every system, whatever its own tokenizer cuts."""
    from gensim.utils import tokenize

    return sum(sum(1 for _ in tokenize(t)) for t in texts)


def static_bytes(static: StaticModel) -> int:
    """The bytes of a static model's vectors (fastText's hashed n-gram vectors too)."""
    extra = getattr(static.kv, "vectors_ngrams", None)
    return int(static.kv.vectors.nbytes + (extra.nbytes if extra is not None else 0))


def timed_encodings(systems: Sequence[Any], texts: list[str]) -> list[tuple[str, np.ndarray, float, int]]:
    """Each system's vectors for ``texts``, the seconds they took (one run, one after the other;
    a contextual model warmed up on 8 texts first, then its sentence embedding in batches of 32)
    and the bytes its vectors or weights take."""
    out = []
    for system in systems:
        if isinstance(system, StaticModel):
            started = time.perf_counter()
            enc = system.encode(texts)
            out.append((system.name, enc, time.perf_counter() - started, static_bytes(system)))
        else:
            system.embed_sentences(texts[:8])
            started = time.perf_counter()
            enc = system.embed_sentences(texts, batch_size=32)
            out.append((system.name, enc, time.perf_counter() - started, system.weight_bytes()))
    return out


def speed_rows(timings: Sequence[tuple[str, float]], texts: int, words: int, baseline: str) -> list[dict[str, Any]]:
    """``{"system", "seconds", "texts_per_s", "words_per_s", "times_faster"}`` per timed system;
    ``times_faster`` is the ``baseline`` system's seconds over this one's."""
    base = dict(timings)[baseline]
    return [
        {
            "system": name,
            "seconds": seconds,
            "texts_per_s": texts / seconds,
            "words_per_s": words / seconds,
            "times_faster": base / seconds,
        }
        for name, seconds in timings
    ]


@dataclass(frozen=True)
class SpeedRow:
    """One timed system: seconds for all the texts, texts and words per second, how many times
    faster than the baseline system (its seconds over these), and the bytes of its vectors or weights."""

    system: str
    seconds: float
    texts_per_s: float
    words_per_s: float
    times_faster: float
    bytes: int


@dataclass(frozen=True)
class EncodeSpeed:
    """The speed table as a result records it (``meta["speed"]``): the texts and words timed, the
    baseline system, a row per system, and a note; only the note when nothing could be timed."""

    note: str
    texts: int | None = None
    words: int | None = None
    baseline: str | None = None
    rows: list[SpeedRow] = field(default_factory=list)

    @classmethod
    def of(cls, speed: dict[str, Any]) -> EncodeSpeed:
        return cls(**speed | {"rows": [SpeedRow(**r) for r in speed.get("rows", [])]})
