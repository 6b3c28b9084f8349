"""Checks of plain number arguments, shared by every public entry point.

A count, a limit or a search knob must be a whole number in range; ``nan``, ``inf``, ``2.5``,
``True`` or a string are refused, not rounded or clamped. The error names the Python parameter
(a :class:`~contextlens.errors.ParameterError`); the faces map it to their flag or field.
"""

from __future__ import annotations

import math
import numbers

from contextlens.errors import ParameterError


def whole_number(value: object, parameter: str, minimum: int = 1, what: str = "", maximum: int | None = None) -> int:
    """``value`` as an ``int`` when it is a whole number from ``minimum`` to ``maximum`` (a float
    such as ``1e6`` counts); otherwise a ParameterError naming ``parameter``. ``what`` names the
    unit in the message ("documents")."""
    unit = f" of {what}" if what else ""
    bounds = f"at least {minimum}" if maximum is None else f"from {minimum} to {maximum}"
    wanted = f"must be a whole number{unit}, {bounds}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(parameter, f"{wanted}, got {value!r}")
    if not math.isfinite(value) or value != int(value):
        raise ParameterError(parameter, f"{wanted}, got {value!r}")
    if int(value) < minimum or (maximum is not None and int(value) > maximum):
        raise ParameterError(parameter, f"{wanted}, got {int(value)}")
    return int(value)
