"""contextlens: see and measure how context reshapes meaning inside language models.

The public API, by the vocabulary of DESIGN.md::

    from contextlens import locate, load_contextual, load_static, compare
    occs = [locate("The [bank] called about my account."), locate("The river [bank] flooded.")]
    result = compare(occs, load_contextual("minilm"), load_static("glove-50d"))
    result.layer_cosines, result.static_cosine, result.most_divergent_layer
"""

from contextlens.analyses.lesson.divergence import Comparison, compare
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

__all__ = [
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
]
