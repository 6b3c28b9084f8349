"""``runtime="auto"``: which forward pass runs when the caller does not say.

The rule, decided on the start-up costs measured in ``benchmarks/startup.py`` and
``benchmarks/first_use.py`` (docs/speed.md): ``auto`` runs what this machine has ready and builds
nothing. An encoder runs on ONNX Runtime, whose checked graph starts without torch or transformers
(:mod:`contextlens.core.lean_net`), where its export at that precision was made and checked here
(``contextlens prepare``, which ``make setup`` runs, or a ``runtime="onnx"`` run); where none was,
it runs on torch (the reference) and the face says how to prepare the export (issue 30: exporting
inside the first command cost mpnet's first ``same-sense`` its export and checks, ~40 s, to save
about a tenth of the encoding). Attention weights come from the attention graph where that graph
was exported and passed its check (fp32, within 1e-5 of torch's eager attention), else from
torch; torch runs everything else: decoders (no export) and any machine without the ``runtimes``
extra. Whatever
is chosen, the result records the runtime it came from, and an ONNX result its export check.
torch stays the reference: ``runtime="torch"`` gives plain transformers' numbers exactly.

``device="auto"`` (the CLI's default; the API's is ``cpu``, the reference): the first CUDA GPU the
chosen runtime can use (:mod:`contextlens.core.devices`), else the CPU; int8 stays on the CPU (its
kernels are the CPU's), and a runtime left ``auto`` runs torch on a GPU that ONNX Runtime cannot
use. A GPU asked for by name that is not there is refused before any weights load.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contextlens.core.backend import Backend, check_combination
from contextlens.core.choices import CPU_ONLY_PRECISIONS, HALF_PRECISIONS, check_precision, check_runtime_choice
from contextlens.core.devices import CPU, check_device_choice, onnx_cuda_count, resolve_device, torch_cuda_count
from contextlens.core.model_facts import ModelFacts, check_request, model_facts
from contextlens.core.onnx_graphs import attention_ready, lean_ready, onnxruntime_installed
from contextlens.core.resources import resolve_contextual
from contextlens.errors import InputError

AUTO = "auto"


@dataclass(frozen=True)
class ModelBackend:
    """A model request resolved once, where it enters (a face, :func:`load_contextual`): the model
    as the caller named it (registry name, folder or hub id) and the :class:`Backend` it runs on,
    ``auto`` already resolved. Everything below takes it as it is and checks nothing again."""

    model: str
    backend: Backend
    export_missing: bool = False  # auto chose torch only because this machine has no checked export yet

    @classmethod
    def resolve(cls, model: str, precision: str = "fp32", runtime: str = "torch", device: str = CPU) -> ModelBackend:
        """The API's request: precision, runtime and device checked, ``auto`` resolved (the name is
        resolved when the model loads)."""
        check_precision(precision)
        device = check_device_choice(device)
        chosen, missing = auto_runtime(model, precision, check_runtime_choice(runtime), device=device)
        return cls(model, Backend(precision, chosen, chosen_device(device, chosen, precision)), missing)

    @classmethod
    def checked(
        cls,
        model: str,
        precision: str = "fp32",
        runtime: str = "torch",
        *,
        layers: Iterable[int] = (),
        attention: tuple[int, int | None] | None = None,
        weights: bool = False,
        device: str = CPU,
    ) -> ModelBackend:
        """A face's request: everything :func:`check_request` checks without the weights, then
        ``auto`` resolved (the runtime, then the device on it: a GPU asked for that is not there
        is refused here, before any weights load); ``weights`` (or an ``attention`` request):
        attention weights are wanted."""
        facts = check_request(model, precision, runtime, layers, attention)
        device = check_device_choice(device)
        weights = weights or attention is not None
        chosen, missing = auto_runtime(model, precision, runtime, attention=weights, facts=facts, device=device)
        return cls(model, Backend(precision, chosen, chosen_device(device, chosen, precision)), missing)

    def export_pending(self) -> bool:
        """Whether loading this must first export the model's ONNX graph (once per machine)."""
        return self.backend.runtime == "onnx" and export_pending(self.model, self.backend.precision)


def resolve_runtime(
    name_or_path: str, precision: str, runtime: str, *, attention: bool = False, device: str = CPU
) -> str:
    """``torch`` or ``onnx`` for ``runtime`` (``auto``, ``torch`` or ``onnx``) on this model."""
    device = check_device_choice(device)
    checked = check_runtime_choice(runtime)
    return auto_runtime(name_or_path, precision, checked, attention=attention, device=device)[0]


def chosen_device(device: str, runtime: str, precision: str) -> str:
    """``cpu`` or ``cuda:N`` for a checked device choice on the resolved runtime: ``auto`` is the
    first GPU the runtime can use, except for int8, whose kernels are the CPU's."""
    if precision in CPU_ONLY_PRECISIONS:
        if device == AUTO:
            return CPU
        check_combination(precision, runtime, device)  # a GPU named for int8: that refusal, not a missing GPU's
    return resolve_device(device, runtime)


def auto_runtime(
    name_or_path: str,
    precision: str,
    runtime: str,
    *,
    attention: bool = False,
    facts: ModelFacts | None = None,
    device: str = CPU,
) -> tuple[str, bool]:
    """The rule above, on a runtime choice already checked (``facts`` when the caller read them): the
    runtime, and whether ``auto`` chose torch only for want of
    a checked export here (what a face tells the user to prepare). fp16 and bf16 are torch's; asked
    for a GPU (``device`` not cpu) that torch can use and ONNX Runtime cannot (no
    ``onnxruntime-gpu``), ``auto`` runs torch on it rather than ONNX on the CPU."""
    if runtime == "onnx" and attention and precision != "fp32":  # said before an int8 export is made for nothing
        raise InputError("attention weights come from the torch runtime; run this with `runtime` torch, not onnx "
                         f"(ONNX {precision} has no attention graph)")  # fmt: skip
    if runtime != AUTO:
        return runtime, False
    if not onnxruntime_installed() or precision in HALF_PRECISIONS:
        return "torch", False
    gpu_wanted = device != CPU and precision not in CPU_ONLY_PRECISIONS
    if gpu_wanted and (device != AUTO or torch_cuda_count()) and not onnx_cuda_count():
        return "torch", False  # a GPU that ONNX Runtime cannot use: torch's (or, for a named one, its refusal)
    facts = facts or model_facts(name_or_path)
    if facts is None or facts.is_decoder:  # a hub id not on disk, or a decoder: no export
        return "torch", False
    name, source, _revision = resolve_contextual(name_or_path)
    if not lean_ready(name, str(source), precision):  # none made here: torch now; a command never exports on auto
        return "torch", True
    if attention:  # only from an attention graph already exported and checked (fp32)
        return ("onnx" if precision == "fp32" and attention_ready(name, str(source)) else "torch"), False
    return "onnx", False


def export_pending(name_or_path: str, precision: str) -> bool:
    """Whether running this model on ONNX Runtime at ``precision`` must first export its graph."""
    name, source, _revision = resolve_contextual(name_or_path)
    return not lean_ready(name, str(source), precision)
