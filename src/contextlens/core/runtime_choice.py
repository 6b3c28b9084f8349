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

from contextlens.core.choices import check_runtime_choice
from contextlens.core.model_facts import model_facts
from contextlens.core.onnx_graphs import attention_ready, lean_ready, onnxruntime_installed
from contextlens.core.resources import resolve_contextual
from contextlens.errors import InputError

AUTO = "auto"


def resolve_runtime(name_or_path: str, precision: str, runtime: str, *, attention: bool = False) -> str:
    """``torch`` or ``onnx`` for ``runtime`` (``auto``, ``torch`` or ``onnx``) on this model."""
    runtime = check_runtime_choice(runtime)
    if runtime == "onnx" and attention and precision != "fp32":  # said before an int8 export is made for nothing
        raise InputError("attention weights come from the torch runtime; run this with `runtime` torch, not onnx "
                         f"(ONNX {precision} has no attention graph)")  # fmt: skip
    if runtime != AUTO:
        return runtime
    if not onnxruntime_installed():
        return "torch"
    facts = model_facts(name_or_path)
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
