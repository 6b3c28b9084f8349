"""A tuning run's settings, and the one-line refusals of the impossible ones (checked before any
weights load: the base model's facts come from its ``config.json``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from contextlens.core.model_facts import ModelFacts, model_facts
from contextlens.errors import InputError, ParameterError


@dataclass(frozen=True)
class TuneSettings:
    """How to tune: the layer whose pooled target state learns, how long, how fast."""

    layer: int = -1  # hidden-state layer 1..L (negative from the top); blocks 1..layer learn
    epochs: int = 4  # passes over the train lemmas
    max_steps: int | None = None  # stop after this many steps (None: the epochs decide)
    lemmas_per_step: int = 16  # lemmas per optimizer step (each with all its kept examples)
    learning_rate: float = 5e-5  # AdamW peak, after a linear warm-up over a tenth of the steps
    temperature: float = 0.1  # of the contrastive softmax over cosines
    eval_every: int = 25  # steps between dev evaluations
    patience: int = 4  # evaluations without a better dev AUC before stopping
    seed: int = 0
    max_lemmas: int | None = None  # a seeded sample of the usable lemmas (None: all of them)
    dev_share: float = 0.1  # of the usable lemmas, for early stopping
    max_per_sense: int = 4  # examples kept per synset of a lemma
    checkpoint_every: int = 25  # steps between checkpoints (also written at every evaluation)
    glosses: bool = False  # add a "<lemma>: <definition>" view of each sense to the train lemmas (data.py)
    keep_best: bool = True  # keep the best dev evaluation's weights (False: the last step's)

    def checked(self, num_layers: int) -> TuneSettings:
        """These settings with ``layer`` as 1..L; a :class:`ParameterError` names the first wrong one."""
        real = num_layers + 1 + self.layer if _is_int(self.layer) and self.layer < 0 else self.layer
        if not _is_int(real) or not 1 <= real <= num_layers:
            raise ParameterError(
                "layer",
                f"must be a hidden-state layer 1..{num_layers} (or -1..-{num_layers}); layer 0 is the embedding "
                f"output, which no block shapes and tuning leaves fixed; got {self.layer!r}",
            )
        self._check_counts()
        for field_name in ("learning_rate", "temperature"):
            value = getattr(self, field_name)
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
                raise ParameterError(field_name, f"must be a positive number, got {value!r}")
        if not isinstance(self.dev_share, int | float) or not 0 < self.dev_share < 1:
            raise ParameterError("dev_share", f"must be between 0 and 1 (exclusive), got {self.dev_share!r}")
        for field_name in ("keep_best", "glosses"):
            if not isinstance(getattr(self, field_name), bool):
                raise ParameterError(field_name, f"must be true or false, got {getattr(self, field_name)!r}")
        if not _is_int(self.seed) or self.seed < 0:
            raise ParameterError("seed", f"must be a non-negative integer, got {self.seed!r}")
        return replace(self, layer=real)

    def _check_counts(self) -> None:
        """The whole-number settings: each positive (the optional ones when given), and the two that need two."""
        for field_name in ("epochs", "lemmas_per_step", "eval_every", "patience", "checkpoint_every", "max_per_sense"):
            _positive_int(field_name, getattr(self, field_name))
        for field_name in ("max_steps", "max_lemmas"):
            if getattr(self, field_name) is not None:
                _positive_int(field_name, getattr(self, field_name))
        if self.max_lemmas is not None and self.max_lemmas < 2:
            raise ParameterError("max_lemmas", f"must be at least 2 (a train and a dev lemma), got {self.max_lemmas}")
        if self.max_per_sense < 2:
            raise ParameterError("max_per_sense", f"must be at least 2 (for a positive), got {self.max_per_sense}")


def check_base(base: Any) -> ModelFacts:
    """The base model's facts; a decoder, a hub id not on disk or a static model is refused."""
    if not isinstance(base, str) or not base.strip():
        raise ParameterError("base", f"must be a contextual model's name or folder (e.g. minilm), got {base!r}")
    facts = model_facts(base)
    if facts is None:
        raise InputError(f"tune needs the base model's files on disk; {base!r} has no config.json here")
    if facts.is_decoder:
        raise InputError(
            f"tune fine-tunes encoders (minilm, mpnet); {base!r} is a decoder (left context only), "
            "whose word states the sense objective is not made for"
        )
    return facts


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _positive_int(name: str, value: Any) -> None:
    if not _is_int(value) or value < 1:
        raise ParameterError(name, f"must be a positive integer, got {value!r}")
