"""How a model's forward ran: its precision, its runtime and its device, as one value with one label.

Why one value: every result says which backend made it (an int8, fp16, ONNX or GPU number is a
slightly moved copy of the torch fp32 CPU one), and the pair was spelled six ways across the
faces. Here it is checked once, labelled once (``fp32``, ``int8``, ``onnx fp32``, ``cuda:0 fp16``,
``onnx cuda:0 fp32``) and written to JSON once (``{"precision": ..., "runtime": ...}``, plus
``"device"`` when it is not the CPU).

Why the device is written only when it is not ``cpu``: every result, manifest and cache made
before devices existed ran on the CPU, so a missing ``device`` reads as ``cpu`` and every CPU
result keeps its exact label and JSON (tests compare them byte for byte, and folders written
before still resume). Plain Python: no torch, so anything may import it.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextlens.core.choices import (  # noqa: F401 (re-exported)
    CPU_ONLY_PRECISIONS,
    HALF_PRECISIONS,
    PRECISIONS,
    RUNTIMES,
    check_precision,
    check_runtime,
)
from contextlens.core.devices import CPU, check_device, is_cuda
from contextlens.errors import DeviceError, InputError


@dataclass(frozen=True)
class Backend:
    """A precision on a runtime on a device; the default is the reference, torch fp32 on the CPU."""

    precision: str = "fp32"
    runtime: str = "torch"
    device: str = CPU

    def __post_init__(self) -> None:
        check_precision(self.precision)
        check_runtime(self.runtime)
        if self.device != CPU:  # the CPU needs no check: the reference's own path stays as it was
            object.__setattr__(self, "device", check_device(self.device))
        check_combination(self.precision, self.runtime, self.device)

    @property
    def is_reference(self) -> bool:
        """torch fp32 on the CPU: the backend every other one is measured against."""
        return self.precision == "fp32" and self.runtime == "torch" and self.device == CPU

    @property
    def on_gpu(self) -> bool:
        return is_cuda(self.device)

    @property
    def label(self) -> str:
        """The one spelling every face prints: ``fp32``, ``int8``, ``onnx fp32``, ``onnx int8``,
        ``bf16``, ``cuda:0 fp16``, ``onnx cuda:0 fp32`` (the runtime when not torch, the device when
        not the CPU, then the precision)."""
        runtime = [] if self.runtime == "torch" else [self.runtime]
        device = [] if self.device == CPU else [self.device]
        return " ".join([*runtime, *device, self.precision])

    def name_with(self, model: str) -> str:
        """``minilm`` on the reference backend, else ``minilm (onnx fp32)``: a model as faces name it."""
        return model if self.is_reference else f"{model} ({self.label})"

    def to_dict(self) -> dict[str, str]:
        """``precision`` and ``runtime``, and ``device`` only when not ``cpu`` (see the module docstring)."""
        out = {"precision": self.precision, "runtime": self.runtime}
        if self.device != CPU:
            out["device"] = self.device
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Backend:
        """What :meth:`to_dict` wrote (a missing ``runtime`` or ``device``: torch, cpu)."""
        return cls(data.get("precision", "fp32"), data.get("runtime", "torch"), data.get("device", CPU))


def check_combination(precision: str, runtime: str, device: str) -> None:
    """The precisions each runtime and device run: int8 is a CPU quantizer (torch's and ONNX
    Runtime's dynamic int8 kernels); fp16 and bf16 cast the torch network (no ONNX export at
    those precisions)."""
    if precision in HALF_PRECISIONS and runtime != "torch":
        raise InputError(
            f"precision {precision} runs on the torch runtime (there is no ONNX export at {precision}); "
            "use `runtime` torch, or `precision` fp32 or int8 on onnx"
        )
    if precision in CPU_ONLY_PRECISIONS and device != CPU:
        raise DeviceError(
            f"precision {precision} is dynamic quantization, whose kernels run on the CPU only; "
            f"on {device} use `precision` fp16 or bf16 (or fp32), or `device` cpu for int8"
        )


REFERENCE = Backend()
