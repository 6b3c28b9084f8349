"""Text encoders of the three kinds, for retrieval.

The second seed warns that "embedding" names three different objects. A retrieval system can be
built on any of them, and only one of them was trained for it:

* ``input-row``   - mean of the input rows of the text's tokens (the seed's "design mistake":
  a static table lookup, no context at all; kept as the baseline);
* ``hidden-mean`` - mean of the hidden states at one layer (0 = embedding output, L = last);
* ``sentence``    - the embedding model's own output, with its sentence-transformers pooling config.

Every encoder has an :class:`EncoderIdentity` (model, kind, layer). A vector index stores it in
its manifest and refuses queries from an encoder with a different identity: vectors of two
models, or of two kinds, live in different spaces and their cosines mean nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from contextlens.core.contextual_models import ContextualModel, load_contextual, sentence_config
from contextlens.core.disk_cache import cache_key, cached_arrays
from contextlens.errors import InputError

KINDS: tuple[str, ...] = ("input-row", "hidden-mean", "sentence")


@dataclass(frozen=True)
class EncoderIdentity:
    """What a vector is: which model, which kind, which layer (hidden-mean only), how many dims."""

    model: str
    kind: str
    layer: int | None
    dim: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        layer = f" layer {self.layer}" if self.layer is not None else ""
        return f"{self.model} {self.kind}{layer} ({self.dim}-d)"


class TextEncoder:
    """One text -> one float32 vector, of one kind, from one contextual model.

    Parameters
    ----------
    model : a loaded :class:`ContextualModel` (see :func:`load_contextual`).
    kind : ``input-row``, ``hidden-mean`` or ``sentence``.
    layer : for ``hidden-mean`` only; negative counts from the top; default the last layer.
    """

    def __init__(self, model: ContextualModel, kind: str = "sentence", layer: int | None = None):
        if kind not in KINDS:
            raise InputError(f"unknown encoder kind {kind!r}; use one of {', '.join(KINDS)}")
        if kind != "hidden-mean" and layer is not None:
            raise InputError(f"--layer applies to the hidden-mean kind only, not to {kind!r}; drop it")
        if kind == "sentence" and sentence_config(model.source) is None:
            raise InputError(
                f"{model.name} has no sentence-transformers pooling config, so it has no 'sentence' kind; "
                "use --kind hidden-mean"
            )
        if kind == "hidden-mean":
            (layer,) = model.check_layers([model.num_layers if layer is None else layer])
        self.model = model
        self.kind = kind
        self.layer = layer
        self.identity = EncoderIdentity(model.name, kind, layer, model.hidden_size)

    def encode(self, texts: Sequence[str], batch_size: int = 32, show_progress_bar: bool = False) -> np.ndarray:
        """Encode texts into an ``(n, dim)`` float32 array, in input order (not normalized)."""
        if not texts:
            raise InputError("no texts to encode; give at least one non-empty text")
        if self.kind == "input-row":
            out = self.model.embed_input_rows(texts)
        elif self.kind == "hidden-mean":
            out = self.model.embed_texts(
                texts, layer=self.layer, mode="mean", batch_size=batch_size, show_progress_bar=show_progress_bar
            )
        else:
            out = self.model.embed_sentences(texts, batch_size=batch_size, show_progress_bar=show_progress_bar)
        return np.ascontiguousarray(out, dtype=np.float32)

    def encode_cached(self, texts: Sequence[str], namespace: str = "retrieval", **kwargs: Any) -> np.ndarray:
        """:meth:`encode`, served from the on-disk cache when the same texts were encoded before."""
        key = cache_key(self.identity.to_dict(), self.model.source, list(texts))
        return cached_arrays(namespace, key, lambda: {"x": self.encode(texts, **kwargs)})["x"]


def make_encoder(model: str, kind: str = "sentence", layer: int | None = None) -> TextEncoder:
    """Load the model by name (cached) and wrap it as an encoder; validates kind and layer first."""
    if kind not in KINDS:
        raise InputError(f"unknown encoder kind {kind!r}; use one of {', '.join(KINDS)}")
    return TextEncoder(load_contextual(model), kind, layer)


def hidden_means_every_layer(
    model: ContextualModel,
    texts: Sequence[str],
    batch_size: int = 32,
    show_progress_bar: bool = False,
    cache: bool = True,
) -> np.ndarray:
    """``(L+1, n, d)``: the hidden-mean encoding of each text at every layer, in one forward pass.

    The same pooling as ``embed_texts(texts, layer, mode="mean")`` (mean over every token the
    attention mask keeps, specials included; cut at the model's maximum length), but one pass
    instead of L+1, which is what a layer sweep needs.
    """

    def compute() -> dict[str, np.ndarray]:
        return {"x": model.embed_texts_layers(texts, None, "mean", False, batch_size, show_progress_bar)}

    if not cache:
        return compute()["x"]
    key = cache_key("hidden-mean-every-layer", model.name, model.source, list(texts))
    return cached_arrays("retrieval", key, compute)["x"]
