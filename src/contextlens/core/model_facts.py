"""A contextual model's facts (layers, width, heads, kind, window) read from its config files.

Knowing how many layers a model has should not cost its weights: a ``--layer 99`` is refused
from ``config.json`` in milliseconds, before torch is even imported. This module reads the
resolved model folder's ``config.json`` (and ``tokenizer_config.json`` for the window) as plain
JSON; it imports neither torch nor transformers. A hub id that is not on disk has no facts here
(``None``): the checks that need them wait for the loaded model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from contextlens.core.choices import check_precision, check_runtime_choice
from contextlens.core.resources import resolve_contextual
from contextlens.errors import InputError, ModelLoadError, UnknownModelError

DECODER_TYPES = frozenset({"llama", "gpt2", "mistral", "qwen2", "gemma", "phi", "gpt_neox", "smollm3"})
NO_TOKENIZER_LIMIT = 100_000  # transformers' "no limit" is a huge integer; anything above this is one
# the weights files transformers' from_pretrained looks for in a model folder, in its order
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


@dataclass(frozen=True)
class ModelFacts:
    """What a model's config says about it: enough to check a request before any weights load."""

    name: str  # the display name (registry name or folder), as the loaded model reports it
    num_layers: int  # transformer blocks L; hidden states run 0..L, attention layers 1..L
    hidden_size: int
    num_heads: int
    model_type: str
    is_decoder: bool  # decoders see left context only
    max_length: int | None  # most tokens one forward accepts, when the config files say

    def check_layer(self, layer: int) -> int:
        """A hidden-state layer 0..L (negative counts from the top) as a non-negative index."""
        (real,) = checked_layers([layer], self.num_layers, self.name)
        return real

    def check_layers(self, layers: Sequence[int] | None) -> tuple[int, ...]:
        """As the loaded model's ``check_layers``: None is every layer 0..L."""
        return checked_layers(layers, self.num_layers, self.name)

    def check_attention(self, layer: int, head: int | None = None) -> None:
        """Attention layers are blocks 1..L (negative counts from the top, as for hidden states) and
        heads 0..H-1 (the same words as the analysis says)."""
        attention_layer(layer, self.num_layers, self.name)
        if head is not None and not 0 <= head < self.num_heads:
            raise InputError(f"head {head} is out of range for {self.name}: it has heads 0..{self.num_heads - 1}")


def checked_layers(layers: Sequence[int] | None, num_layers: int, name: str) -> tuple[int, ...]:
    """Hidden-state layers 0..L, negative counting from the top, sorted and once each; None is all
    of them. One rule for a loaded model and for its config's facts (a Ray job's driver)."""
    if layers is None:
        return tuple(range(num_layers + 1))
    out = []
    for layer in layers:
        real = num_layers + 1 + layer if layer < 0 else layer
        if not 0 <= real <= num_layers:
            raise InputError(f"layer {layer} is out of range for {name}: it has layers 0..{num_layers}")
        out.append(real)
    if not out:
        raise InputError("no layers requested; give at least one layer")
    return tuple(sorted(set(out)))


def attention_layer(layer: int, num_layers: int, name: str) -> int:
    """The attention block 1..L that ``layer`` names: itself, or counted from the top when negative
    (-1 = L, the last block, as ``--layer -1`` means the last hidden state elsewhere)."""
    real = num_layers + 1 + layer if layer < 0 else layer
    if not 1 <= real <= num_layers:
        raise InputError(
            f"attention layer {layer} is out of range for {name}: it has attention layers 1..{num_layers} "
            f"(or -1..-{num_layers} from the top)"
        )
    return real


def model_facts(name_or_path: str) -> ModelFacts | None:
    """The facts of a registered name, local folder or hub id; ``None`` when its config is not on
    disk (a hub id not downloaded yet) or does not name the model's size. Raises the resolver's
    typed errors for an unknown name, a model that is not installed or a folder without
    ``config.json``."""
    name, source, _revision = resolve_contextual(name_or_path)
    folder = Path(source)
    if not (folder / "config.json").is_file():
        return None
    return _read_facts(name, str(folder.resolve()))


def load_failure(name: str, source: str, reason: str) -> UnknownModelError:
    """The one line for a model that did not load (``reason``: transformers' first line)."""
    return UnknownModelError(
        f"could not load model {name!r} from {source} ({reason}); "
        "check the name or folder, or install a shipped model (`contextlens models`)"
    )


def check_weights(name_or_path: str) -> None:
    """Refuse a model folder that holds no weights file with the line loading it gives
    (:func:`load_failure` of transformers' own reason), without loading it: a Ray job's driver
    reads only the facts, and each actor would import torch and transformers to find it out."""
    name, source, _revision = resolve_contextual(name_or_path)
    folder = Path(source)
    if not (folder / "config.json").is_file() or any((folder / f).is_file() for f in WEIGHT_FILES):
        return
    if _read_json(folder / "config.json").get("transformers_weights") is not None:
        return  # the config names its own weights file: loading it decides
    reason = f"Error no file named {WEIGHT_FILES[0]}, or {WEIGHT_FILES[2]}, found in directory {source}."
    raise load_failure(name, source, reason)


def check_request(
    name: str,
    precision: str = "fp32",
    runtime: str = "torch",
    layers: Iterable[int] = (),
    attention: tuple[int, int | None] | None = None,
) -> ModelFacts | None:
    """Everything about a model request that holds without its weights, checked once, before
    they load (no torch import): the precision, the runtime asked for (``auto`` too), the name or
    folder, and the hidden-state ``layers`` and the ``attention`` (layer, head) against the
    model's config.json. The facts, or None for a hub id not on disk."""
    check_precision(precision)
    check_runtime_choice(runtime)
    facts = model_facts(name)
    if facts is not None:
        for layer in layers:
            facts.check_layer(layer)
        if attention is not None:
            facts.check_attention(*attention)
    return facts


@lru_cache(maxsize=16)
def _read_facts(name: str, folder: str) -> ModelFacts | None:
    config = _read_json(Path(folder) / "config.json")
    tokenizer_path = Path(folder) / "tokenizer_config.json"
    tokenizer = _read_json(tokenizer_path) if tokenizer_path.is_file() else {}
    try:
        num_layers = int(_first(config, "num_hidden_layers", "n_layer", "num_layers"))
        hidden_size = int(_first(config, "hidden_size", "n_embd", "d_model"))
        num_heads = int(_first(config, "num_attention_heads", "n_head", "num_heads"))
    except (KeyError, TypeError, ValueError):
        return None  # an architecture that names its size otherwise: the loaded model will say
    model_type = str(config.get("model_type", ""))
    decoder = is_decoder_config(model_type, config.get("is_decoder", False), config.get("is_encoder_decoder", False))
    limit = window(tokenizer.get("model_max_length"), config.get("max_position_embeddings"))
    return ModelFacts(name, num_layers, hidden_size, num_heads, model_type, decoder, limit)


def is_decoder_config(model_type: str, is_decoder: Any, is_encoder_decoder: Any) -> bool:
    """Whether a config describes a decoder (left context only): the one rule, for config files
    read here and for loaded configs alike."""
    return not is_encoder_decoder and bool(is_decoder or model_type in DECODER_TYPES)


def window(tokenizer_limit: Any, positions: Any) -> int | None:
    """Most tokens one forward pass reads: the tokenizer's limit when it has one, else the
    position table's size; None when neither says."""
    if isinstance(tokenizer_limit, int | float) and tokenizer_limit < NO_TOKENIZER_LIMIT:
        return int(tokenizer_limit)
    return int(positions) if isinstance(positions, int) and positions > 0 else None


def loaded_window(tokenizer: Any, config: Any) -> int:
    """:func:`window` of a loaded tokenizer and config (512 when neither says): what a backbone
    and the torch net it may hold both report as ``max_length``."""
    return window(tokenizer.model_max_length, getattr(config, "max_position_embeddings", None)) or 512


OFFSET_POSITIONS = frozenset({"mpnet", "roberta", "xlm-roberta"})  # position ids start after the padding index


def position_offset(model_type: Any, pad_token_id: Any) -> int:
    """The first position row a text uses: ``pad + 1`` for mpnet and RoBERTa-style models (their
    position ids count from after the padding index), 0 for BERT-style ones. The one place this
    fact lives: torch's position rows and the lean path's table both read it."""
    return int(pad_token_id) + 1 if model_type in OFFSET_POSITIONS else 0


def loaded_is_decoder(config: Any) -> bool:
    """:func:`is_decoder_config` of a loaded config (attributes, not a config file's keys)."""
    return is_decoder_config(
        config.model_type, getattr(config, "is_decoder", False), getattr(config, "is_encoder_decoder", False)
    )


def _first(config: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    raise KeyError(" / ".join(keys))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ModelLoadError(f"cannot read {path} ({exc}); copy or download the model again") from exc
    if not isinstance(data, dict):
        raise ModelLoadError(f"{path} is not a JSON object; copy or download the model again")
    return data
