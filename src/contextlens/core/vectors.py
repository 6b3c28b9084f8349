"""Vectors that remember where they came from.

The seeds warn that "embedding" names three different objects. contextlens keeps them apart by
type: every vector carries a :class:`Provenance` (model, kind, layer; for a vector of a whole
text also its pooling and dimension; the precision the model ran at, fp32 unless int8 was
asked for, and its runtime, torch unless ONNX Runtime was), and
:mod:`contextlens.core.similarity` refuses to compare vectors of different models or kinds.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from contextlens.core.backend import Backend
from contextlens.core.choices import PRECISIONS, RUNTIMES
from contextlens.core.devices import check_device
from contextlens.errors import InputError

Kind = Literal["static", "input-row", "hidden-state", "sentence"]
KINDS: tuple[str, ...] = ("static", "input-row", "hidden-state", "sentence")
# What a provenance may say a model ran at and on (core.precision and core.onnx_runtime run them).


@dataclass(frozen=True)
class Provenance:
    """Where a vector lives: which model, which kind of embedding, which layer (hidden states),
    how tokens were pooled into it (a text's vector), how many dimensions it has (when known) and
    the precision the model ran at (``fp32``, exact, or ``int8``) and the runtime (``torch``, the
    reference, or ``onnx``); what was written before these fields existed reads back as fp32 on
    torch."""

    model: str
    kind: Kind
    layer: int | None = None
    pooling: str | None = None
    dim: int | None = None
    precision: str = "fp32"
    runtime: str = "torch"
    device: str = "cpu"  # or cuda:N; a vector written before devices were recorded was made on the CPU

    def __post_init__(self) -> None:
        """Refuse a provenance that would mislabel its vector (a float layer, an unknown precision)."""
        if not isinstance(self.model, str) or not self.model.strip():
            raise InputError(f"Provenance model must be the model's name (a non-empty str), got {self.model!r}")
        for name, value, allowed in (
            ("kind", self.kind, KINDS),
            ("precision", self.precision, PRECISIONS),
            ("runtime", self.runtime, RUNTIMES),
        ):
            if not isinstance(value, str) or value not in allowed:
                raise InputError(f"unknown Provenance {name} {value!r}; expected one of {', '.join(allowed)}")
        if self.device != "cpu":
            object.__setattr__(self, "device", check_device(self.device))
        for name, minimum in (("layer", 0), ("dim", 1)):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _whole(value, f"Provenance {name}", minimum))
        if self.pooling is not None and not isinstance(self.pooling, str):
            raise InputError(
                f"Provenance pooling must be a str (e.g. 'mean') or None, got {type(self.pooling).__name__}"
            )

    def space(self) -> tuple[str, str]:
        """Vectors are comparable when they share this pair (model, kind). The precision and the
        runtime are not part of it: an int8 or ONNX vector is a slightly moved copy of the torch
        fp32 one (comparing the two is how the drift is measured); a search index is stricter and
        refuses a query at another precision, or int8 on another runtime."""
        return (self.model, self.kind)

    def describe(self) -> str:
        layer = f" layer {self.layer}" if self.layer is not None else ""
        return f"{self.kind}{layer} of {self.model}{self.backend_note()}"

    @property
    def backend(self) -> Backend:
        """The precision, runtime and device the vector was made at, as one value."""
        return Backend(self.precision, self.runtime, self.device)

    def backend_note(self) -> str:
        """`` (int8)``, `` (onnx fp32)``, `` (onnx int8)``; empty for torch fp32."""
        return "" if self.backend.is_reference else f" ({self.backend.label})"

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"model": self.model, "kind": self.kind, "layer": self.layer, "pooling": self.pooling}
        if self.dim is not None:  # only text encoders record it; other JSON shapes stay as they were
            out["dim"] = self.dim
        out["precision"] = self.precision
        if self.runtime != "torch":  # recorded when not the reference; other JSON shapes stay as they were
            out["runtime"] = self.runtime
        if self.device != "cpu":  # likewise: a CPU vector's JSON is what it was before devices
            out["device"] = self.device
        return out


@dataclass(frozen=True)
class Vector:
    """A 1-D float vector with its provenance."""

    values: np.ndarray = field(repr=False)
    provenance: Provenance

    def __post_init__(self) -> None:
        """A float array is kept as it is; a list (or an int array) of numbers becomes float32."""
        if not isinstance(self.provenance, Provenance):
            raise InputError(
                f"Vector provenance must be a Provenance, got {type(self.provenance).__name__}; "
                "e.g. Provenance('minilm', 'hidden-state', layer=6)"
            )
        values = self.values
        if values is None:
            raise InputError("Vector values must be a 1-D array or list of numbers, got None")
        if not (isinstance(values, np.ndarray) and np.issubdtype(values.dtype, np.floating)):
            try:
                values = np.asarray(values)
            except (TypeError, ValueError):  # ragged lists
                raise InputError("Vector values must be a 1-D array or list of numbers") from None
            if values.dtype == bool or not (
                np.issubdtype(values.dtype, np.integer) or np.issubdtype(values.dtype, np.floating)
            ):
                raise InputError(f"Vector values must be numbers, got an array of {values.dtype}")
            values = values.astype(np.float32)
            object.__setattr__(self, "values", values)
        if values.ndim != 1 or values.shape[0] == 0:
            raise InputError(f"Vector values must be 1-D and non-empty; got shape {values.shape}")

    @property
    def dim(self) -> int:
        return int(self.values.shape[0])

    @property
    def norm(self) -> float:
        return float(np.linalg.norm(self.values.astype(np.float64)))

    def __array__(self, dtype=None, copy=None):  # noqa: ANN001 - numpy protocol
        return self.values if dtype is None else self.values.astype(dtype)

    def __repr__(self) -> str:
        return f"Vector({self.provenance.describe()}, dim={self.dim})"


def _whole(value: object, name: str, minimum: int) -> int:
    """An int field (numpy integers too; never a bool or a float). Not core.arguments' check:
    vectors sits below the occurrences that module knows."""
    try:
        number = None if isinstance(value, bool) else operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        number = None
    if number is None:
        raise InputError(f"{name} must be a whole number (int), got {value!r}")
    if number < minimum:
        raise InputError(f"{name} must be at least {minimum}, got {number}")
    return number
