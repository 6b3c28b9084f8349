"""`eval wic`'s dev/test pairs over their own texts, encoded apart from the suite (disk-cached).

Why a measure: the sense choice of ``--layer auto``, same-sense's rule and `eval wic` need only these
pairs' spans; encoding them alone costs a fraction of the whole suite (docs/speed.md, issue 30), and
all three read this one encoding, so their numbers agree. It is shared by fp32 on torch and on
ONNX Runtime whose export check passed (the model's shared identity), so `eval wic` on either
reads what the other computed; the encoding records which (``made_on``). The suite (analyses/benchmarks/suite.py)
builds its WiC rows from the same pairs.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any

from contextlens.analyses.measures.datasets import WicData, build_wic
from contextlens.analyses.measures.sizes import SEED, SIZES
from contextlens.analyses.measures.span_encoding import Progress, Span, SpanEncoding, SpanRows, encode_spans, is_encoded
from contextlens.core import wordnet as wn
from contextlens.core.contextual_models import ContextualModel, as_contextual


@dataclass
class WicSet:
    """`eval wic`'s dev and test pairs (the suite's, the same WicData) over their own texts."""

    size: str
    wic: WicData
    texts: list[str]
    spans: list[Span]
    rows: list[tuple[int, int]]  # each pair's two rows in ``spans``
    counts: dict[str, Any] = field(default_factory=dict)


def pair_rows(wic: WicData, b: SpanRows) -> list[tuple[int, int]]:
    """Each pair's two span rows in ``b`` (added when new)."""
    return [
        (b.span(p.first.text, p.first.start, p.first.end), b.span(p.second.text, p.second.start, p.second.end))
        for p in wic.pairs
    ]


def _own_rows(wic: WicData) -> tuple[list[str], list[Span], list[tuple[int, int]]]:
    b = SpanRows()
    rows = pair_rows(wic, b)
    return b.texts, b.spans, rows


@functools.cache
def build_wic_set(size: str = "full") -> WicSet:
    """The WiC dev/test pairs of the suite at ``size`` (built as the suite builds them)."""
    wn.check_installed()  # fail early and clearly, even when the examples are cached
    wic = build_wic(wn.usage_examples(), max_lemmas=SIZES[size].wic_lemmas, seed=SEED)
    texts, spans, rows = _own_rows(wic)
    counts = {"texts": len(texts), "spans": len(spans), "wordnet_examples": wn.usage_example_stats()}
    return WicSet(size, wic, texts, spans, rows, counts)


def encode_wic(
    model: ContextualModel | str, size: str, progress: Progress | None = None
) -> tuple[WicSet, SpanEncoding, float]:
    """The WiC dev/test pairs' spans through ``model`` (disk-cached); and the seconds it took."""
    wic = build_wic_set(size)
    model = as_contextual(model)
    started = time.perf_counter()
    encoding = encode_spans(model, wic.texts, wic.spans, progress=progress, shared=True)
    return wic, encoding, time.perf_counter() - started


def wic_is_encoded(model: ContextualModel, size: str) -> bool:
    """Whether :func:`encode_wic` would read its cache (no encoding) for ``model``."""
    wic = build_wic_set(size)
    return is_encoded(model, wic.texts, wic.spans, shared=True)
