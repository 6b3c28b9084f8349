"""``runtime="auto"``: which forward pass runs when the caller does not say.

The rule, decided on the start-up costs measured in ``benchmarks/startup.py`` (docs/speed.md):
an encoder runs on ONNX Runtime, whose checked graph starts without torch or transformers
(:mod:`contextlens.core.lean_net`), exporting and checking it first if this machine has no export
yet (once, said on stderr); attention weights come from its attention graph where that graph was
exported and passed its check (fp32, within 1e-5 of torch's eager attention), else from torch;
torch runs everything else: decoders (no export) and any machine without the ``runtimes`` extra. Whatever
is chosen, the result records the runtime it came from, and an ONNX result its export check.
torch stays the reference: ``runtime="torch"`` gives plain transformers' numbers exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from contextlens.core.backend import Backend
from contextlens.core.choices import check_precision, check_runtime_choice
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

    @classmethod
    def resolve(cls, model: str, precision: str = "fp32", runtime: str = "torch") -> ModelBackend:
        """The API's request: precision and runtime checked, ``auto`` resolved (the name is
        resolved when the model loads)."""
        check_precision(precision)
        return cls(model, Backend(precision, chosen_runtime(model, precision, check_runtime_choice(runtime))))

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
    ) -> ModelBackend:
        """A face's request: everything :func:`check_request` checks without the weights, then
        ``auto`` resolved; ``weights`` (or an ``attention`` request): attention weights are wanted."""
        facts = check_request(model, precision, runtime, layers, attention)
        weights = weights or attention is not None
        return cls(model, Backend(precision, chosen_runtime(model, precision, runtime, attention=weights, facts=facts)))

    def export_pending(self) -> bool:
        """Whether loading this must first export the model's ONNX graph (once per machine)."""
        return self.backend.runtime == "onnx" and export_pending(self.model, self.backend.precision)


def resolve_runtime(name_or_path: str, precision: str, runtime: str, *, attention: bool = False) -> str:
    """``torch`` or ``onnx`` for ``runtime`` (``auto``, ``torch`` or ``onnx``) on this model."""
    return chosen_runtime(name_or_path, precision, check_runtime_choice(runtime), attention=attention)


def chosen_runtime(
    name_or_path: str, precision: str, runtime: str, *, attention: bool = False, facts: ModelFacts | None = None
) -> str:
    """The rule above, on a runtime choice already checked; ``facts`` when the caller read them."""
    if runtime == "onnx" and attention and precision != "fp32":  # said before an int8 export is made for nothing
        raise InputError("attention weights come from the torch runtime; run this with `runtime` torch, not onnx "
                         f"(ONNX {precision} has no attention graph)")  # fmt: skip
    if runtime != AUTO:
        return runtime
    if not onnxruntime_installed():
        return "torch"
    facts = facts or model_facts(name_or_path)
    if facts is None or facts.is_decoder:  # a hub id not on disk, or a decoder: no export
        return "torch"
    if attention:  # only from an attention graph already exported and checked (fp32)
        name, source, _revision = resolve_contextual(name_or_path)
        return "onnx" if precision == "fp32" and attention_ready(name, str(source)) else "torch"
    return "onnx"


def export_pending(name_or_path: str, precision: str) -> bool:
    """Whether running this model on ONNX Runtime at ``precision`` must first export its graph."""
    name, source, _revision = resolve_contextual(name_or_path)
    return not lean_ready(name, str(source), precision)
