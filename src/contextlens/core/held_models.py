"""A loaded model is loaded once while anything holds it.

The load caches (``lru_cache``) keep only the latest few models, to bound a server's memory. A
model one of them dropped may still be held (a caller's variable, a server's session): loading it
again would cost a second copy of its memory, and the two copies' answers could differ in the last
bits (each keeps its own occurrence cache, filled in other batches). So under each cache a weak
map hands such a model out again; it goes when its last holder lets it go.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Model = TypeVar("Model")


class ReusedWhileHeld(Generic[Model]):
    """``load(*key)``, answered with the instance loaded for ``key`` while anything still holds it."""

    def __init__(self, load: Callable[..., Model]) -> None:
        functools.update_wrapper(self, load)
        self.load = load
        self.live: weakref.WeakValueDictionary[tuple[Hashable, ...], Model] = weakref.WeakValueDictionary()

    def __call__(self, *key: Hashable) -> Model:
        model = self.live.get(key)
        if model is None:
            model = self.live[key] = self.load(*key)
        return model

    def forget(self, drop: Callable[[tuple[Hashable, ...], Model], bool]) -> None:
        """The next load of each key ``drop(key, model)`` picks is read anew (the model there changed)."""
        for key, model in list(self.live.items()):
            if drop(key, model):
                del self.live[key]
