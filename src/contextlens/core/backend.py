"""How a model's forward ran: its precision and its runtime, as one value with one label.

Why one value: every result says which backend made it (an int8 or ONNX number is a slightly
moved copy of the torch fp32 one), and the pair was spelled six ways across the faces. Here it
is checked once, labelled once (``fp32``, ``int8``, ``onnx fp32``, ``onnx int8``) and written to
JSON once (``{"precision": ..., "runtime": ...}``). Plain Python: no torch, so anything may
import it.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextlens.core.choices import PRECISIONS, RUNTIMES, check_precision, check_runtime  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class Backend:
    """A precision on a runtime; the default is the reference, torch fp32."""

    precision: str = "fp32"
    runtime: str = "torch"

    def __post_init__(self) -> None:
        check_precision(self.precision)
        check_runtime(self.runtime)

    @property
    def is_reference(self) -> bool:
        """torch fp32: the backend every other one is measured against."""
        return self.precision == "fp32" and self.runtime == "torch"

    @property
    def label(self) -> str:
        """The one spelling every face prints: ``fp32``, ``int8``, ``onnx fp32``, ``onnx int8``."""
        return self.precision if self.runtime == "torch" else f"{self.runtime} {self.precision}"

    def name_with(self, model: str) -> str:
        """``minilm`` on the reference backend, else ``minilm (onnx fp32)``: a model as faces name it."""
        return model if self.is_reference else f"{model} ({self.label})"

    def to_dict(self) -> dict[str, str]:
        return {"precision": self.precision, "runtime": self.runtime}


REFERENCE = Backend()
