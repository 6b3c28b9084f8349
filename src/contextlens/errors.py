"""Typed exceptions for user mistakes.

Every error a user can cause derives from :class:`ContextlensError`. Its message is one line
that says what was wrong and how to fix it; the CLI prints it and exits with code 2. Anything
that is not a ``ContextlensError`` is a bug and keeps its traceback.
"""

from __future__ import annotations


class ContextlensError(Exception):
    """Base class of every user-facing error: one line, what was wrong and how to fix it."""


class InputError(ContextlensError, ValueError):
    """An argument is malformed or out of range (empty text, too few sentences, bad layer...)."""


class EmptyTextError(InputError):
    """A text holds nothing but whitespace."""


class MarkerError(InputError):
    """Marker syntax like ``"The river [bank] flooded."`` is unbalanced, repeated or empty."""


class TargetNotFoundError(InputError, LookupError):
    """The target word does not occur (as a whole word) in the text."""


class OutOfVocabularyError(ContextlensError, KeyError):
    """A static model without subword information has no vector for a word."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it one readable line
        return str(self.args[0]) if self.args else ""


class UnknownModelError(ContextlensError, LookupError):
    """A model name is neither registered, nor a local folder or file, nor reachable."""


class ModelNotInstalledError(ContextlensError):
    """A registered model's package is not installed here (the message says how to install it)."""


class WeightsMismatchError(ContextlensError):
    """A model's weights do not have the sha256 that the registry pins."""


class ProvenanceMismatchError(ContextlensError, TypeError):
    """Two vectors from different models or of different kinds were compared."""


class DataFileError(InputError):
    """A user data file is missing or malformed; the message names the file and the line."""


class StaticModelError(InputError):
    """A static vectors file is missing, a folder, empty or not in the format it claims."""


class ModelLoadError(ContextlensError):
    """A contextual model's files exist but cannot be loaded (a truncated or damaged weights file)."""


class OutputPathError(InputError):
    """An output path (``--plot``, ``--html``, ``--out``) cannot be written; checked before the work."""


class NoFigureError(ContextlensError, LookupError):
    """A result has no registered figure (a neighbours list, a search's hits): ask for its JSON."""


class ParameterError(InputError):
    """One argument is out of range. The message names the Python parameter (``nprobe``); each
    face says it in its own words (the CLI's ``--nprobe``) with :meth:`named`."""

    def __init__(self, parameter: str, problem: str) -> None:
        super().__init__(parameter, problem)
        self.parameter = parameter
        self.problem = problem

    def __str__(self) -> str:
        return self.named(self.parameter)

    def named(self, name: str) -> str:
        """The message with the parameter called ``name`` (a flag, a form field)."""
        return f"{name} {self.problem}"


class DeviceError(InputError):
    """A device this machine does not have (``--device cuda`` without a visible CUDA GPU, ``cuda:3``
    with two), or a precision the device cannot run: checked when the request is resolved, before
    any weights load."""
