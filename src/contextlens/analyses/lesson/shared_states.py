"""One forward pass per set of sentences in a run that reads them several times.

The lesson (``contextlens demo``, the report) runs several analyses over the same built-in
sentences: the input-row share and layer-by-layer CKA both read every token of the same 60
sentences at every layer. Run apart, each ran its own forward pass; this per-run cache of
:class:`~contextlens.core.extraction.TokenStates` runs it once and hands the same states to
both. The key is the model's identity (its weights, precision and runtime: an int8 or ONNX run
never reads fp32 states), the texts, the layers and the batch size (the batches decide the
padding, so a shared result is the unshared one bit for bit: tests/test_shared_states.py).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel
    from contextlens.core.extraction import TokenStates

Key = tuple[str, tuple[str, ...], tuple[int, ...], int]


class SharedStates:
    """Token states computed once per (model identity, texts, layers, batch size) for one run;
    ``forwards`` counts the token-state runs it made (one per distinct key). Safe across threads."""

    def __init__(self) -> None:
        self._entries: dict[Key, list[TokenStates]] = {}
        self._lock = threading.Lock()
        self.forwards = 0

    def token_states(
        self,
        model: ContextualModel,
        texts: Sequence[str],
        layers: Sequence[int] | None = None,
        batch_size: int = 32,
        show_progress_bar: bool = False,
    ) -> list[TokenStates]:
        """:meth:`ContextualModel.token_states`, run at most once per key in this run."""
        key = (model.identity, tuple(texts), model.check_layers(layers), batch_size)
        with self._lock:  # one forward per key even when two threads ask at once
            hit = self._entries.get(key)
            if hit is None:
                hit = model.token_states(list(texts), key[2], batch_size, show_progress_bar)
                self._entries[key] = hit
                self.forwards += 1
            return hit
