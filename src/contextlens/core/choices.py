"""The closed sets a caller chooses from: precision, runtime, pooling, and their checks.

They live apart from the code that runs them (core/precision.py, core/onnx_runtime.py,
core/extraction.py all import torch) so that a face refuses ``--precision fp99`` before any of
that loads.
"""

from __future__ import annotations

from contextlens.errors import InputError

PRECISIONS: tuple[str, ...] = ("fp32", "int8", "fp16", "bf16")
HALF_PRECISIONS: tuple[str, ...] = ("fp16", "bf16")  # the whole torch network cast (core/torch_net.py)
CPU_ONLY_PRECISIONS: tuple[str, ...] = ("int8",)  # torch's dynamic quantization and ONNX Runtime's: CPU kernels
RUNTIMES: tuple[str, ...] = ("torch", "onnx")  # what a result can have run on
RUNTIME_CHOICES: tuple[str, ...] = ("auto", *RUNTIMES)  # what a caller may ask for (core/runtime_choice.py)
POOLINGS: tuple[str, ...] = ("mean", "first", "last")


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise InputError(f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}")
    return precision


def check_runtime(runtime: str) -> str:
    if runtime not in RUNTIMES:
        raise InputError(f"unknown runtime {runtime!r}; use one of {', '.join(RUNTIMES)}")
    return runtime


def check_runtime_choice(runtime: str) -> str:
    """A runtime a caller may ask for: ``auto`` (resolved by core/runtime_choice.py) or a runtime."""
    if runtime not in RUNTIME_CHOICES:
        raise InputError(f"unknown runtime {runtime!r}; use one of {', '.join(RUNTIME_CHOICES)}")
    return runtime


def torch_only(what: str, runtime: str) -> InputError:
    """The one refusal of what only the torch runtime gives (attention weights, full outputs)."""
    return InputError(f"{what} come from the torch runtime; run this with `runtime` torch, not {runtime}")


def check_pooling(pooling: str) -> None:
    if pooling not in POOLINGS:
        raise InputError(f"unknown pooling {pooling!r}; use one of {', '.join(POOLINGS)}")
