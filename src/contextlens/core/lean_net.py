"""The lean forward pass: a model's checked ONNX graph run with tokenizers, onnxruntime and numpy
alone, no torch and no transformers in the process.

Why: importing torch and transformers and loading the torch model costs 5-7 s on this project's
reference machine, for a forward pass of milliseconds. Once a model's graph has been exported and
checked against torch (:mod:`contextlens.core.onnx_runtime`, once per machine), its states are
the torch states within the export check (1e-4; 1.1e-5 measured on minilm), so a command that
needs no attention weights can start in a fraction of a second. The pieces the torch model gave
(the input rows, the position table, the config's facts) are read from files beside the graph
(:class:`~contextlens.core.onnx_graphs.LeanTables`) and from the model folder's ``config.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from contextlens.core.array_ops import NUMPY
from contextlens.core.choices import torch_only
from contextlens.core.lean_tokenizer import FolderTokenizer
from contextlens.core.onnx_graphs import EXPORT_RULE, ORT_QUANT_RULE, LeanTables, OnnxGraphs, attention_ready
from contextlens.core.padding import pad_arrays
from contextlens.errors import ModelLoadError


class ModelConfig(SimpleNamespace):
    """A model folder's ``config.json`` as attributes (what the facts read); a missing key is None."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def read_config(folder: str | Path) -> ModelConfig:
    path = Path(folder) / "config.json"
    try:
        return ModelConfig(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, ValueError, TypeError) as exc:
        raise ModelLoadError(f"cannot read {path} ({exc}); copy the model again") from exc


class LeanNet:
    """What :class:`~contextlens.core.backbone.Backbone` asks of a forward pass, on ONNX Runtime:
    numpy arrays; attention weights only from a checked fp32 attention graph; what only torch
    gives (full outputs, the torch network) refused or loaded through the backbone."""

    arrays = NUMPY
    runtime = "onnx"
    eager_attention = False  # no torch here: attention weights only from the checked attention graph

    def __init__(self, name: str, source: str, precision: str, device: str = "cpu"):
        self.name, self.source, self.precision, self.device = name, source, precision, device
        self.config = read_config(source)
        self.tokenizer = FolderTokenizer(source)
        self.graphs = OnnxGraphs(name, source, precision, int(self.config.num_hidden_layers), device)
        self.tables = LeanTables(self.graphs.folder)

    def pad(self, sequences: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        return pad_arrays(sequences, int(self.tokenizer.pad_token_id))

    def run_layers(self, ids: Any, mask: Any, layers: Sequence[int], keep: Any = None) -> list[Any]:
        return self.graphs.run_layers(ids, mask, layers, keep or (lambda h: h))

    @property
    def identity(self) -> str:
        """What disk caches key these results by: the source, the runtime, the precision and its
        export rule (ONNX Runtime's fp32 is within 1e-4 of torch's, not equal to it), and the
        device when not the CPU (the CUDA provider's kernels are not the CPU's)."""
        rule = EXPORT_RULE if self.precision == "fp32" else f"{EXPORT_RULE}+{ORT_QUANT_RULE}"
        where = "" if self.device == "cpu" else f"@{self.device}"
        return f"{self.source}#onnx-{self.precision}:{rule}{where}"

    def shared_identity(self, export_checked: bool) -> str:
        """fp32 on the CPU whose export check passed reads (and writes) torch fp32's calibrations,
        keyed by the weights alone; int8 and a GPU keep their own (their numbers differ more)."""
        if export_checked and self.precision == "fp32" and self.device == "cpu":
            return str(self.source)
        return self.identity

    @property
    def lean_attention(self) -> bool:
        """Whether attention weights come from this model's checked attention graph (fp32 only,
        the graph within 1e-5 of torch's eager attention)."""
        return self.precision == "fp32" and attention_ready(self.name, str(self.source))

    def run_with_attentions(self, ids: Any, mask: Any, top: int) -> tuple[list[Any], list[Any]]:
        if not self.lean_attention:
            raise torch_only("attention weights", self.runtime)
        return self.graphs.run_with_attentions(ids, mask, top)

    def torch_net(self, reference: Callable[[], Any]) -> Any:
        """The torch network to compare with or read weights from: ``reference()``, loaded by the
        backbone (this process may have no torch)."""
        return reference()

    def onnx_graphs(self, export: Callable[[], Any]) -> OnnxGraphs:
        return self.graphs

    def require_torch(self, what: str) -> None:
        raise torch_only(what, self.runtime)

    def run(self, ids: Any, mask: Any, hidden_states: bool, attentions: bool = False) -> Any:
        raise torch_only("the model's full outputs", self.runtime)

    def attention_net(self) -> Any:
        raise torch_only("attention weights", self.runtime)

    def input_rows(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        return self.tables.rows(ids)

    def position_rows(self, n: int) -> np.ndarray | None:
        return self.tables.position_rows(n)

    def weight_bytes(self) -> int:
        return self.graphs.weight_bytes()
