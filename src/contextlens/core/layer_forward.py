"""The forward pass that runs only as far as it must and keeps only what is asked for.

``output_hidden_states=True`` runs every block and keeps every layer of every token alive until
the pass ends. Most analyses want one layer or a few, and only a few rows of each. So here hooks
on the transformer blocks capture the requested layers as they go by (reduced at once by a
``keep`` function, e.g. "the target rows"), and when the highest requested layer L is below the
top, the block that produces it raises a private exception: embeddings and blocks 1..L run, the
rest never does. The states are those of the full forward, bit for bit (same kernels, same
order; tests/test_layer_forward.py checks it on minilm and mpnet).

Layer k (1 <= k < L) is the output of block k; layer 0 is the input of block 1; the top layer is
the model's ``last_hidden_state`` (a decoder's final norm included, as in ``hidden_states[-1]``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel

Keep = Callable[[torch.Tensor], torch.Tensor]


class _Stop(Exception):
    """Raised by the hook on the last block needed: the rest of the forward is skipped."""


_BLOCKS: weakref.WeakKeyDictionary[torch.nn.Module, torch.nn.ModuleList] = weakref.WeakKeyDictionary()


def _blocks_of(net: torch.nn.Module, count: int) -> torch.nn.ModuleList:
    """The model's list of transformer blocks: the ModuleList with one entry per layer (found
    once per model: walking every module per batch is measurable on short batches)."""
    found = _BLOCKS.get(net)
    if found is not None and len(found) == count:
        return found
    for _, module in net.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == count:
            _BLOCKS[net] = module
            return module
    raise RuntimeError(f"cannot find the {count} transformer blocks of {type(net).__name__}")


def _first_tensor(value: object) -> torch.Tensor:
    return value[0] if isinstance(value, tuple | list) else value  # type: ignore[return-value,index]


def run_layers(
    model: ContextualModel,
    ids: torch.Tensor,
    mask: torch.Tensor,
    layers: Sequence[int],
    keep: Keep | None = None,
    output_attentions: bool = False,
) -> list[torch.Tensor]:
    """``keep(hidden state)`` at each of ``layers`` (validated, 0..L), in that order; blocks
    above the highest requested layer are not run. ``keep`` defaults to the whole
    ``(batch, seq, d)`` tensor. ``output_attentions`` is passed to the model (some return
    attention weights from their modules only when asked; see :func:`run_with_attentions`)."""
    keep = keep or (lambda h: h)
    top = model.num_layers
    highest = max(layers)
    blocks = _blocks_of(model.model, top)
    captured: dict[int, torch.Tensor] = {}
    handles = []

    if 0 in layers:

        def before_first(_module, args, kwargs):  # layer 0: what enters the first block
            captured[0] = keep(args[0] if args else kwargs["hidden_states"])
            if highest == 0:
                raise _Stop

        handles.append(blocks[0].register_forward_pre_hook(before_first, with_kwargs=True))
    for layer in {k for k in layers if 0 < k < top} | ({highest} if highest < top else set()):

        def after(_module, _args, output, layer=layer):
            if layer in layers:
                captured[layer] = keep(_first_tensor(output))
            if layer == highest:
                raise _Stop

        handles.append(blocks[layer - 1].register_forward_hook(after))
    try:
        with torch.inference_mode():
            try:
                kwargs = {"output_attentions": True} if output_attentions else {}
                outputs = model.model(input_ids=ids, attention_mask=mask, **kwargs)
                captured[top] = keep(outputs.last_hidden_state)
            except _Stop:
                pass
    finally:
        for handle in handles:
            handle.remove()
    return [captured[k] for k in layers]


def blocks_run(model: ContextualModel, layers: Sequence[int]) -> int:
    """How many transformer blocks a pass for ``layers`` runs (0 = embeddings only)."""
    return max(layers) if layers else model.num_layers


def run_with_attentions(
    model: ContextualModel, ids: torch.Tensor, mask: torch.Tensor, top: int
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Hidden states 0..``top`` and the attention weights of blocks 1..``top`` (each
    ``(batch, heads, seq, seq)``); blocks above ``top`` are not run. The model must use eager
    attention (:meth:`ContextualModel.set_attention`). A block's weights are the first output
    of one of its submodules that carries a ``(batch, heads, seq, seq)`` tensor (the
    self-attention module's, as ``output_attentions`` returns them); a block without one raises
    ``LookupError``."""
    model.require_torch("attention weights")
    blocks = _blocks_of(model.model, model.num_layers)
    shape = (ids.shape[0], model.num_heads, ids.shape[1], ids.shape[1])
    weights: dict[int, torch.Tensor] = {}
    handles = []
    for k in range(top):

        def grab(_module, _args, output, k=k):
            if k not in weights and isinstance(output, tuple | list):
                found = [t for t in output if isinstance(t, torch.Tensor) and tuple(t.shape) == shape]
                if found:
                    weights[k] = found[0]

        handles += [m.register_forward_hook(grab) for m in blocks[k].modules() if m is not blocks[k]]
    try:
        hidden = run_layers(model, ids, mask, tuple(range(top + 1)), output_attentions=True)
    finally:
        for handle in handles:
            handle.remove()
    missing = [k + 1 for k in range(top) if k not in weights]
    if missing:
        raise LookupError(f"no attention weights found in blocks {missing}")
    return hidden, [weights[k] for k in range(top)]
