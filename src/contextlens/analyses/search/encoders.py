"""Text encoders of the three kinds, for retrieval.

The second seed warns that "embedding" names three different objects. A retrieval system can be
built on any of them, and only one of them was trained for it:

* ``input-row``   - mean of the input rows of the text's tokens (the seed's "design mistake":
  a static table lookup, no context at all; kept as the baseline);
* ``hidden-mean`` - mean of the hidden states at one layer (0 = embedding output, L = last);
* ``sentence``    - the embedding model's own output, with its sentence-transformers pooling config.

A fourth kind is no contextual model's: ``static`` - the mean of a static model's word vectors (a
model distilled from a transformer: of its token vectors), with no forward pass at all. An index
of it records the static model's name and a fingerprint of how it was made (:func:`static_record`),
so a query from another model, or from a model re-made under the same name, is refused.

Every encoder's vectors carry a :class:`~contextlens.core.vectors.Provenance`, the one type that
says where any vector of contextlens came from: ``hidden-mean`` is the provenance kind
``hidden-state`` with pooling ``mean``, ``input-row`` the kind ``input-row`` with pooling
``mean``, ``sentence`` the kind ``sentence`` (the model's own pooling). The encoder kind names
above are what the CLI's ``--kind`` and an index manifest's ``encoder.kind`` say; a vector index
stores the provenance in its manifest and refuses queries from an encoder with another one:
vectors of two models, or of two kinds, live in different spaces and their cosines mean nothing.
The precision the model ran at (``fp32``, or ``int8``: see :mod:`contextlens.core.precision`) is
part of the provenance too, and an index refuses a query encoded at another precision than its
documents: int8 moves every vector a little (cosine ~0.98 with fp32 for minilm, ~0.93 deep in
mpnet), so mixing the two would rank documents by a drift nobody chose. The runtime (``torch``, or
``onnx``: see :mod:`contextlens.core.onnx_runtime`) is recorded when it is not torch; an index
accepts a query on another runtime only when both sides are fp32 (the ONNX fp32 graph is checked
within 1e-4 of torch), never at int8 (torch's and ONNX Runtime's int8 are different quantizers).
A manifest written before these fields existed reads as fp32 on torch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from contextlens.core import arguments
from contextlens.core.choices import check_precision, check_runtime
from contextlens.core.devices import reading_device
from contextlens.core.disk_cache import cache_key, cached_arrays
from contextlens.core.vectors import Provenance
from contextlens.errors import InputError

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel
    from contextlens.core.static_models import StaticModel

# Encoder kind (``--kind``, the manifest's ``encoder.kind``) -> (provenance kind, pooling).
ENCODER_KINDS: dict[str, tuple[str, str | None]] = {
    "input-row": ("input-row", "mean"),
    "hidden-mean": ("hidden-state", "mean"),
    "sentence": ("sentence", None),
    "static": ("static", "mean"),
}
STATIC = "static"
KINDS: tuple[str, ...] = ("input-row", "hidden-mean", "sentence")  # a contextual model's kinds (``--kind``)


def text_provenance(
    model: str,
    kind: str,
    layer: int | None,
    dim: int,
    precision: str = "fp32",
    runtime: str = "torch",
    device: str = "cpu",
) -> Provenance:
    """The provenance of a text vector made by the encoder ``kind`` (an :data:`ENCODER_KINDS` name)."""
    if kind not in ENCODER_KINDS:
        raise InputError(f"unknown encoder kind {kind!r}; use one of {', '.join(KINDS)}")
    vector_kind, pooling = ENCODER_KINDS[kind]
    return Provenance(
        model,
        vector_kind,  # type: ignore[arg-type]
        layer,
        pooling,
        dim,
        check_precision(precision),
        check_runtime(runtime),
        device,
    )


def encoder_kind(provenance: Provenance) -> str:
    """The encoder kind name (``hidden-mean`` ...) of a text vector's provenance."""
    for name, (kind, pooling) in ENCODER_KINDS.items():
        if (provenance.kind, provenance.pooling) == (kind, pooling):
            return name
    raise InputError(
        f"{provenance.describe()} vectors are not made by a text encoder; use one of {', '.join(ENCODER_KINDS)}"
    )


def encoder_dict(provenance: Provenance) -> dict[str, Any]:
    """The manifest's ``encoder`` object: ``{"model", "kind", "layer", "dim", "precision"}`` with the
    encoder kind name, and ``runtime`` when it is not torch (a torch index's shape is unchanged)."""
    out: dict[str, Any] = {
        "model": provenance.model,
        "kind": encoder_kind(provenance),
        "layer": provenance.layer,
        "dim": provenance.dim,
        "precision": provenance.precision,
    }
    if provenance.runtime != "torch":
        out["runtime"] = provenance.runtime
    if provenance.device != "cpu":  # likewise: a CPU index's manifest is what it was before devices
        out["device"] = provenance.device
    return out


def provenance_from_dict(data: dict[str, Any]) -> Provenance:
    """Inverse of :func:`encoder_dict` (a manifest's ``encoder``; without ``precision`` or
    ``runtime``, as written before they were recorded, it is fp32 on torch)."""
    return text_provenance(
        data["model"],
        data["kind"],
        data["layer"],
        int(data["dim"]),
        data.get("precision", "fp32"),
        data.get("runtime", "torch"),
        data.get("device", "cpu"),
    )


def runtimes_agree(precision: str, runtime: str, other_precision: str, other_runtime: str) -> bool:
    """Whether vectors made on two runtimes may meet in one index: the same runtime, or fp32 on
    both sides (ONNX Runtime's fp32 graph is checked within 1e-4 of torch); never int8 across
    runtimes (torch's dynamic quantization and ONNX Runtime's are different quantizers)."""
    return runtime == other_runtime or precision == other_precision == "fp32"


def query_device(index: Provenance, device: str | None) -> str:
    """The device a query runs on: the one asked for, else :func:`reading_device`'s."""
    return device if device is not None else reading_device(index.precision, index.device)


def device_refusal(index: Provenance, device: str) -> str:
    """The one line refusing a query on ``device`` against an index made on another kind of device."""
    return (
        f"this index holds {describe_encoder(index)} vectors made on {index.device} but the query runs on {device}: "
        f"{index.precision} results of a GPU and of the CPU differ by more than fp32's check; query on "
        f"{index.device.split(':')[0]} or rebuild the index (at fp32 an index may be queried on either)"
    )


def runtime_refusal(index: Provenance, runtime: str) -> str:
    """The one line refusing a query on ``runtime`` against an index whose runtime does not agree."""
    return (
        f"this index holds {describe_encoder(index)} vectors (made on the {index.runtime} runtime) but the query "
        f"runs on {runtime}: torch int8 and ONNX Runtime int8 are different quantizers; "
        f"query with `runtime` {index.runtime} or rebuild the index"
    )


def describe_encoder(provenance: Provenance) -> str:
    """``minilm hidden-mean layer 3 (384-d)``: how tables and messages name an encoder (``, int8``
    inside the brackets when it ran at int8; ``, onnx fp32`` or ``, onnx int8`` on ONNX Runtime)."""
    layer = f" layer {provenance.layer}" if provenance.layer is not None else ""
    backend = "" if provenance.backend.is_reference else provenance.backend.label
    return (
        f"{provenance.model} {encoder_kind(provenance)}{layer} ({provenance.dim}-d{', ' if backend else ''}{backend})"
    )


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
            raise InputError(f"`layer` applies to the hidden-mean kind only, not to {kind!r}; drop it")
        from contextlens.core.text_pooling import sentence_config  # torch: once the arguments are checked

        if kind == "sentence" and sentence_config(model.source) is None:
            raise InputError(
                f"{model.name} has no sentence-transformers pooling config, so it has no 'sentence' kind; "
                "use `kind` hidden-mean"
            )
        if kind == "hidden-mean":
            (layer,) = model.check_layers([model.num_layers if layer is None else layer])
        self.model = model
        self.kind = kind
        self.layer = layer
        self.provenance = text_provenance(
            model.name, kind, layer, model.hidden_size, model.precision, model.runtime, model.backend.device
        )

    def encode(self, texts: Sequence[str], batch_size: int = 32, show_progress_bar: bool = False) -> np.ndarray:
        """Encode texts into an ``(n, dim)`` float32 array, in input order (not normalized)."""
        if not texts:
            raise InputError("no texts to encode; give at least one non-empty text")
        check_batch_size(batch_size)
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
        # precision and runtime are in the model's identity; the encoder dict without them keeps fp32 keys as they were
        encoder = {k: v for k, v in encoder_dict(self.provenance).items() if k not in ("precision", "runtime")}
        key = cache_key(encoder, self.model.identity, list(texts))
        return cached_arrays(namespace, key, lambda: {"x": self.encode(texts, **kwargs)})["x"]


def check_batch_size(batch_size: int) -> int:
    """Texts per forward pass: a whole number of at least 1 (a ParameterError naming ``batch_size``)."""
    return arguments.batch_size(batch_size)


def check_kind(kind: str) -> str:
    """A contextual model's encoder kind (a static model's is chosen by naming the static model)."""
    if kind not in KINDS:
        static = "; a static model encodes by `static` NAME instead of a contextual model" if kind == STATIC else ""
        raise InputError(f"unknown encoder kind {kind!r}; use one of {', '.join(KINDS)}{static}")
    return kind


def make_encoder(model: ContextualModel | str, kind: str = "sentence", layer: int | None = None) -> TextEncoder:
    """Wrap a model (loaded, or loaded here by name) as an encoder; validates the kind first."""
    from contextlens.core.contextual_models import as_contextual  # torch: once the arguments are checked

    return TextEncoder(as_contextual(model), check_kind(kind), layer)


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
    key = cache_key("hidden-mean-every-layer", model.name, model.identity, list(texts))
    return cached_arrays("retrieval", key, compute)["x"]


# --- a static model as the encoder ------------------------------------------------------------


def static_record(static: StaticModel, name: str | None = None) -> dict[str, Any]:
    """What an index records of its static encoder: the name it is loaded by, how it was made, and
    a fingerprint that changes when the model is made again under the same name."""
    name = name or static.name
    return {"name": name, "made": static.how_made, "fingerprint": static_fingerprint(name)}


def static_fingerprint(name: str) -> str:
    """Which model a static name stands for now, read without loading it: a made model's provenance
    digest; a registered model's name; a vectors file's size and modification time."""
    from contextlens.core.resources import REGISTRY
    from contextlens.core.static_store import made_fingerprint

    made = made_fingerprint(name)
    if made is not None:
        return made
    if name in REGISTRY:
        return f"registry:{name}"
    try:
        info = os.stat(os.path.expanduser(name))
    except OSError:
        return f"file:{name}"
    return f"file:{info.st_size}:{info.st_mtime_ns}"


class StaticTextEncoder:
    """One text -> the unit mean of its words' static vectors (a distilled model: of its tokens',
    cut by the teacher's tokenizer): a table look-up, no forward pass. The ``static`` encoder kind;
    the same interface as :class:`TextEncoder`.

    ``name`` is what the index records to load it again (default the model's name; a model read
    from a file is named by its path)."""

    kind = STATIC
    layer = None

    def __init__(self, static: StaticModel | str, name: str | None = None):
        from contextlens.core.static_models import as_static  # gensim: once the arguments are checked

        if isinstance(static, str | os.PathLike) and name is None:
            name = os.fspath(static)
        self.static = as_static(static)
        self.name = name or self.static.name
        self.provenance = text_provenance(self.name, STATIC, None, self.static.dim)
        self.static_record = static_record(self.static, self.name)
        from contextlens.core.static_store import made_dir

        made = made_dir(self.name)
        self.model_source = str(made) if made is not None else self.name  # the manifest's ``model_source``

    def encode(self, texts: Sequence[str], batch_size: int = 32, show_progress_bar: bool = False) -> np.ndarray:
        """``(n, dim)`` float32 unit rows (a text with no known word is a zero row); ``batch_size`` and
        ``show_progress_bar`` are accepted for the encoders' common interface (a look-up needs neither)."""
        if not texts:
            raise InputError("no texts to encode; give at least one non-empty text")
        check_batch_size(batch_size)
        return np.ascontiguousarray(self.static.encode(list(texts)), dtype=np.float32)
