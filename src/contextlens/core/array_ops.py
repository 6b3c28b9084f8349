"""The few array operations the verbs run on a forward pass's states, for torch tensors and for
numpy arrays.

Why: a layer's states are reduced as they go by (the target rows, a text's pooled vector), inside
the forward, so a batch never holds whole layers. On the torch runtime they are torch tensors, and
the reductions stay torch's own (the numbers are plain transformers', bit for bit); on ONNX
Runtime they are numpy arrays, and the lean path must not import torch at all. The verbs
(:mod:`~contextlens.core.extraction`, :mod:`~contextlens.core.text_pooling`) call the backbone's
``arrays`` and never name either library. torch is imported only by :class:`TorchOps`' methods.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class NumpyOps:
    """The operations on numpy arrays (ONNX Runtime's states)."""

    def index(self, positions: Sequence[int]) -> np.ndarray:
        return np.asarray(positions, dtype=np.int64)

    def empty(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.empty(shape, dtype=np.float32)

    def rows_into(self, slots: list[Any], flat: Any) -> Callable[[Any], Any]:
        """Keep only rows ``flat`` of the flattened ``(batch * seq, d)`` state, written into the
        next of ``slots`` (one per requested layer, lowest first)."""
        it = iter(slots)
        return lambda h: np.take(h.reshape(-1, h.shape[-1]), flat, axis=0, out=next(it))

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.asarray(x, dtype=np.float32)

    def stack_first(self, states: Sequence[Any]) -> np.ndarray:
        """``(layers, seq, d)`` of the first (only) text of a batch, a copy."""
        return np.stack([np.asarray(s)[0] for s in states]).astype(np.float32, copy=True)

    def stack(self, states: Sequence[Any]) -> np.ndarray:
        return np.stack([np.asarray(s) for s in states])

    def select(self, stacked: Any, row: int, keep: list[int]) -> np.ndarray:
        """``stacked[:, row, keep, :]`` as float32, a copy."""
        return np.asarray(stacked)[:, row, keep, :].astype(np.float32, copy=True)

    def pooler(self, mask: Any, mode: str) -> Callable[[Any], Any]:
        """One layer's states of a batch pooled by ``mode`` over the tokens ``mask`` keeps."""
        m = np.asarray(mask, dtype=np.float32)[..., None]

        def pool(states: Any) -> np.ndarray:
            states = np.asarray(states, dtype=np.float32)
            if mode == "mean":
                return (states * m).sum(1) / np.maximum(m.sum(1), 1.0)
            if mode == "cls":
                return states[:, 0].copy()
            return np.where(m == 0, np.float32(-1e9), states).max(1)

        return pool

    def normalize(self, pooled: Any) -> np.ndarray:
        norms = np.linalg.norm(pooled, axis=-1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)

    def mean_rows(self, rows: np.ndarray) -> np.ndarray:
        return rows.mean(0, dtype=np.float32)


class TorchOps:
    """The same on torch tensors (the torch runtime): torch's own kernels, as before this split.

    On a GPU, or at fp16/bf16, the states live on ``device`` in ``dtype``: indices and buffers are
    made there, masks moved there, and only numpy copies come back to the host (as float32). The
    CPU fp32 instance, :data:`TORCH`, runs exactly the calls it ran before devices existed."""

    def __init__(self, device: str = "cpu", dtype: str = "float32"):
        self.device, self.dtype = device, dtype

    def _dtype(self) -> Any:
        import torch

        return getattr(torch, self.dtype)

    def index(self, positions: Sequence[int]) -> Any:
        import torch

        return torch.tensor(list(positions), dtype=torch.long, device=self.device)

    def empty(self, shape: tuple[int, ...]) -> Any:
        """A buffer the hooks write the states' rows into: in the states' own dtype and device."""
        import torch

        return torch.empty(shape, dtype=self._dtype(), device=self.device)

    def rows_into(self, slots: list[Any], flat: Any) -> Callable[[Any], Any]:
        """``index_select`` on the flat view, not ``h[rows, positions]``: the same rows at a third
        of the cost."""
        import torch

        it = iter(slots)
        return lambda h: torch.index_select(h.reshape(-1, h.shape[-1]), 0, flat, out=next(it))

    def to_numpy(self, x: Any) -> np.ndarray:
        return x.float().cpu().numpy()

    def stack_first(self, states: Sequence[Any]) -> np.ndarray:
        import torch

        return torch.stack(list(states))[:, 0].float().cpu().numpy().copy()

    def stack(self, states: Sequence[Any]) -> Any:
        import torch

        return torch.stack(list(states))

    def select(self, stacked: Any, row: int, keep: list[int]) -> np.ndarray:
        return stacked[:, row, keep, :].float().cpu().numpy().copy()

    def pooler(self, mask: Any, mode: str) -> Callable[[Any], Any]:
        m = mask.to(self.device).unsqueeze(-1).float()

        def pool(states: Any) -> Any:
            states = states.float()
            if mode == "mean":
                return (states * m).sum(1) / m.sum(1).clamp(min=1)
            if mode == "cls":
                return states[:, 0].clone()
            return states.masked_fill(m == 0, -1e9).max(1).values

        return pool

    def normalize(self, pooled: Any) -> np.ndarray:
        import torch

        return torch.nn.functional.normalize(pooled, dim=-1)

    def mean_rows(self, rows: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            return torch.from_numpy(rows).mean(0).float().numpy()


NUMPY = NumpyOps()
TORCH = TorchOps()
