"""The backbone: a loaded transformer and how to run it, knowing nothing of what is asked of it.

It owns loading (tokenizer, weights, precision, runtime), the model's facts (layers, sizes, the
identity disk caches key on), padding, batching longest-first, and the forward strategy: torch
(:mod:`contextlens.core.torch_net` over :mod:`contextlens.core.layer_forward`, which stops at the
highest layer asked and shares nothing between calls) or ONNX Runtime on the lean path
(:mod:`contextlens.core.lean_net`: no torch, no transformers, once the graphs are exported and
checked by :mod:`contextlens.core.onnx_runtime`). The verbs that give it
meaning (encode occurrences, token states, text pooling, attention) sit above it, in
:mod:`~contextlens.core.extraction` and :mod:`~contextlens.core.text_pooling`, and
:class:`~contextlens.core.contextual_models.ContextualModel` puts the two together.

One backbone serves many threads at once: the tokenizer is called one call at a time (its
truncation and padding settings are state inside the Rust tokenizer), the ONNX graphs are built
once under a lock, and every forward keeps its state in the call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from typing import Any, Protocol

from contextlens.core import arguments
from contextlens.core.backend import Backend
from contextlens.core.held_interrupts import held_interrupts
from contextlens.core.model_facts import checked_layers, loaded_is_decoder, loaded_window
from contextlens.core.onnx_graphs import export_lock, fp32_check_diff, lean_ready, require_onnxruntime
from contextlens.core.progress import Progress, progress_bar
from contextlens.errors import InputError


class ForwardNet(Protocol):
    """What the backbone asks of its forward strategy (:class:`~contextlens.core.torch_net.TorchNet`,
    :class:`~contextlens.core.lean_net.LeanNet`): each answers for its runtime, so the backbone
    never asks which runtime it runs on."""

    arrays: Any  # torch tensors or numpy arrays (core/array_ops.py)
    config: Any
    tokenizer: Any
    identity: str  # what disk caches key the results by
    lean_attention: bool  # attention weights from a checked ONNX attention graph
    eager_attention: bool  # attention weights from torch's eager twin (any model on torch)

    def shared_identity(self, export_checked: bool) -> str: ...
    def pad(self, sequences: Sequence[Sequence[int]]) -> tuple[Any, Any]: ...
    def run(self, ids: Any, mask: Any, hidden_states: bool, attentions: bool = False) -> Any: ...
    def attention_net(self) -> Any: ...
    def run_layers(self, ids: Any, mask: Any, layers: Sequence[int], keep: Any = None) -> list[Any]: ...
    def run_with_attentions(self, ids: Any, mask: Any, top: int) -> tuple[list[Any], list[Any]]: ...
    def torch_net(self, reference: Callable[[], Any]) -> Any: ...
    def onnx_graphs(self, export: Callable[[], Any]) -> Any: ...
    def require_torch(self, what: str) -> None: ...
    def input_rows(self, ids: Any) -> Any: ...
    def position_rows(self, n: int) -> Any: ...
    def weight_bytes(self) -> int: ...


class Backbone:
    """A transformer loaded for contextlens: its facts and its forward pass.

    On the torch runtime the forward is a :class:`~contextlens.core.torch_net.TorchNet`; on ONNX
    Runtime a :class:`~contextlens.core.lean_net.LeanNet`, which imports neither torch nor
    transformers. The first ONNX use of a model on a machine exports and checks its graph (torch
    is loaded for that, once, and :attr:`exported_now` says it happened); every later process
    starts lean. The torch model an ONNX backbone compares with (:meth:`run_torch_layers`,
    :attr:`model`) is loaded only if asked for.
    """

    def __init__(
        self,
        name: str,
        source: str,
        revision: str | None = None,
        precision: str = "fp32",
        runtime: str = "torch",
        *,
        backend: Backend | None = None,
    ):
        self.backend = backend or Backend(precision, runtime)  # a resolved one is passed down as it is
        self.name = name
        self.source = source
        self.revision = revision
        self.exported_now = False
        # padded tokens a batch may hold instead of batch_size rows: a GPU is fed full batches (short
        # sentences many at a time); None on the CPU, whose batches, and numbers, stay as they were
        self.token_budget: int | None = GPU_TOKEN_BUDGET if self.backend.on_gpu else None
        self._reference: Any = None  # the torch fp32 net an ONNX backbone is checked against
        self._reference_lock = threading.Lock()
        self._net: ForwardNet = _OPENERS[self.backend.runtime](self)  # TorchNet or LeanNet
        self.arrays = self._net.arrays
        self.config = self._net.config
        self.tokenizer = SerialTokenizer(self._net.tokenizer)

    def _open_torch(self) -> Any:
        """The torch runtime: transformers' model, quantized at int8, cast at fp16/bf16, on its device."""
        quantized = self.precision == "int8"
        return _torch_net()(self.name, str(self.source), self.revision, self.precision, quantized, self.backend.device)

    def _open_lean(self) -> Any:
        """ONNX Runtime: the checked graph, exported first if this machine has none (torch is
        loaded for that, once, and :attr:`exported_now` says it happened)."""
        require_onnxruntime()
        if not lean_ready(self.name, str(self.source), self.precision):
            with export_lock(self.name, str(self.source)):  # another process may be exporting it now
                if not lean_ready(self.name, str(self.source), self.precision):
                    self._export_once()
        from contextlens.core.lean_net import LeanNet

        return LeanNet(self.name, str(self.source), self.precision, self.backend.device)

    def _export_once(self) -> None:
        """Export and check this model's graph at this precision (torch fp32 is what it is made
        from; a decoder is refused there), then let the torch model go unless something asks for
        it again."""
        from contextlens.core.onnx_runtime import OnnxForward

        OnnxForward(self._load_reference())
        self.exported_now = True
        with self._reference_lock:
            self._reference = None  # the lean net needs none of it: its memory goes

    def torch_reference(self) -> Any:
        """The torch fp32 net of this model, loaded on first need (the export, a comparison)."""
        with self._reference_lock:
            if self._reference is None:
                self._reference = self._net if self.backend.is_reference else self._load_reference()
            return self._reference

    def _load_reference(self) -> Any:
        return _torch_net()(self.name, str(self.source), self.revision, self.precision, False)

    # --- facts -----------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """What disk cache keys name the weights by: the source, plus the precision and its
        quantization rule when not fp32 (an int8 model must never read fp32 results, nor the
        results of another int8 rule), plus the runtime and its export rule when not torch (ONNX
        Runtime's fp32 is within 1e-4 of torch's, not equal to it)."""
        return self._net.identity

    @property
    def shared_identity(self) -> str:
        """What the benchmark calibrations (the WiC pair encodings, the sense layer choice,
        same-sense's rule, the random-word baseline) key by: the fp32 weights' own identity (torch
        fp32's) on both runtimes where this is fp32 on ONNX Runtime and its export check is
        recorded as passing (within 1e-4 of torch on the drift set; the encodings are stored as
        float16, whose rounding, 1e-3 relative, is coarser), so torch and ONNX Runtime compute
        them once between them; else :attr:`identity` (int8's numbers differ: kept apart)."""
        return self._net.shared_identity(self.export_check_diff is not None)

    @property
    def export_check_diff(self) -> float | None:
        """The recorded passing export check of this model's fp32 ONNX graph (its largest
        difference from torch), if this machine has one; None at int8 or without one."""
        return fp32_check_diff(self.name, str(self.source)) if self.precision == "fp32" else None

    @property
    def precision(self) -> str:
        return self.backend.precision

    @property
    def runtime(self) -> str:
        return self.backend.runtime

    @property
    def model(self) -> Any:
        """The torch network: this backbone's on the torch runtime; on ONNX Runtime the fp32
        network its graph was exported from (loaded now if it was not)."""
        return self._net.torch_net(self.torch_reference).model

    @property
    def attention_model(self) -> Any:
        """The module tree attention weights come from: the model itself when it runs eager
        attention, else its eager twin (same weight tensors, its own config)."""
        return self._net.attention_net()

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
        """Most tokens (specials included) one forward pass accepts (512 when nothing says)."""
        return loaded_window(self.tokenizer, self.config)

    @property
    def is_decoder(self) -> bool:
        """Decoders see left context only."""
        return loaded_is_decoder(self.config)

    def check_layers(self, layers: Sequence[int] | None) -> tuple[int, ...]:
        """Validate requested layers (negative counts from the top); None means all 0..L."""
        return checked_layers(arguments.layer_numbers(layers), self.num_layers, self.name)

    def batches(
        self,
        items: list,
        batch_size: int,
        show_progress_bar: bool = False,
        what: str = "batches",
        progress: Progress | None = None,
    ) -> Iterator[list]:
        """``(key, sequence)`` items longest first, so padding is small and memory peaks early;
        the caller restores input order. ``batch_size`` rows a batch, or with a
        :attr:`token_budget` (a GPU's default) as many rows as fit in it, however short the
        sequences. ``progress(done, total)`` is told after each batch, and with
        ``show_progress_bar`` a bar is drawn (:mod:`contextlens.core.progress`)."""
        ordered = sorted(items, key=lambda item: -len(item[1]))
        if self.token_budget is None:  # the CPU: batch_size rows a batch, as ever (the numbers stay bit for bit)
            chunks = [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]
        else:
            lengths = [len(seq) for _, seq in ordered]
            chunks = [ordered[s] for s in token_batches(lengths, self.token_budget)]
        shown = show_progress_bar and len(chunks) > 1
        with progress_bar(f"{self.name}: {what}", len(items)) if shown else nullcontext() as bar:
            done = 0
            for chunk in chunks:
                yield chunk
                done += len(chunk)
                for tell in (bar, progress):
                    if tell is not None:
                        tell(done, len(items))

    # --- the forward -----------------------------------------------------------------------

    def pad(self, sequences: Sequence[Sequence[int]]) -> tuple[Any, Any]:
        """Right-pad token id sequences: ``(ids, attention mask)``, torch tensors on the torch
        runtime, numpy arrays on ONNX Runtime (what :attr:`arrays` works on)."""
        return self._net.pad(sequences)

    def run(self, ids: Any, mask: Any, hidden_states: bool, attentions: bool = False) -> Any:
        """One forward pass of the torch model without gradients (attention weights, the model's
        own outputs: torch runtime only)."""
        return self._net.run(ids, mask, hidden_states, attentions)

    def run_layers(self, ids: Any, mask: Any, layers: Sequence[int], keep: Any = None) -> list[Any]:
        """``keep(state)`` at each requested layer (checked, 0..L) without running the blocks above
        the highest; see :func:`layer_forward.run_layers`."""
        return self._net.run_layers(ids, mask, layers, keep)

    def run_torch_layers(self, ids: Any, mask: Any, layers: Sequence[int], keep: Any = None) -> list[Any]:
        """:meth:`run_layers` on the torch fp32 model whatever the runtime (the ONNX export's
        reference; loads torch on an ONNX backbone)."""
        return self._net.torch_net(self.torch_reference).run_torch_layers(ids, mask, layers, keep)

    def run_with_attentions(self, ids: Any, mask: Any, top: int) -> tuple[list[Any], list[Any]]:
        """Hidden states 0..``top`` and the attention weights of blocks 1..``top``: from the eager
        twin on torch (:func:`layer_forward.run_with_attentions`), from the checked attention
        graph on ONNX Runtime fp32 (:attr:`lean_attention`); refused otherwise."""
        return self._net.run_with_attentions(ids, mask, top)

    @property
    def lean_attention(self) -> bool:
        """Whether attention weights come from this model's checked ONNX attention graph (fp32 on
        ONNX Runtime, the graph within 1e-5 of torch's eager attention), not from torch."""
        return self._net.lean_attention

    @property
    def gives_attention(self) -> bool:
        """Whether this model gives attention weights at all: on torch always (its eager twin), on
        ONNX Runtime from a checked attention graph only (:attr:`lean_attention`; int8 has none).
        A face asks this, never which runtime runs."""
        return self._net.eager_attention or self.lean_attention

    def input_rows(self, ids: Sequence[int] | Any) -> Any:
        """The input embedding rows of token ids (float32 numpy)."""
        return self._net.input_rows(ids)

    def position_rows(self, n: int) -> Any:
        """The learned absolute position rows of positions 0..n-1 (float32 numpy), or None."""
        return self._net.position_rows(n)

    def onnx_forward(self) -> Any:
        """The ONNX Runtime graphs: this backbone's own on ONNX Runtime; on torch, the export
        made from this model (exported and checked on first use, then cached on disk)."""
        return self._net.onnx_graphs(self._exported)

    def _exported(self) -> Any:
        """The export made from this backbone's torch model, built or read once per backbone."""
        with self._reference_lock:
            if getattr(self, "_onnx", None) is None:
                from contextlens.core.onnx_runtime import OnnxForward

                with export_lock(self.name, str(self.source)):  # one export per machine at a time
                    self._onnx = OnnxForward(self.torch_reference())
            return self._onnx

    def require_torch(self, what: str) -> None:
        """Refuse, in one line, what only the torch runtime provides."""
        self._net.require_torch(what)

    def weight_bytes(self) -> int:
        """Bytes of the weights as this model runs them (int8 packed where quantized)."""
        return self._net.weight_bytes()


GPU_TOKEN_BUDGET = 32_768  # padded tokens per batch on a GPU: ~50 MB of fp16 states a layer at 768 wide


def token_batches(lengths: Sequence[int], budget: int) -> list[slice]:
    """Consecutive slices of sequences sorted longest first, each as many rows as fit in
    ``budget`` padded tokens (rows x the slice's first, longest, length); a sequence longer than
    the budget is a batch of its own."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InputError(f"token_budget must be a whole number of tokens, at least 1 (or None), got {budget!r}")
    out, start = [], 0
    while start < len(lengths):
        rows = max(1, budget // max(1, lengths[start]))
        out.append(slice(start, min(start + rows, len(lengths))))
        start = out[-1].stop
    return out


def _torch_net() -> Any:
    """The TorchNet class, imported (torch with it) with Ctrl-C held: an interrupt inside torch's
    C++ import aborts the process (:mod:`contextlens.core.held_interrupts`)."""
    with held_interrupts():
        from contextlens.core.torch_net import TorchNet
    return TorchNet


_OPENERS = {"torch": Backbone._open_torch, "onnx": Backbone._open_lean}  # runtime -> its forward strategy


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
