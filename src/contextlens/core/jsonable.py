"""Plain JSON types for every result's ``to_dict()``, so that any face can dump it as it is.

Numpy scalars and arrays become Python numbers and lists, NaN and infinities become null
(strict JSON), tuples become lists and paths strings.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def jsonable(obj: Any) -> Any:
    """``obj`` with numpy values, non-finite floats, tuples and paths made plain JSON."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "biu" or (obj.dtype.kind == "f" and np.isfinite(obj).all()):
            return obj.tolist()  # Python bools, ints and finite floats already: no walk over each value
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def plain_json(to_dict: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a ``to_dict`` method so that what it returns is plain JSON (see :func:`jsonable`)."""

    @functools.wraps(to_dict)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return jsonable(to_dict(*args, **kwargs))

    return wrapper
