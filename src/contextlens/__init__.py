"""contextlens: see and measure how context reshapes meaning inside language models.

The public API, by the vocabulary of DESIGN.md::

    from contextlens import locate, load_contextual, load_static, compare
    occs = [locate("The [bank] called about my account."), locate("The river [bank] flooded.")]
    result = compare(occs, load_contextual("minilm"), load_static("glove-50d"))
    result.layer_cosines, result.static_cosine, result.most_divergent_layer

Each name is imported on first use (PEP 562), so ``import contextlens`` and the command line's
``--help`` never pay for torch or gensim; type checkers read the imports below ``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextlens.analyses.lesson.divergence import Comparison, compare
    from contextlens.analyses.lesson.same_sense import same_sense
    from contextlens.core.alignment import TokenizedOccurrence
    from contextlens.core.contextual_models import ContextualModel, load_contextual
    from contextlens.core.extraction import ForwardPass, OccurrenceEncoding, TokenStates
    from contextlens.core.occurrences import Occurrence, find_word, locate, parse_marked
    from contextlens.core.similarity import cosine, cosine_matrix
    from contextlens.core.static_models import StaticModel, load_static
    from contextlens.core.vectors import Provenance, Vector
    from contextlens.errors import (
        ContextlensError,
        EmptyTextError,
        InputError,
        MarkerError,
        ModelLoadError,
        ModelNotInstalledError,
        OutOfVocabularyError,
        ProvenanceMismatchError,
        StaticModelError,
        TargetNotFoundError,
        UnknownModelError,
        WeightsMismatchError,
    )
    from contextlens.version import __version__

_ERRORS = "contextlens.errors"
# public name -> the module that defines it (the TYPE_CHECKING block above says the same)
_HOMES: dict[str, str] = {
    "__version__": "contextlens.version",
    "Comparison": "contextlens.analyses.lesson.divergence",
    "compare": "contextlens.analyses.lesson.divergence",
    "same_sense": "contextlens.analyses.lesson.same_sense",
    "TokenizedOccurrence": "contextlens.core.alignment",
    "ContextualModel": "contextlens.core.contextual_models",
    "load_contextual": "contextlens.core.contextual_models",
    "ForwardPass": "contextlens.core.extraction",
    "OccurrenceEncoding": "contextlens.core.extraction",
    "TokenStates": "contextlens.core.extraction",
    "Occurrence": "contextlens.core.occurrences",
    "find_word": "contextlens.core.occurrences",
    "locate": "contextlens.core.occurrences",
    "parse_marked": "contextlens.core.occurrences",
    "cosine": "contextlens.core.similarity",
    "cosine_matrix": "contextlens.core.similarity",
    "StaticModel": "contextlens.core.static_models",
    "load_static": "contextlens.core.static_models",
    "Provenance": "contextlens.core.vectors",
    "Vector": "contextlens.core.vectors",
    "ContextlensError": _ERRORS,
    "EmptyTextError": _ERRORS,
    "InputError": _ERRORS,
    "MarkerError": _ERRORS,
    "ModelLoadError": _ERRORS,
    "ModelNotInstalledError": _ERRORS,
    "OutOfVocabularyError": _ERRORS,
    "ProvenanceMismatchError": _ERRORS,
    "StaticModelError": _ERRORS,
    "TargetNotFoundError": _ERRORS,
    "UnknownModelError": _ERRORS,
    "WeightsMismatchError": _ERRORS,
}

__all__ = [  # literal, for type checkers and linters; the same names as _HOMES
    "__version__",
    "Comparison",
    "ContextlensError",
    "ContextualModel",
    "EmptyTextError",
    "ForwardPass",
    "InputError",
    "MarkerError",
    "ModelLoadError",
    "ModelNotInstalledError",
    "Occurrence",
    "OccurrenceEncoding",
    "OutOfVocabularyError",
    "Provenance",
    "ProvenanceMismatchError",
    "StaticModel",
    "StaticModelError",
    "TargetNotFoundError",
    "TokenStates",
    "TokenizedOccurrence",
    "UnknownModelError",
    "Vector",
    "WeightsMismatchError",
    "compare",
    "cosine",
    "cosine_matrix",
    "find_word",
    "load_contextual",
    "load_static",
    "locate",
    "parse_marked",
    "same_sense",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use and keep the name here for the next one."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'contextlens' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
