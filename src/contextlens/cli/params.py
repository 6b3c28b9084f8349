"""Parameter names -> command-line flags in error messages.

The analyses name the Python parameter a user got wrong, in backticks (```min_contexts` 1: give at
least 2``), because a Python or web user never typed a flag. A command says which flag each of
its parameters is, and the message the user reads names the flag (``--min-contexts 1: ...``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from contextlens.errors import ContextlensError, ParameterError


def flag_message(message: str, flags: dict[str, str]) -> str:
    for param, flag in flags.items():
        message = message.replace(f"`{param}`", flag)
    return message


@contextmanager
def as_flags(**flags: str) -> Iterator[None]:
    """Re-raise a user error from the block with its parameter names written as ``flags``."""
    try:
        yield
    except ParameterError as exc:  # its message is made of its parameter and its problem, not of args
        exc.parameter = flags.get(exc.parameter, exc.parameter)
        exc.problem = flag_message(exc.problem, flags)
        raise
    except ContextlensError as exc:
        if exc.args and isinstance(exc.args[0], str):
            exc.args = (flag_message(exc.args[0], flags), *exc.args[1:])
        raise
