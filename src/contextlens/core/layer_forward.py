"""The forward pass that runs only as far as it must, keeps only what is asked for, and shares
nothing between calls.

``output_hidden_states=True`` runs every block and keeps every layer of every token alive until
the pass ends. Most analyses want one layer or a few, and only a few rows of each. So a
:class:`LayerTap` puts hooks on the transformer blocks ONCE, when the model is loaded, before any
call can run; they do nothing unless the current call asked for something. What a call asks for
(its layers, its ``keep`` function, where its captures go) lives in a :class:`contextvars.ContextVar`,
so every thread (and every asyncio task) sees only its own request: one loaded model serves any
number of threads at once, and nothing is installed on, or left on, a shared module during a call.

The hooks capture the requested layers as they go by (reduced at once by ``keep``, e.g. "the
target rows"), and when the highest requested layer L is below the top, the block that produces it
raises a private exception: embeddings and blocks 1..L run, the rest never does. The states are
those of the full forward, bit for bit (same kernels, same order; tests/test_layer_forward.py).

Layer k (1 <= k < L) is the output of block k; layer 0 is the input of block 1; the top layer is
the model's ``last_hidden_state`` (a decoder's final norm included, as in ``hidden_states[-1]``).

Attention weights need eager attention. Switching the shared model's attention implementation
during a call would change it under every other thread, so :func:`eager_twin` makes, once at
load, a second module tree that shares every weight tensor with the first but has its own config
(eager): attention calls run on it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

import torch

Keep = Callable[[torch.Tensor], torch.Tensor]


class _Stop(Exception):
    """Raised by the hook on the last block needed: the rest of the forward is skipped."""


@dataclass
class _Call:
    """One call's request and what its hooks captured (never shared with another call)."""

    net: torch.nn.Module
    wanted: frozenset[int]
    highest: int
    keep: Keep
    captured: dict[int, torch.Tensor] = field(default_factory=dict)
    weight_shape: tuple[int, ...] | None = None  # (batch, heads, seq, seq) when weights are asked for
    weights: dict[int, torch.Tensor] = field(default_factory=dict)


_CURRENT: ContextVar[_Call | None] = ContextVar("contextlens_forward_call", default=None)


def find_blocks(net: torch.nn.Module, count: int) -> torch.nn.ModuleList:
    """The model's list of transformer blocks: the ModuleList with one entry per layer."""
    for _, module in net.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == count:
            return module
    raise RuntimeError(f"cannot find the {count} transformer blocks of {type(net).__name__}")


class LayerTap:
    """Hooks on one torch model's blocks, installed once (at load); per-call state is read from
    the calling context, so concurrent calls never see each other's layers or captures."""

    def __init__(self, net: torch.nn.Module, num_layers: int, attention_weights: bool = False):
        self.net = net
        self.num_layers = num_layers
        blocks = find_blocks(net, num_layers)
        blocks[0].register_forward_pre_hook(self._before_first, with_kwargs=True)
        for layer, block in enumerate(blocks, start=1):
            block.register_forward_hook(self._after_block(layer))
            if attention_weights:  # on the block's composite submodules: a leaf (a Linear, a dropout)
                for module in block.modules():  # returns a tensor, never the (output, weights) pair
                    if module is not block and next(module.children(), None) is not None:
                        module.register_forward_hook(self._weights_of(layer))

    def _call(self) -> _Call | None:
        call = _CURRENT.get()
        return call if call is not None and call.net is self.net else None

    def _before_first(self, _module, args, kwargs):  # layer 0: what enters the first block
        call = self._call()
        if call is None:
            return
        if 0 in call.wanted:
            call.captured[0] = call.keep(args[0] if args else kwargs["hidden_states"])
        if call.highest == 0:
            raise _Stop

    def _after_block(self, layer: int) -> Callable:
        def after(_module, _args, output):
            call = self._call()
            if call is None:
                return
            if layer in call.wanted and layer < self.num_layers:
                call.captured[layer] = call.keep(output[0] if isinstance(output, tuple | list) else output)
            if layer == call.highest and layer < self.num_layers:
                raise _Stop

        return after

    def _weights_of(self, layer: int) -> Callable:
        """A block's weights are the first output of one of its submodules that carries a
        ``(batch, heads, seq, seq)`` tensor (the self-attention module's)."""

        def grab(_module, _args, output):
            call = self._call()
            if call is None or call.weight_shape is None or layer in call.weights:
                return
            if isinstance(output, tuple | list):
                for item in output:
                    if isinstance(item, torch.Tensor) and tuple(item.shape) == call.weight_shape:
                        call.weights[layer] = item
                        return

        return grab

    def run(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        layers: Sequence[int],
        keep: Keep | None = None,
        weight_shape: tuple[int, ...] | None = None,
    ) -> _Call:
        """Run the model for one call: ``keep(state)`` at each of ``layers`` (validated, 0..L),
        blocks above the highest skipped; with ``weight_shape``, the attention weights too."""
        call = _Call(self.net, frozenset(layers), max(layers), keep or (lambda h: h), weight_shape=weight_shape)
        token = _CURRENT.set(call)
        try:
            with torch.inference_mode():
                try:
                    kwargs = {"output_attentions": True} if weight_shape is not None else {}
                    outputs = self.net(input_ids=ids, attention_mask=mask, **kwargs)
                    if self.num_layers in call.wanted:
                        call.captured[self.num_layers] = call.keep(outputs.last_hidden_state)
                except _Stop:
                    pass
        finally:
            _CURRENT.reset(token)
        return call


def run_layers(
    tap: LayerTap, ids: torch.Tensor, mask: torch.Tensor, layers: Sequence[int], keep: Keep | None = None
) -> list[torch.Tensor]:
    """``keep(hidden state)`` at each of ``layers`` (validated, 0..L), in that order; blocks
    above the highest requested layer are not run. ``keep`` defaults to the whole
    ``(batch, seq, d)`` tensor and is called lowest layer first."""
    call = tap.run(ids, mask, layers, keep)
    return [call.captured[k] for k in layers]


def run_with_attentions(
    tap: LayerTap, ids: torch.Tensor, mask: torch.Tensor, top: int, num_heads: int
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Hidden states 0..``top`` and the attention weights of blocks 1..``top`` (each
    ``(batch, heads, seq, seq)``); blocks above ``top`` are not run. ``tap`` must be on an eager
    model (:func:`eager_twin`); a block without weights raises ``LookupError``."""
    shape = (ids.shape[0], num_heads, ids.shape[1], ids.shape[1])
    call = tap.run(ids, mask, tuple(range(top + 1)), weight_shape=shape)
    missing = [k for k in range(1, top + 1) if k not in call.weights]
    if missing:
        raise LookupError(f"no attention weights found in blocks {missing}")
    return [call.captured[k] for k in range(top + 1)], [call.weights[k] for k in range(1, top + 1)]


def eager_twin(net: torch.nn.Module) -> torch.nn.Module:
    """``net`` itself when it already runs eager attention; else a copy of its module tree that
    shares every parameter and buffer (no weight is copied) with its own config set to eager.
    Call before any hook is put on ``net``."""
    if net.config._attn_implementation == "eager":
        return net
    shared = {id(t): t for t in (*net.parameters(), *net.buffers())}
    twin = copy.deepcopy(net, memo=shared)
    twin.set_attn_implementation("eager")
    return twin
