"""The backbone: a loaded transformer and how to run it, knowing nothing of what is asked of it.

It owns loading (tokenizer, weights, precision, runtime), the model's facts (layers, sizes, the
identity disk caches key on), padding, batching longest-first, and the forward strategy: torch
(:mod:`contextlens.core.layer_forward`, which stops at the highest layer asked and shares nothing
between calls) or ONNX Runtime (:mod:`contextlens.core.onnx_runtime`). The verbs that give it
meaning (encode occurrences, token states, text pooling, attention) sit above it, in
:mod:`~contextlens.core.extraction` and :mod:`~contextlens.core.text_pooling`, and
:class:`~contextlens.core.contextual_models.ContextualModel` puts the two together.

One backbone serves many threads at once: the tokenizer is called one call at a time (its
truncation and padding settings are state inside the Rust tokenizer), the ONNX graphs are built
once under a lock, and every forward keeps its state in the call.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from itertools import chain
from typing import Any

import numpy as np
import torch

from contextlens.core import arguments, layer_forward
from contextlens.core.backend import Backend
from contextlens.core.onnx_runtime import EXPORT_RULE, ORT_QUANT_RULE, OnnxForward, require_onnxruntime
from contextlens.core.precision import QUANT_RULE, quantize, weight_bytes
from contextlens.core.progress import Progress, progress_bar
from contextlens.errors import InputError, UnknownModelError

_DECODER_TYPES = {"llama", "gpt2", "mistral", "qwen2", "gemma", "phi", "gpt_neox", "smollm3"}


class Backbone:
    """A transformer loaded for contextlens: its facts and its forward pass."""

    def __init__(
        self, name: str, source: str, revision: str | None = None, precision: str = "fp32", runtime: str = "torch"
    ):
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        self.backend = Backend(precision, runtime)  # checked before any weights load
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        self.name = name
        self.source = source
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(source, revision=revision)
            try:
                self.model = AutoModel.from_pretrained(source, revision=revision, attn_implementation="sdpa")
            except (ValueError, ImportError):
                self.model = AutoModel.from_pretrained(source, revision=revision, attn_implementation="eager")
        except OSError as exc:
            raise UnknownModelError(
                f"could not load model {name!r} from {source} ({str(exc).splitlines()[0]}); "
                "check the name or folder, or install a shipped model (`contextlens models`)"
            ) from exc
        if not getattr(self.tokenizer, "is_fast", False):
            raise UnknownModelError(f"model {name!r} has no fast tokenizer, so character offsets are unavailable")
        self.model.eval()
        self._onnx: OnnxForward | None = None
        if runtime == "onnx":
            require_onnxruntime()  # the torch model stays fp32: it is what the graph is exported from
        elif precision == "int8":
            self.model = quantize(self.model)
        self.config = self.model.config
        self._onnx_lock = threading.Lock()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        self.tokenizer = SerialTokenizer(self.tokenizer)
        # hooks go on once, here, before any call: the eager twin (attention weights) is copied
        # first, so it carries none of the main model's hooks
        attention_net = layer_forward.eager_twin(self.model)
        self._tap = layer_forward.LayerTap(self.model, self.num_layers, attention_net is self.model)
        self._attention_tap = (
            self._tap
            if attention_net is self.model
            else layer_forward.LayerTap(attention_net, self.num_layers, attention_weights=True)
        )

    # --- facts -----------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """What disk cache keys name the weights by: the source, plus the precision and its
        quantization rule when not fp32 (an int8 model must never read fp32 results, nor the
        results of another int8 rule), plus the runtime and its export rule when not torch (ONNX
        Runtime's fp32 is within 1e-4 of torch's, not equal to it)."""
        if self.runtime == "onnx":
            rule = EXPORT_RULE if self.precision == "fp32" else f"{EXPORT_RULE}+{ORT_QUANT_RULE}"
            return f"{self.source}#onnx-{self.precision}:{rule}"
        return str(self.source) if self.precision == "fp32" else f"{self.source}#{self.precision}:{QUANT_RULE}"

    @property
    def precision(self) -> str:
        return self.backend.precision

    @property
    def runtime(self) -> str:
        return self.backend.runtime

    @property
    def attention_model(self) -> Any:
        """The module tree attention weights come from: the model itself when it runs eager
        attention, else its eager twin (same weight tensors, its own config)."""
        return self._attention_tap.net

    @property
    def num_layers(self) -> int:
        """Number of transformer blocks L; hidden states run 0..L."""
        return int(self.config.num_hidden_layers)

    @property
    def hidden_size(self) -> int:
        return int(self.config.hidden_size)

    @property
    def num_heads(self) -> int:
        return int(self.config.num_attention_heads)

    @property
    def max_length(self) -> int:
        """Most tokens (specials included) one forward pass accepts."""
        tok_max = int(self.tokenizer.model_max_length)
        if tok_max < 100_000:
            return tok_max
        pos = getattr(self.config, "max_position_embeddings", None)
        return int(pos) if pos else 512

    @property
    def is_decoder(self) -> bool:
        """Decoders see left context only."""
        return not getattr(self.config, "is_encoder_decoder", False) and bool(
            getattr(self.config, "is_decoder", False) or self.config.model_type in _DECODER_TYPES
        )

    def check_layers(self, layers: Sequence[int] | None) -> tuple[int, ...]:
        """Validate requested layers (negative counts from the top); None means all 0..L."""
        layers = arguments.layer_numbers(layers)
        top = self.num_layers
        if layers is None:
            return tuple(range(top + 1))
        out = []
        for layer in layers:
            real = top + 1 + layer if layer < 0 else layer
            if not 0 <= real <= top:
                raise InputError(f"layer {layer} is out of range for {self.name}: it has layers 0..{top}")
            out.append(real)
        if not out:
            raise InputError("no layers requested; give at least one layer")
        return tuple(sorted(set(out)))

    def batches(
        self,
        items: list,
        batch_size: int,
        show_progress_bar: bool = False,
        what: str = "batches",
        progress: Progress | None = None,
    ) -> Iterator[list]:
        """``(key, sequence)`` items longest first, so padding is small and memory peaks early;
        the caller restores input order. ``progress(done, total)`` is told after each batch, and
        with ``show_progress_bar`` a bar is drawn (:mod:`contextlens.core.progress`)."""
        ordered = sorted(items, key=lambda item: -len(item[1]))
        chunks = [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]
        shown = show_progress_bar and len(chunks) > 1
        with progress_bar(f"{self.name}: {what}", len(items)) if shown else nullcontext() as bar:
            done = 0
            for chunk in chunks:
                yield chunk
                done += len(chunk)
                for tell in (bar, progress):
                    if tell is not None:
                        tell(done, len(items))

    def pad(self, sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-pad token id sequences: ``(ids, attention mask)`` (one vectorized fill, no
        tensor per row)."""
        lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
        mask = np.arange(int(lengths.max())) < lengths[:, None]
        ids = np.full(mask.shape, self.tokenizer.pad_token_id, dtype=np.int64)
        ids[mask] = np.fromiter(chain.from_iterable(sequences), dtype=np.int64, count=int(lengths.sum()))
        return torch.from_numpy(ids), torch.from_numpy(mask.astype(np.int64))

    def run(self, ids: torch.Tensor, mask: torch.Tensor, hidden_states: bool, attentions: bool = False) -> Any:
        """One forward pass of the torch model without gradients (attention weights, the model's
        own outputs: torch runtime only)."""
        self.require_torch("the model's full outputs")
        net = self.attention_model if attentions else self.model
        with torch.inference_mode():
            return net(
                input_ids=ids,
                attention_mask=mask,
                output_hidden_states=hidden_states,
                output_attentions=attentions,
            )

    def run_layers(
        self, ids: torch.Tensor, mask: torch.Tensor, layers: Sequence[int], keep: layer_forward.Keep | None = None
    ) -> list[torch.Tensor]:
        """``keep(state)`` at each requested layer (checked, 0..L) without running the blocks above
        the highest; see :func:`layer_forward.run_layers`."""
        if self.runtime == "onnx":
            return self.onnx_forward().run_layers(ids, mask, layers, keep or (lambda h: h))
        return self.run_torch_layers(ids, mask, layers, keep)

    def run_torch_layers(
        self, ids: torch.Tensor, mask: torch.Tensor, layers: Sequence[int], keep: layer_forward.Keep | None = None
    ) -> list[torch.Tensor]:
        """:meth:`run_layers` on the torch model whatever the runtime (the ONNX export's reference)."""
        return layer_forward.run_layers(self._tap, ids, mask, layers, keep)

    def run_with_attentions(
        self, ids: torch.Tensor, mask: torch.Tensor, top: int
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Hidden states 0..``top`` and the attention weights of blocks 1..``top`` from the eager
        twin (torch runtime only); see :func:`layer_forward.run_with_attentions`."""
        self.require_torch("attention weights")
        return layer_forward.run_with_attentions(self._attention_tap, ids, mask, top, self.num_heads)

    def onnx_forward(self) -> OnnxForward:
        """The ONNX Runtime graphs (exported and checked on first use, then cached on disk; one
        export however many threads ask at once)."""
        with self._onnx_lock:
            if self._onnx is None:
                self._onnx = OnnxForward(self)
            return self._onnx

    def require_torch(self, what: str) -> None:
        """Refuse, in one line, what only the torch runtime provides."""
        if self.runtime != "torch":
            raise InputError(f"{what} come from the torch runtime; run this with `runtime` torch, not {self.runtime}")

    def weight_bytes(self) -> int:
        """Bytes of the weights as this model runs them (int8 packed where quantized)."""
        if self.runtime == "onnx":
            return self.onnx_forward().weight_bytes()
        return weight_bytes(self.model)


class SerialTokenizer:
    """A fast tokenizer that one call at a time uses: the Rust tokenizer's truncation and padding
    settings are state that each call sets, so two threads tokenizing at once fail ("Already
    borrowed") or read each other's settings. Everything but calling it is passed through."""

    def __init__(self, tokenizer: Any):
        self.__dict__["_tokenizer"] = tokenizer
        self.__dict__["_lock"] = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return self._tokenizer(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tokenizer, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._tokenizer, name, value)

    def __len__(self) -> int:
        return len(self._tokenizer)
