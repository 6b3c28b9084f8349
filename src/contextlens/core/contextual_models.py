"""Contextual models: loading, the model's facts, and the shared forward plumbing.

:class:`ContextualModel` wraps a Hugging Face encoder (or decoder). What is asked of it lives
by concept in sibling modules, one meaning per verb:

* :mod:`~contextlens.core.alignment` - characters -> tokens (the one span-to-token rule, windowing);
* :mod:`~contextlens.core.extraction` - a target's input row and hidden states per occurrence
  (``encode``/``encode_occurrences``), every token of a text (``forward_one``, ``token_states``);
* :mod:`~contextlens.core.text_pooling` - one vector per text (``embed_*``).

The methods below are thin entries into those modules, kept so callers hold one object. This
module keeps what they share: batching longest-first, padding and running under
``torch.inference_mode``, and an in-memory cache of occurrence encodings.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import chain
from typing import Any

import numpy as np
import torch

from contextlens.core import alignment, arguments, extraction, layer_forward, text_pooling
from contextlens.core.alignment import TokenizedOccurrence
from contextlens.core.extraction import POOLINGS, ForwardPass, OccurrenceEncoding, Pooling, Progress, TokenStates
from contextlens.core.occurrences import Occurrence
from contextlens.core.onnx_runtime import EXPORT_RULE, ORT_QUANT_RULE, OnnxForward, check_runtime, require_onnxruntime
from contextlens.core.precision import QUANT_RULE, check_precision, quantize, weight_bytes
from contextlens.core.resources import resolve_contextual
from contextlens.core.text_pooling import TextPooling, sentence_config
from contextlens.errors import InputError, UnknownModelError

__all__ = [
    "POOLINGS",
    "ContextualModel",
    "ForwardPass",
    "OccurrenceEncoding",
    "Pooling",
    "TokenStates",
    "TokenizedOccurrence",
    "load_contextual",
    "sentence_config",
]

_DECODER_TYPES = {"llama", "gpt2", "mistral", "qwen2", "gemma", "phi", "gpt_neox", "smollm3"}


class ContextualModel:
    """A transformer seen through contextlens. Load with :func:`load_contextual` (cached)."""

    def __init__(
        self, name: str, source: str, revision: str | None = None, precision: str = "fp32", runtime: str = "torch"
    ):
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

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
        self.precision = check_precision(precision)
        self.runtime = check_runtime(runtime)
        self._onnx: OnnxForward | None = None
        if runtime == "onnx":
            require_onnxruntime()  # the torch model stays fp32: it is what the graph is exported from
        elif precision == "int8":
            self.model = quantize(self.model)
        self.config = self.model.config
        self._cache: OrderedDict[tuple, OccurrenceEncoding] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._onnx_lock = threading.Lock()
        self.cache_size = 100_000
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
    def backend(self) -> str:
        """How the forward runs, for labels: ``fp32``, ``int8``, ``onnx fp32``, ``onnx int8``."""
        return self.precision if self.runtime == "torch" else f"{self.runtime} {self.precision}"

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

    # --- alignment (core.alignment) --------------------------------------------------------

    def tokenize(self, occurrence: Occurrence, max_length: int | None = None) -> TokenizedOccurrence:
        """Map an occurrence onto tokens; cut to a window around the target if it is too long."""
        occurrence = arguments.occurrence(occurrence)
        return alignment.tokenize_many(self, [occurrence], max_length)[0]

    def tokenize_many(
        self, occurrences: Sequence[Occurrence], max_length: int | None = None
    ) -> list[TokenizedOccurrence]:
        """:meth:`tokenize` for many occurrences in one tokenizer call (much faster)."""
        occurrences = arguments.occurrence_list(occurrences)
        return alignment.tokenize_many(self, occurrences, max_length)

    # --- extraction (core.extraction) ------------------------------------------------------

    def encode_occurrences(
        self,
        occurrences: Sequence[Occurrence],
        layers: Sequence[int] | None = None,
        pooling: Pooling = "mean",
        batch_size: int = 32,
        show_progress_bar: bool = False,
    ) -> list[OccurrenceEncoding]:
        """Input rows and hidden states of each occurrence's target; see :func:`extraction.encode_occurrences`."""
        occurrences, batch_size = arguments.occurrence_list(occurrences), arguments.batch_size(batch_size)
        return extraction.encode_occurrences(self, occurrences, layers, pooling, batch_size, show_progress_bar)

    def encode(
        self, occurrence: Occurrence, layers: Sequence[int] | None = None, pooling: Pooling = "mean"
    ) -> OccurrenceEncoding:
        """One occurrence; see :meth:`encode_occurrences`."""
        occurrence = arguments.occurrence(occurrence)
        return self.encode_occurrences([occurrence], layers=layers, pooling=pooling)[0]

    def forward_one(self, occurrence: Occurrence, attentions: bool = False, through: int | None = None) -> ForwardPass:
        """Hidden states 0..``through`` (default all; optionally attentions) of every token of one text."""
        occurrence, through = arguments.occurrence(occurrence), arguments.optional_layer(through, "through")
        return extraction.forward_one(self, occurrence, attentions, through)

    def token_states(
        self,
        texts: Sequence[str],
        layers: Sequence[int] | None = None,
        batch_size: int = 32,
        show_progress_bar: bool = False,
    ) -> list[TokenStates]:
        """Hidden states of every non-special token of each text; see :func:`extraction.token_states`."""
        texts, batch_size = arguments.text_list(texts), arguments.batch_size(batch_size)
        return extraction.token_states(self, texts, layers, batch_size, show_progress_bar)

    # --- text pooling (core.text_pooling) --------------------------------------------------

    def embed_sentences(
        self, texts: Sequence[str], batch_size: int = 32, show_progress_bar: bool = False
    ) -> np.ndarray:
        """Sentence embeddings with the model's own sentence-transformers pooling config."""
        texts, batch_size = arguments.text_list(texts), arguments.batch_size(batch_size)
        return text_pooling.sentence_embeddings(self, texts, batch_size, show_progress_bar)

    def embed_texts(
        self,
        texts: Sequence[str],
        layer: int = -1,
        mode: TextPooling = "mean",
        normalize: bool = False,
        batch_size: int = 32,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """One vector per text from the hidden states at ``layer``, pooled over its tokens."""
        layer = arguments.layer_number(layer)
        return self.embed_texts_layers(texts, [layer], mode, normalize, batch_size, show_progress_bar)[0]

    def embed_texts_layers(
        self,
        texts: Sequence[str],
        layers: Sequence[int] | None = None,
        mode: TextPooling = "mean",
        normalize: bool = False,
        batch_size: int = 32,
        show_progress_bar: bool = False,
    ) -> np.ndarray:
        """``(len(layers), n, d)``: :meth:`embed_texts` at several layers (default all) in one pass."""
        texts, batch_size = arguments.text_list(texts), arguments.batch_size(batch_size)
        return text_pooling.pool_texts(
            self, texts, self.check_layers(layers), mode, normalize, self.max_length, batch_size, show_progress_bar
        )

    def embed_input_rows(self, texts: Sequence[str], batch_size: int = 256) -> np.ndarray:
        """Mean of the input rows of each text's tokens; see :func:`text_pooling.mean_input_rows`."""
        texts = arguments.text_list(texts)
        return text_pooling.mean_input_rows(self, texts)

    # --- shared forward plumbing -----------------------------------------------------------

    def batches(
        self,
        items: list,
        batch_size: int,
        show_progress_bar: bool,
        what: str,
        progress: Progress | None = None,
    ) -> Iterator[list]:
        """``(key, sequence)`` items longest first, so padding is small and memory peaks early;
        the caller restores input order. ``progress(done, total)`` is told after each batch."""
        ordered = sorted(items, key=lambda item: -len(item[1]))
        chunks = [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]
        if not show_progress_bar or len(chunks) < 2:
            done = 0
            for chunk in chunks:
                yield chunk
                done += len(chunk)
                if progress is not None:
                    progress(done, len(items))
            return
        from rich.progress import Progress as RichProgress

        with RichProgress(transient=True) as bar:
            task = bar.add_task(f"{self.name}: {what}", total=len(items))
            done = 0
            for chunk in chunks:
                yield chunk
                done += len(chunk)
                bar.advance(task, len(chunk))
                if progress is not None:
                    progress(done, len(items))

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
            raise InputError(f"{what} come from the torch runtime; run this without --runtime {self.runtime}")

    def weight_bytes(self) -> int:
        """Bytes of the weights as this model runs them (int8 packed where quantized)."""
        if self.runtime == "onnx":
            return self.onnx_forward().weight_bytes()
        return weight_bytes(self.model)

    def cached(self, key: tuple) -> OccurrenceEncoding | None:
        """An occurrence encoding computed before, or None."""
        with self._cache_lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
            return hit

    def clear_cache(self) -> None:
        """Forget every cached occurrence encoding."""
        with self._cache_lock:
            self._cache.clear()

    def remember(self, key: tuple, enc: OccurrenceEncoding) -> None:
        with self._cache_lock:
            self._cache[key] = enc
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)


def load_contextual(name_or_path: str = "mpnet", precision: str = "fp32", runtime: str = "torch") -> ContextualModel:
    """Load a contextual model by registry name, local folder or hub id; one instance per name,
    precision (``fp32``, exact, or ``int8``: see :mod:`contextlens.core.precision`) and runtime
    (``torch``, the reference, or ``onnx``: see :mod:`contextlens.core.onnx_runtime`)."""
    return _load(name_or_path, check_precision(precision), check_runtime(runtime))


_LOADING = threading.Lock()


def _load(name_or_path: str, precision: str, runtime: str) -> ContextualModel:
    """One load per (name, precision, runtime) however many threads ask for it at once."""
    with _LOADING:
        return _load_once(name_or_path, precision, runtime)


@lru_cache(maxsize=6)
def _load_once(name_or_path: str, precision: str, runtime: str) -> ContextualModel:
    name, source, revision = resolve_contextual(name_or_path)
    return ContextualModel(name, source, revision, precision, runtime)


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


def as_contextual(model: ContextualModel | str | os.PathLike) -> ContextualModel:
    """Every analysis takes a loaded model or its name (or folder); a name is loaded here, once."""
    if isinstance(model, ContextualModel):
        return model
    if isinstance(model, str | os.PathLike):
        return load_contextual(os.fspath(model))
    raise InputError(
        f"expected a contextual model (or its name, e.g. 'minilm'), got {type(model).__name__}; "
        "load one with load_contextual('minilm')"
    )
