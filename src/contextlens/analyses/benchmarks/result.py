"""The one result shape every benchmark shares: a tidy table of rows.

``{"benchmark": "wic", "model": "minilm", "rows": [{"system": ..., "layer": 3, "split": "test",
"metric": "accuracy", "value": 0.61}, ...], "meta": {...}}``. Rows are plain dicts so that each
benchmark can carry the columns it needs (retrieval adds ``kind``, ``dim``, ``dtype``,
``bytes_per_vector``); ``meta`` holds data counts, timings and notes, and ``precision`` and
``runtime``: the precision the contextual model ran at (``fp32`` or ``int8``) and its runtime
(``torch`` or ``onnx``), :func:`record_precision`. A benchmark whose faces read its summary has a
subclass with typed fields for it (``wic.WicResult``), whose ``to_dict`` keeps this shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contextlens.core.backend import REFERENCE, Backend
from contextlens.core.jsonable import plain_json

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel


@dataclass
class BenchmarkResult:
    """Tidy benchmark output: one row per (system, layer, split, metric) measurement."""

    benchmark: str
    model: str | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def add(self, **row: Any) -> None:
        self.rows.append(row)

    def select(self, **where: Any) -> list[dict[str, Any]]:
        """Rows whose columns equal every given value."""
        return [r for r in self.rows if all(r.get(k) == v for k, v in where.items())]

    def value(self, **where: Any) -> Any:
        """The value of the first row matching ``where``; None when no row does."""
        rows = self.select(**where)
        return rows[0]["value"] if rows else None

    def pivot(self, by: tuple[str, ...], columns: dict[str, dict[str, Any]], **where: Any) -> list[dict[str, Any]]:
        """A wide table for display: one row per distinct ``by`` values among the rows matching
        ``where`` (first-seen order); column ``name`` holds the value matching ``columns[name]``."""
        keys: list[tuple] = []
        for r in self.select(**where):
            key = tuple(r.get(c) for c in by)
            if key not in keys:
                keys.append(key)
        table = []
        for key in keys:
            fixed = dict(zip(by, key, strict=True))
            table.append({**fixed, **{name: self.value(**fixed, **cond) for name, cond in columns.items()}})
        return table

    def columns(self) -> list[str]:
        """Column names in first-seen order."""
        seen: dict[str, None] = {}
        for r in self.rows:
            for k in r:
                seen.setdefault(k, None)
        return list(seen)

    def metrics(self) -> list[str]:
        """The metric names of the rows, in first-seen order."""
        return list(dict.fromkeys(r["metric"] for r in self.rows if "metric" in r))

    @property
    def size(self) -> str | None:
        """The data's size as every run records it in ``meta``: ``quick`` or ``full`` (None when unrecorded)."""
        return self.meta.get("size")

    @property
    def seconds(self) -> float | None:
        """The run's wall-clock seconds, encoding included (None when unrecorded)."""
        return self.meta.get("seconds")

    @property
    def encode_seconds(self) -> float | None:
        """The seconds spent encoding, part of :attr:`seconds` (None when unrecorded)."""
        return self.meta.get("encode_seconds")

    @property
    def backend(self) -> Backend:
        """The contextual model's precision, runtime and device from ``meta`` (torch fp32 on the CPU
        when unrecorded)."""
        return Backend.from_dict(self.meta)

    @plain_json
    def to_dict(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "model": self.model, "rows": self.rows, "meta": self.meta}


def record_precision(result: BenchmarkResult, model: ContextualModel | str) -> BenchmarkResult:
    """Put the model's precision and runtime in ``meta``: an int8 or ONNX number is never read as a
    torch fp32 one. A name is loaded at fp32 on torch (what
    :func:`~contextlens.core.contextual_models.as_contextual` does)."""
    from contextlens.core.contextual_models import ContextualModel  # torch: not for the command line's --help

    result.meta.update((model.backend if isinstance(model, ContextualModel) else REFERENCE).to_dict())
    return result
