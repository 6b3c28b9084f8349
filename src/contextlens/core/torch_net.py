"""A transformer loaded with transformers and torch: the reference forward pass.

Why apart from :mod:`contextlens.core.backbone`: the backbone also runs without torch (the lean
ONNX path of :mod:`contextlens.core.lean_net`), so everything that imports torch or transformers
lives here and is imported only when a torch forward is needed. :class:`TorchNet` is also what an
ONNX export is made from (:class:`contextlens.core.onnx_runtime.TorchSource`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from contextlens.core import layer_forward, threads
from contextlens.core.array_ops import TORCH, TorchOps
from contextlens.core.model_facts import load_failure, loaded_is_decoder, loaded_window, position_offset
from contextlens.core.padding import pad_arrays
from contextlens.core.precision import QUANT_RULE, quantize, weight_bytes
from contextlens.errors import UnknownModelError

HALF_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}  # the precisions that cast the whole network


class TorchNet:
    """The tokenizer and network of a model folder, loaded by transformers, with the hooks of
    :mod:`contextlens.core.layer_forward` installed once. ``precision`` is the precision results
    are made at; the network is quantized to int8 only when ``quantized``.

    At fp16 or bf16 the whole network is cast (embeddings and layer norms too: what a GPU runs
    fast), and on a GPU (``device`` ``cuda:N``) it is moved there. Token ids are padded on the
    host and moved to the device per forward; states come back to the host only as numpy copies.

    As the backbone's forward strategy it gives everything itself: torch tensors, the full
    outputs, attention weights from its eager twin."""

    arrays = TORCH  # what pad returns and the verbs compute on (on a GPU or at fp16/bf16: the instance's own)
    lean_attention = False  # attention weights come from torch here, not from an ONNX graph
    eager_attention = True

    def __init__(
        self, name: str, source: str, revision: str | None, precision: str, quantized: bool, device: str = "cpu"
    ):
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        threads.sync_torch()  # a --threads chosen before torch was imported
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        self.name, self.source, self.precision = name, source, precision
        self.quantized, self.device = quantized, device
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(source, revision=revision)
            try:
                self.model = AutoModel.from_pretrained(source, revision=revision, attn_implementation="sdpa")
            except (ValueError, ImportError):
                self.model = AutoModel.from_pretrained(source, revision=revision, attn_implementation="eager")
        except OSError as exc:
            raise load_failure(name, source, str(exc).splitlines()[0]) from exc
        if not getattr(self.tokenizer, "is_fast", False):
            raise UnknownModelError(f"model {name!r} has no fast tokenizer, so character offsets are unavailable")
        self.model.eval()
        if quantized:
            self.model = quantize(self.model)
        dtype = HALF_DTYPES.get(precision)
        if dtype is not None or device != "cpu":
            self.model.to(device=device, dtype=getattr(torch, dtype) if dtype else None)
            self.arrays = TorchOps(device, dtype or "float32")
        self.config = self.model.config
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        self.num_layers = int(self.config.num_hidden_layers)
        # hooks go on once, here, before any call: the eager twin (attention weights) is copied
        # first, so it carries none of the main model's hooks
        attention_net = layer_forward.eager_twin(self.model)
        self.tap = layer_forward.LayerTap(self.model, self.num_layers, attention_net is self.model)
        self.attention_tap = (
            self.tap
            if attention_net is self.model
            else layer_forward.LayerTap(attention_net, self.num_layers, attention_weights=True)
        )

    # --- what an export needs (TorchSource) ------------------------------------------------

    @property
    def max_length(self) -> int:
        """Most tokens (specials included) one forward pass accepts (512 when nothing says)."""
        return loaded_window(self.tokenizer, self.config)

    @property
    def is_decoder(self) -> bool:
        """Decoders see left context only."""
        return loaded_is_decoder(self.config)

    def pad(self, sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        ids, mask = pad_arrays(sequences, int(self.tokenizer.pad_token_id))
        return torch.from_numpy(ids), torch.from_numpy(mask)

    def on_device(self, x: Any) -> torch.Tensor:
        """Token ids or a mask as a tensor on this net's device (the same tensor on the CPU)."""
        return torch.as_tensor(x).to(self.device)

    def run_torch_layers(
        self, ids: Any, mask: Any, layers: Sequence[int], keep: layer_forward.Keep | None = None
    ) -> list[torch.Tensor]:
        return layer_forward.run_layers(self.tap, self.on_device(ids), self.on_device(mask), layers, keep)

    # --- the backbone's forward strategy ---------------------------------------------------

    @property
    def identity(self) -> str:
        """What disk caches key these weights by: the source, plus the quantization rule when
        quantized (an int8 model must never read fp32 results, nor another int8 rule's), the
        precision when cast (fp16, bf16), and the device when not the CPU (a GPU's kernels are
        not the CPU's: its fp32 results are close to the CPU's, not equal)."""
        if self.quantized:
            base = f"{self.source}#{self.precision}:{QUANT_RULE}"
        else:
            base = f"{self.source}#{self.precision}" if self.precision in HALF_DTYPES else str(self.source)
        return base if self.device == "cpu" else f"{base}@{self.device}"

    def shared_identity(self, export_checked: bool) -> str:  # noqa: ARG002 - the strategy's signature
        """torch's own results are the reference the shared calibrations are keyed by."""
        return self.identity

    def run_layers(self, ids: Any, mask: Any, layers: Sequence[int], keep: layer_forward.Keep | None = None) -> list:
        return self.run_torch_layers(ids, mask, layers, keep)

    def torch_net(self, reference: Callable[[], TorchNet]) -> TorchNet:
        """The torch network to compare with or read weights from: this one."""
        return self

    def onnx_graphs(self, export: Callable[[], Any]) -> Any:
        """ONNX Runtime graphs of this model: ``export()`` makes (or reads) them from torch."""
        return export()

    def require_torch(self, what: str) -> None:
        """Everything torch gives is here: nothing to refuse."""

    def attention_net(self) -> torch.nn.Module:
        """The module tree attention weights come from: the model itself when it runs eager
        attention, else its eager twin."""
        return self.attention_tap.net

    # --- the rest of the torch forward -----------------------------------------------------

    def run(self, ids: Any, mask: Any, hidden_states: bool, attentions: bool = False) -> Any:
        net = self.attention_tap.net if attentions else self.model
        with torch.inference_mode():
            return net(
                input_ids=self.on_device(ids),
                attention_mask=self.on_device(mask),
                output_hidden_states=hidden_states,
                output_attentions=attentions,
            )

    def run_with_attentions(self, ids: Any, mask: Any, top: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        heads = int(self.config.num_attention_heads)
        ids, mask = self.on_device(ids), self.on_device(mask)
        return layer_forward.run_with_attentions(self.attention_tap, ids, mask, top, heads)

    def input_rows(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The input embedding rows of token ids, as float32."""
        weight = self.model.get_input_embeddings().weight
        index = torch.as_tensor(np.asarray(ids, dtype=np.int64)).to(weight.device)
        return weight.index_select(0, index).detach().float().cpu().numpy()

    def position_rows(self, n: int) -> np.ndarray | None:
        """``(n, d)``: the learned absolute position embeddings of positions 0..n-1 of a text,
        where the model has them (else None); the texts of a right-padded batch share them."""
        emb = getattr(self.model, "embeddings", None)
        table = getattr(emb, "position_embeddings", None)
        if table is None or not hasattr(table, "weight"):
            return None
        start = position_offset(self.config.model_type, self.tokenizer.pad_token_id)
        positions = torch.arange(start, start + n, device=table.weight.device)
        return table.weight[positions].detach().float().cpu().numpy().copy()

    def weight_bytes(self) -> int:
        return weight_bytes(self.model)
