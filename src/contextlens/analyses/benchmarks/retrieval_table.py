"""The retrieval benchmark's rows pivoted into its table: one row per coding, one column per metric.

Faces (the CLI, a web page) only render this: which metrics, which rows, which value is the best
of its column, where the full-dimension float32 systems end and the cost sweep begins.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # faiss comes with it: the table itself needs none
    from contextlens.analyses.benchmarks.retrieval import RetrievalResult


@dataclass(frozen=True)
class RetrievalRow:
    """One system in one coding, with its value for each metric (None where not measured)."""

    kind: str
    layer: int | None
    reduction: str | None
    dim: int
    dtype: str
    bytes_per_vector: float
    values: dict[str, float | None]
    best: list[str] = field(default_factory=list)  # the metrics where this row has the column's best value
    full: bool = True  # full dimension in float32 (the first section) or the cost sweep
    static: str | None = None  # the static model's name, for kind ``static``


@dataclass(frozen=True)
class RetrievalTable:
    title: str
    metrics: list[str]
    rows: list[RetrievalRow]
    chance: dict[str, float]  # chance level per metric name
    fit_on: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def retrieval_table(result: RetrievalResult) -> RetrievalTable:
    """Full-dimension float32 rows first, then the cost sweep, in the benchmark's order."""
    metrics = result.metrics()
    grouped: dict[tuple, dict[str, float]] = {}
    ordered = sorted(result.rows, key=lambda r: not (r["reduction"] is None and r["dtype"] == "float32"))
    for r in ordered:
        key = (r["kind"], r["layer"], r["reduction"], r["dim"], r["dtype"], r["bytes_per_vector"], r.get("static"))
        grouped.setdefault(key, {})[r["metric"]] = float(r["value"])
    best = {m: max((v[m] for v in grouped.values() if m in v), default=None) for m in metrics}
    rows = [
        RetrievalRow(
            kind=kind,
            layer=None if layer is None else int(layer),
            reduction=reduction,
            dim=int(dim),
            dtype=dtype,
            bytes_per_vector=float(nbytes),
            values={m: values.get(m) for m in metrics},
            best=[m for m in metrics if m in values and values[m] == best[m]],
            full=reduction is None and dtype == "float32",
            static=static,
        )
        for (kind, layer, reduction, dim, dtype, nbytes, static), values in grouped.items()
    ]
    title = f"{result.benchmark} — {result.model} ({result.scale}{', quick' if result.quick else ''})"
    return RetrievalTable(title, metrics, rows, result.chance, result.fit_on)
