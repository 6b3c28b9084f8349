"""One forward pass per set of sentences in the lesson (issue 18): the input-row share and CKA read
the same token states, and the shared result is the unshared one bit for bit."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from contextlens.analyses.lesson.input_share import input_row_share
from contextlens.analyses.lesson.run import run_lesson
from contextlens.analyses.lesson.shared_states import SharedStates
from contextlens.analyses.representations.cka import compare_layers
from contextlens.data.text_sets import corpus_texts
from contextlens.errors import InputError

TEXTS = corpus_texts("builtin", 40)  # two batches of 32: the batches decide the padding


def _no_forward(*_args, **_kwargs):
    raise AssertionError("a forward pass ran although the states were given")


def _without_seconds(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "seconds"}


def test_input_share_from_shared_states_is_its_own_forward_bit_for_bit(minilm, monkeypatch) -> None:
    own = input_row_share(minilm, TEXTS, "builtin")
    states = SharedStates().token_states(minilm, TEXTS)
    monkeypatch.setattr(minilm, "run_layers", _no_forward)
    shared = input_row_share(minilm, TEXTS, "builtin", states=states)
    assert _without_seconds(shared.to_dict()) == _without_seconds(own.to_dict())


def test_cka_from_shared_states_is_its_own_forward_bit_for_bit(minilm, monkeypatch) -> None:
    own = compare_layers(minilm, texts=TEXTS)
    states = SharedStates().token_states(minilm, TEXTS)
    monkeypatch.setattr(minilm, "run_layers", _no_forward)
    shared = compare_layers(minilm, texts=TEXTS, states=states)
    assert np.array_equal(shared.matrix, own.matrix)
    assert _without_seconds(shared.to_dict()) == _without_seconds(own.to_dict())


def test_one_forward_per_key(minilm) -> None:
    shared = SharedStates()
    first = shared.token_states(minilm, TEXTS[:8])
    assert shared.token_states(minilm, TEXTS[:8]) is first
    assert shared.forwards == 1
    shared.token_states(minilm, TEXTS[:8], layers=[0, 2])  # other layers: another forward
    shared.token_states(minilm, TEXTS[:8], batch_size=4)  # other batches (padding): another forward
    assert shared.forwards == 3


def test_states_of_other_texts_are_refused(minilm) -> None:
    states = SharedStates().token_states(minilm, TEXTS[:20])
    with pytest.raises(InputError, match="`states`"):
        input_row_share(minilm, TEXTS[1:21], "builtin", states=states)
    with pytest.raises(InputError, match="`states`"):
        compare_layers(minilm, texts=TEXTS[1:21], states=states)
    some_layers = SharedStates().token_states(minilm, TEXTS[:20], layers=[0, 1])
    with pytest.raises(InputError, match="`states`"):
        compare_layers(minilm, texts=TEXTS[:20], states=some_layers)


def test_the_lesson_runs_the_builtin_sentences_once_and_tells_each_step(minilm, glove, monkeypatch) -> None:
    """Forwards counted per step (the step callback names it): CKA runs none, it reads the
    input-row share's states; before, each ran its own forward of the same 60 sentences."""
    steps: list[str] = []
    forwards: Counter[str] = Counter()
    run = minilm.run_layers

    def counted(*args, **kwargs):
        forwards[steps[-1]] += 1
        return run(*args, **kwargs)

    monkeypatch.setattr(minilm, "run_layers", counted)
    shared = SharedStates()
    lesson = run_lesson(minilm, glove, permutations=10, step=steps.append, shared=shared)
    share = next(s for s in steps if s.startswith("the input-row share"))
    cka = next(s for s in steps if s.startswith("CKA"))
    assert forwards[share] == 2  # 60 sentences, batches of 32
    assert forwards[cka] == 0
    assert shared.forwards == 1
    assert lesson.cka.tokens == lesson.input_share.tokens  # the same tokens of the same sentences
    assert len(steps) == 9 and len(set(steps)) == 9  # one line per experiment
