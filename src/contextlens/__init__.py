"""contextlens: see and measure how context reshapes meaning inside language models.

The public API, by the vocabulary of DESIGN.md::

    from contextlens import locate, load_contextual, load_static, compare
    occs = [locate("The [bank] called about my account."), locate("The river [bank] flooded.")]
    result = compare(occs, load_contextual("minilm"), load_static("glove-50d"))
    result.layer_cosines, result.static_cosine, result.most_divergent_layer

Every analysis behind a command is here too, by its module's name for it (``explore``, ``attend``,
``trace``, ``probe``, ``rank_pairs``, ``run_wic``, ``induce_senses``, ``sense_map``, ``estimate`` ...).

Each name is imported on first use (PEP 562), so ``import contextlens`` and the command line's
``--help`` never pay for torch or gensim; type checkers read the imports below ``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from contextlens.core.threads import sleep_when_idle

sleep_when_idle()  # before torch loads (the policy is read once): see contextlens.core.threads

if TYPE_CHECKING:
    from contextlens.analyses.benchmarks.layer_probes import run_layer_probes
    from contextlens.analyses.benchmarks.retrieval import evaluate_lee, evaluate_wordnet
    from contextlens.analyses.benchmarks.suite import run_contextuality, run_similarity, run_wic, run_wsd
    from contextlens.analyses.benchmarks.wsi import run_wsi
    from contextlens.analyses.corpus.contextuality import contextuality_of_corpus
    from contextlens.analyses.corpus.extract import extract_corpus
    from contextlens.analyses.corpus.occurrence_search import search_occurrences
    from contextlens.analyses.corpus.open_folder import ExtractionFolder, open_folder
    from contextlens.analyses.corpus.projector import export_projector
    from contextlens.analyses.corpus.sense_map import SenseMap, sense_map
    from contextlens.analyses.corpus.senses import induce_senses
    from contextlens.analyses.lesson.attention import AttentionResult, attend
    from contextlens.analyses.lesson.divergence import Comparison, compare
    from contextlens.analyses.lesson.input_share import input_row_share
    from contextlens.analyses.lesson.kinds import ThreeKinds, three_kinds
    from contextlens.analyses.lesson.neighbors import neighbors
    from contextlens.analyses.lesson.polysemy import Exploration, explore
    from contextlens.analyses.lesson.probe import ProbeResult, probe
    from contextlens.analyses.lesson.ranking import Ranking, load_pairs, rank_pairs
    from contextlens.analyses.lesson.run import run_lesson
    from contextlens.analyses.lesson.same_sense import same_sense
    from contextlens.analyses.lesson.trace import Trace, trace
    from contextlens.analyses.lesson.two_models import TwoModels, side_by_side
    from contextlens.analyses.measures.word_baseline import random_word_baseline
    from contextlens.analyses.representations.cka import compare_layers
    from contextlens.analyses.search.capacity import estimate
    from contextlens.analyses.search.cost import measure_cost
    from contextlens.analyses.search.encoders import make_encoder
    from contextlens.analyses.search.folders import search_index
    from contextlens.analyses.search.index import VectorIndex
    from contextlens.analyses.search.pg_capacity import pg_estimate
    from contextlens.analyses.static.distill import distill_static
    from contextlens.analyses.static.evaluate import evaluate_static
    from contextlens.analyses.static.train import train_static
    from contextlens.analyses.tuning.train import TuneResult, tune
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
    # every analysis behind a CLI command, by the name its module gives it
    "AttentionResult": "contextlens.analyses.lesson.attention",
    "attend": "contextlens.analyses.lesson.attention",
    "Exploration": "contextlens.analyses.lesson.polysemy",
    "explore": "contextlens.analyses.lesson.polysemy",
    "ProbeResult": "contextlens.analyses.lesson.probe",
    "probe": "contextlens.analyses.lesson.probe",
    "Trace": "contextlens.analyses.lesson.trace",
    "trace": "contextlens.analyses.lesson.trace",
    "Ranking": "contextlens.analyses.lesson.ranking",
    "rank_pairs": "contextlens.analyses.lesson.ranking",
    "load_pairs": "contextlens.analyses.lesson.ranking",
    "neighbors": "contextlens.analyses.lesson.neighbors",
    "input_row_share": "contextlens.analyses.lesson.input_share",
    "ThreeKinds": "contextlens.analyses.lesson.kinds",
    "three_kinds": "contextlens.analyses.lesson.kinds",
    "TwoModels": "contextlens.analyses.lesson.two_models",
    "side_by_side": "contextlens.analyses.lesson.two_models",
    "run_lesson": "contextlens.analyses.lesson.run",
    "run_wic": "contextlens.analyses.benchmarks.suite",
    "run_wsd": "contextlens.analyses.benchmarks.suite",
    "run_similarity": "contextlens.analyses.benchmarks.suite",
    "run_contextuality": "contextlens.analyses.benchmarks.suite",
    "run_wsi": "contextlens.analyses.benchmarks.wsi",
    "run_layer_probes": "contextlens.analyses.benchmarks.layer_probes",
    "evaluate_lee": "contextlens.analyses.benchmarks.retrieval",
    "evaluate_wordnet": "contextlens.analyses.benchmarks.retrieval",
    "random_word_baseline": "contextlens.analyses.measures.word_baseline",
    "VectorIndex": "contextlens.analyses.search.index",
    "search_index": "contextlens.analyses.search.folders",
    "make_encoder": "contextlens.analyses.search.encoders",
    "estimate": "contextlens.analyses.search.capacity",
    "pg_estimate": "contextlens.analyses.search.pg_capacity",
    "measure_cost": "contextlens.analyses.search.cost",
    "extract_corpus": "contextlens.analyses.corpus.extract",
    "open_folder": "contextlens.analyses.corpus.open_folder",
    "ExtractionFolder": "contextlens.analyses.corpus.open_folder",
    "search_occurrences": "contextlens.analyses.corpus.occurrence_search",
    "induce_senses": "contextlens.analyses.corpus.senses",
    "SenseMap": "contextlens.analyses.corpus.sense_map",
    "sense_map": "contextlens.analyses.corpus.sense_map",
    "export_projector": "contextlens.analyses.corpus.projector",
    "contextuality_of_corpus": "contextlens.analyses.corpus.contextuality",
    "compare_layers": "contextlens.analyses.representations.cka",
    "train_static": "contextlens.analyses.static.train",
    "tune": "contextlens.analyses.tuning.train",
    "TuneResult": "contextlens.analyses.tuning.train",
    "distill_static": "contextlens.analyses.static.distill",
    "evaluate_static": "contextlens.analyses.static.evaluate",
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
    "AttentionResult",
    "Comparison",
    "ContextlensError",
    "ContextualModel",
    "EmptyTextError",
    "Exploration",
    "ExtractionFolder",
    "ForwardPass",
    "InputError",
    "MarkerError",
    "ModelLoadError",
    "ModelNotInstalledError",
    "Occurrence",
    "OccurrenceEncoding",
    "OutOfVocabularyError",
    "ProbeResult",
    "Provenance",
    "ProvenanceMismatchError",
    "Ranking",
    "SenseMap",
    "StaticModel",
    "StaticModelError",
    "TargetNotFoundError",
    "ThreeKinds",
    "TokenStates",
    "TokenizedOccurrence",
    "Trace",
    "TuneResult",
    "TwoModels",
    "UnknownModelError",
    "Vector",
    "VectorIndex",
    "WeightsMismatchError",
    "attend",
    "compare",
    "compare_layers",
    "contextuality_of_corpus",
    "cosine",
    "cosine_matrix",
    "distill_static",
    "estimate",
    "evaluate_lee",
    "evaluate_static",
    "evaluate_wordnet",
    "explore",
    "export_projector",
    "extract_corpus",
    "open_folder",
    "find_word",
    "induce_senses",
    "input_row_share",
    "load_contextual",
    "load_pairs",
    "load_static",
    "locate",
    "make_encoder",
    "measure_cost",
    "neighbors",
    "parse_marked",
    "pg_estimate",
    "probe",
    "random_word_baseline",
    "rank_pairs",
    "run_contextuality",
    "run_layer_probes",
    "run_lesson",
    "run_similarity",
    "run_wic",
    "run_wsd",
    "run_wsi",
    "same_sense",
    "search_index",
    "search_occurrences",
    "sense_map",
    "side_by_side",
    "three_kinds",
    "trace",
    "train_static",
    "tune",
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
