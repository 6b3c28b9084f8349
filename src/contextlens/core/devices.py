"""Where a model's forward runs: ``cpu`` or one CUDA GPU, and how ``auto`` picks one.

Why apart, at the bottom of core: a face checks ``--device`` before anything heavy loads. The
spelling is checked here without torch; whether a GPU is visible is asked only when a request is
resolved (:mod:`contextlens.core.runtime_choice`), and even then torch is imported only when the
installed torch was built with CUDA: a CPU-only build says so in ``torch/version.py``, read here
as text (importing torch costs seconds; the lean ONNX path never imports it). ONNX Runtime sees a
GPU only through its CUDA execution provider (the ``onnxruntime-gpu`` package).

A resolved device is ``cpu`` or ``cuda:N``; ``cuda`` alone means ``cuda:0``. ``auto`` is the first
GPU when the runtime can use one, else ``cpu``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
from pathlib import Path

from contextlens.errors import DeviceError

AUTO = "auto"
CPU = "cpu"
DEVICE_CHOICES: tuple[str, ...] = (AUTO, CPU, "cuda", "cuda:N")  # as help texts and errors list them
_CUDA = re.compile(r"cuda(?::(\d+))?")
CUDA_PROVIDER = "CUDAExecutionProvider"


def check_device_choice(device: str) -> str:
    """A device a caller may ask for, normalized: ``auto``, ``cpu`` or ``cuda:N``."""
    if not isinstance(device, str):
        raise DeviceError(f"device must be a str (auto, cpu, cuda or cuda:N), got {type(device).__name__}")
    text = device.strip().lower()
    if text in (AUTO, CPU):
        return text
    match = _CUDA.fullmatch(text)
    if match is None:
        raise DeviceError(f"unknown device {device!r}; use one of {', '.join(DEVICE_CHOICES)}")
    return f"cuda:{int(match.group(1) or 0)}"


def check_device(device: str) -> str:
    """A resolved device (``cpu`` or ``cuda:N``; never ``auto``), as a :class:`Backend` holds it."""
    checked = check_device_choice(device)
    if checked == AUTO:
        raise DeviceError("a resolved backend runs on cpu or cuda:N, not auto; resolve it first")
    return checked


def is_cuda(device: str) -> bool:
    return device.startswith("cuda")


def cuda_index(device: str) -> int:
    return int(device.split(":", 1)[1]) if ":" in device else 0


def torch_cuda_build() -> str | None:
    """The CUDA version the installed torch was built with, read from ``torch/version.py`` without
    importing torch; None for a CPU-only build (or no torch)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    version_file = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        text = version_file.read_text(encoding="utf-8")
    except OSError:
        return None
    found = re.search(r"^cuda(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
    return found.group(1) if found else None


def torch_cuda_count() -> int:
    """CUDA devices torch can use here (0 without a CUDA build; torch imported only with one)."""
    if torch_cuda_build() is None:
        return 0
    import torch

    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def onnx_cuda_provider() -> bool:
    """Whether the installed ONNX Runtime has its CUDA execution provider: only the
    ``onnxruntime-gpu`` distribution ships it, so without that one nothing is imported."""
    if importlib.util.find_spec("onnxruntime") is None or not _installed("onnxruntime-gpu"):
        return False
    import onnxruntime

    return CUDA_PROVIDER in onnxruntime.get_available_providers()


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def onnx_cuda_count() -> int:
    """GPUs ONNX Runtime's CUDA provider can use: 0 without the provider; else the driver's GPUs
    as ``CUDA_VISIBLE_DEVICES`` narrows them, read without torch (the lean path never imports
    it); 1 when the driver does not list them (the session then says whether it got one)."""
    if not onnx_cuda_provider():
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return 0 if visible.strip() in ("", "-1") else len([v for v in visible.split(",") if v.strip()])
    gpus = Path("/proc/driver/nvidia/gpus")
    return len(list(gpus.iterdir())) if gpus.is_dir() else 1


def visible_cuda(runtime: str) -> int:
    """GPUs the runtime (``torch`` or ``onnx``) can run on here."""
    return onnx_cuda_count() if runtime == "onnx" else torch_cuda_count()


def resolve_device(device: str, runtime: str) -> str:
    """``cpu`` or ``cuda:N`` for a device choice on a resolved runtime; a GPU asked for that the
    runtime cannot see is refused in one line (:class:`DeviceError`)."""
    choice = check_device_choice(device)
    if choice == CPU:
        return CPU
    count = visible_cuda(runtime)
    if choice == AUTO:
        return "cuda:0" if count else CPU
    index = cuda_index(choice)
    if count == 0:
        raise DeviceError(f"device {choice} asked for, but {no_gpu_reason(runtime)}; use `device` cpu (or auto)")
    if index >= count:
        raise DeviceError(
            f"device {choice} asked for, but {count} CUDA device{'s' if count > 1 else ''} visible "
            f"(cuda:0..cuda:{count - 1}); use one of those"
        )
    return choice


def no_gpu_reason(runtime: str) -> str:
    """Why ``runtime`` sees no GPU here, as the refusal says it."""
    if runtime == "onnx":
        if not onnx_cuda_provider():
            return "ONNX Runtime here has no CUDA execution provider (install onnxruntime-gpu, or use `runtime` torch)"
        return "ONNX Runtime's CUDA provider finds no GPU"
    if torch_cuda_build() is None:
        installed = importlib.util.find_spec("torch") is not None
        return "the installed torch is a CPU-only build" if installed else "torch is not installed"
    return "torch finds no CUDA GPU (torch.cuda.is_available() is False)"


def devices_agree(precision: str, device: str, other_device: str) -> bool:
    """Whether vectors made on two devices may meet (in one index, one corpus folder): the same kind
    of device (the CPU, or CUDA GPUs), or fp32 (a GPU's fp32 is checked against the CPU's within
    the printed drift line, as ONNX Runtime's is); never fp16 or bf16 across kinds, whose kernels
    round and accumulate differently by more than that."""
    return device.split(":")[0] == other_device.split(":")[0] or precision == "fp32"


def reading_device(precision: str, made_on: str) -> str:
    """Where a query against vectors made on ``made_on`` runs when the caller does not say: the CPU
    for fp32 or int8 (their vectors agree across devices, or were made on the CPU), else the
    vectors' own device (fp16/bf16 agree only with their own kind of device)."""
    return CPU if precision in ("fp32", "int8") else made_on
