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
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from contextlens.core.lean_tokenizer import FolderTokenizer
from contextlens.core.onnx_graphs import LeanTables, OnnxGraphs
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
    """What :class:`~contextlens.core.backbone.Backbone` asks of a forward pass, on ONNX Runtime."""

    def __init__(self, name: str, source: str, precision: str):
        self.config = read_config(source)
        self.tokenizer = FolderTokenizer(source)
        self.graphs = OnnxGraphs(name, source, precision, int(self.config.num_hidden_layers))
        self.tables = LeanTables(self.graphs.folder)

    def pad(self, sequences: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        return pad_arrays(sequences, int(self.tokenizer.pad_token_id))

    def run_layers(self, ids: Any, mask: Any, layers: Sequence[int], keep: Any = None) -> list[Any]:
        return self.graphs.run_layers(ids, mask, layers, keep or (lambda h: h))

    def input_rows(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        return self.tables.rows(ids)

    def position_rows(self, n: int) -> np.ndarray | None:
        return self.tables.position_rows(n)

    def weight_bytes(self) -> int:
        return self.graphs.weight_bytes()
