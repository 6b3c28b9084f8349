"""Text pooling: one vector per text.

* :func:`sentence_embeddings` - with the model's own sentence-transformers pooling config
  (:func:`sentence_config`: mean, cls or max, normalized or not, its max length);
* :func:`pool_texts` - mean, cls or max of the hidden states at one or several layers;
* :func:`mean_input_rows` - the mean of a text's input rows, no forward pass (a baseline).

Pooling runs over every token the attention mask keeps (specials included), as
sentence-transformers does; texts are cut at the end at the maximum length. (Targets inside a
text are the business of :mod:`contextlens.core.extraction`, which windows instead.)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from contextlens.core.backbone import Backbone
from contextlens.errors import InputError

TextPooling = Literal["mean", "cls", "max"]


@dataclass(frozen=True)
class SentenceConfig:
    mode: str
    normalize: bool
    max_seq_length: int


def sentence_config(source: str) -> SentenceConfig | None:
    """Read a sentence-transformers folder's pooling, normalization and max length."""
    folder = Path(source)
    modules_file = folder / "modules.json"
    if not modules_file.exists():
        return None
    modules = json.loads(modules_file.read_text())
    normalize = any(m.get("type", "").endswith("Normalize") for m in modules)
    pooling = next((m for m in modules if m.get("type", "").endswith("Pooling")), None)
    if pooling is None:
        return None
    cfg = json.loads((folder / pooling["path"] / "config.json").read_text())
    if cfg.get("pooling_mode_mean_tokens"):
        mode = "mean"
    elif cfg.get("pooling_mode_cls_token"):
        mode = "cls"
    elif cfg.get("pooling_mode_max_tokens"):
        mode = "max"
    else:
        return None
    st_file = folder / "sentence_bert_config.json"
    max_len = json.loads(st_file.read_text()).get("max_seq_length", 512) if st_file.exists() else 512
    return SentenceConfig(mode, normalize, int(max_len))


def sentence_embeddings(
    model: Backbone, texts: Sequence[str], batch_size: int = 32, show_progress_bar: bool = False
) -> np.ndarray:
    """``(n, d)`` sentence embeddings with the model's own sentence-transformers pooling config."""
    cfg = sentence_config(model.source)
    if cfg is None:
        raise InputError(
            f"{model.name} has no sentence-transformers pooling config, so it is not a "
            "sentence-embedding model; use mean-pooled hidden states instead"
        )
    return pool_texts(
        model,
        texts,
        layers=(model.num_layers,),
        mode=cfg.mode,
        normalize=cfg.normalize,
        max_length=min(cfg.max_seq_length, model.max_length),
        batch_size=batch_size,
        show_progress_bar=show_progress_bar,
    )[0]


def pool_texts(
    model: Backbone,
    texts: Sequence[str],
    layers: tuple[int, ...],
    mode: str = "mean",
    normalize: bool = False,
    max_length: int | None = None,
    batch_size: int = 32,
    show_progress_bar: bool = False,
) -> np.ndarray:
    """``(len(layers), n, d)``: each text's hidden states at each layer pooled by ``mode``."""
    if mode not in ("mean", "cls", "max"):
        raise InputError(f"unknown text pooling {mode!r}; use mean, cls or max")
    for n, t in enumerate(texts):
        if not isinstance(t, str) or not t.strip():
            raise InputError(f"text {n} is empty; every text must contain something to embed")
    limit = max_length or model.max_length
    out = np.zeros((len(layers), len(texts), model.hidden_size), dtype=np.float32)
    encoded = model.tokenizer(list(texts), truncation=True, max_length=limit, verbose=False)["input_ids"]
    items = list(enumerate(encoded))
    ops = model.arrays  # torch tensors on the torch runtime, numpy arrays on ONNX Runtime
    for batch in model.batches(items, batch_size, show_progress_bar, "texts"):
        input_ids, mask = model.pad([ids for _, ids in batch])
        pool = ops.pooler(mask, mode)  # each layer pooled as it goes by: a batch never holds whole layers
        rows = [i for i, _ in batch]
        for k, pooled in enumerate(model.run_layers(input_ids, mask, layers, keep=pool)):
            if normalize:
                pooled = ops.normalize(pooled)
            out[k, rows] = ops.to_numpy(pooled)
    return out


def mean_input_rows(model: Backbone, texts: Sequence[str]) -> np.ndarray:
    """``(n, d)``: mean of the input rows of each text's tokens (specials excluded): the seed's
    "design mistake" kept as a retrieval baseline. No forward pass is needed."""
    out = np.zeros((len(texts), model.hidden_size), dtype=np.float32)
    for i, text in enumerate(texts):
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"text {i} is empty; every text must contain something to embed")
        ids = model.tokenizer(
            text, add_special_tokens=False, truncation=True, max_length=model.max_length, verbose=False
        )["input_ids"]
        if not ids:
            raise InputError(f"text {i} has no tokens for {model.name}")
        out[i] = model.arrays.mean_rows(model.input_rows(ids))
    return out
