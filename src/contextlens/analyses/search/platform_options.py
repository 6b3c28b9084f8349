"""What every managed platform's capacity is given as (:class:`PlatformCapacity`), and the checks of
the options :mod:`.platforms` takes: a count and a dimension, a real number in a range, a choice."""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Any

from contextlens.core.arguments import whole_number
from contextlens.errors import ParameterError

LABEL = "documented, not measured"


@dataclass
class PlatformCapacity:
    """What ``count`` vectors of ``dim`` dimensions take on a platform, and how many fit its budget."""

    platform: str
    count: int
    dim: int
    params: dict[str, Any]
    bytes_per_vector: float  # one copy, by the documented formula
    bytes: int  # all of them, every copy the platform keeps
    formula: str
    budget_bytes: int  # the memory or quota they must fit in
    budget_formula: str
    fits: int  # how many vectors of ``dim`` dimensions fit in the budget (and every other limit)
    fits_count: bool  # whether ``count`` does
    label: str = LABEL
    sources: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fixed_bytes: int = 0  # one copy's bytes that do not grow with the count (IVF centroids, PQ code books)
    limits: list[dict[str, Any]] = field(default_factory=list)  # every documented limit: how many fit each

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def checked_size(count: int, dim: int) -> tuple[int, int]:
    return whole_number(count, "count", minimum=1, floats=True), whole_number(dim, "dim", minimum=1)


def real_option(
    value: Any, name: str, low: int | Fraction, high: int | Fraction, *, low_open: bool = False,
    high_open: bool = False, unit: str = "", why: str = "",
) -> Fraction:  # fmt: skip
    """The one range check of every real-valued platform option: ``value`` (an int or a float, numpy's
    too; never a bool, nan or inf) as an exact Fraction from ``low`` to ``high`` (``low_open`` /
    ``high_open``: that end excluded), or a ParameterError naming the range (its ``unit``, and
    ``why``: where a bound comes from)."""

    def inside(x: Fraction | None) -> bool:
        return x is not None and (x > low if low_open else x >= low) and (x < high if high_open else x <= high)

    number = None
    if not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(float(value)):
        number = Fraction(value if isinstance(value, int | Fraction) else float(value))
        short = number.limit_denominator(10**9)  # 0.1 as 1/10, unless that crosses a bound
        number = short if inside(short) else number
    if not inside(number):
        if low_open or high_open:
            bounds = (f"{'above' if low_open else 'at least'} {_shown(low)}{unit} and "
                      f"{'below' if high_open else 'at most'} {_shown(high)}{unit}")  # fmt: skip
        else:
            bounds = f"from {_shown(low)} to {_shown(high)}{unit}"
        raise ParameterError(name, f"must be a number {bounds}{why}, got {value!r}")
    return number


def _shown(x: int | Fraction) -> str:
    return f"{int(x):,}" if isinstance(x, int) or x.denominator == 1 else f"{float(x):g}"


def choice_option(value: Any, name: str, choices: tuple[str, ...] | list[str] | dict[str, Any]) -> str:
    """``value`` as one of ``choices`` (lower case), or a ParameterError naming them."""
    text = str(value).lower()
    if text not in choices:
        raise ParameterError(name, f"must be one of {', '.join(choices)}, got {value!r}")
    return text
