"""Contextual models: the backbone with its verbs, one object for callers to hold.

:class:`ContextualModel` is a :class:`~contextlens.core.backbone.Backbone` (loading, facts, padding,
batching, the forward strategy) plus the verbs that give its states meaning, each living by
concept in its own module, one meaning per verb:

* :mod:`~contextlens.core.alignment` - characters -> tokens (the one span-to-token rule, windowing);
* :mod:`~contextlens.core.extraction` - a target's input row and hidden states per occurrence
  (``encode``/``encode_occurrences``, with the occurrence cache), every token of a text
  (``forward_one``, ``token_states``);
* :mod:`~contextlens.core.text_pooling` - one vector per text (``embed_*``).

The verbs import the backbone, never this module, so the dependencies run one way.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from contextlens.core import alignment, arguments, extraction, text_pooling
from contextlens.core.alignment import TokenizedOccurrence
from contextlens.core.backbone import Backbone
from contextlens.core.backend import Backend
from contextlens.core.extraction import (
    POOLINGS,
    ForwardPass,
    OccurrenceCache,
    OccurrenceEncoding,
    Pooling,
    TokenStates,
)
from contextlens.core.held_models import ReusedWhileHeld
from contextlens.core.occurrences import Occurrence
from contextlens.core.resources import DEFAULT_CONTEXTUAL, resolve_contextual
from contextlens.core.runtime_choice import ModelBackend
from contextlens.core.text_pooling import TextPooling, sentence_config
from contextlens.errors import InputError

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


class ContextualModel(Backbone):
    """A transformer seen through contextlens. Load with :func:`load_contextual` (cached)."""

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
        super().__init__(name, source, revision, precision, runtime, backend=backend)
        self.occurrence_cache = OccurrenceCache()

    @property
    def cache_size(self) -> int:
        """Most occurrence encodings kept in memory (0: none)."""
        return self.occurrence_cache.size

    @cache_size.setter
    def cache_size(self, size: int) -> None:
        self.occurrence_cache.size = size

    def clear_cache(self) -> None:
        """Forget every cached occurrence encoding."""
        self.occurrence_cache.clear()

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
        as_array: bool = False,
    ) -> list[OccurrenceEncoding] | np.ndarray:
        """Input rows and hidden states of each occurrence's target; see :func:`extraction.encode_occurrences`.
        ``as_array``: the hidden states alone, one float32 array ``(n, len(layers), hidden_size)``."""
        occurrences, batch_size = arguments.occurrence_list(occurrences), arguments.batch_size(batch_size)
        encodings = extraction.encode_occurrences(
            self, occurrences, layers, pooling, batch_size, show_progress_bar, cache=self.occurrence_cache
        )
        if not as_array:
            return encodings
        return np.stack([e.hidden for e in encodings]).astype(np.float32, copy=False)

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


def load_contextual(
    name_or_path: str = DEFAULT_CONTEXTUAL, precision: str = "fp32", runtime: str = "torch", device: str = "cpu"
) -> ContextualModel:
    """Load a contextual model by registry name, local folder or hub id; one instance per name,
    precision (``fp32``, exact; ``int8``: see :mod:`contextlens.core.precision`; ``fp16``/``bf16``:
    the torch network cast, for a GPU), runtime (``torch``, the reference; ``onnx``: see
    :mod:`contextlens.core.onnx_runtime`; or ``auto``: ONNX Runtime for an encoder, torch otherwise,
    see :mod:`contextlens.core.runtime_choice`) and device (``cpu``, the reference; ``cuda``,
    ``cuda:N``; or ``auto``: the GPU when one is visible, see :mod:`contextlens.core.devices`; a GPU
    that is not there raises :class:`~contextlens.errors.DeviceError`)."""
    return load_resolved(ModelBackend.resolve(name_or_path, precision, runtime, device))


def load_resolved(chosen: ModelBackend) -> ContextualModel:
    """:func:`load_contextual` of a request resolved already (a face's, checked at its boundary)."""
    return _load(chosen.model, chosen.backend)


_LOADING = threading.Lock()


def _load(name_or_path: str, backend: Backend) -> ContextualModel:
    """One load per (name, backend) however many threads ask for it at once."""
    with _LOADING:
        return _load_once(name_or_path, backend)


def _read(name_or_path: str, backend: Backend) -> ContextualModel:
    name, source, revision = resolve_contextual(name_or_path)
    return ContextualModel(name, source, revision, backend=backend)


_held = ReusedWhileHeld(_read)  # one that the cache below dropped, still held, is handed out again
_load_once = lru_cache(maxsize=6)(_held)  # the latest 6


def forget_loaded(name: str) -> None:
    """A model loaded earlier in this process under ``name`` (or from that folder) is another model
    now (``tune --force``): the next load reads it again. Other models stay loaded."""
    with _LOADING:
        _load_once.cache_clear()
        _held.forget(lambda key, model: name in (key[0], model.name))


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
