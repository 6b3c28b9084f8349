"""One loaded model serves many threads at once: every answer equals the sequential one, exactly.

Each thread runs all the mixed calls (compare, attention with weights, trace, probe, explore; the
sentences differ in length, so batches differ in shape) in its own shuffled order. The occurrence
cache is off during the test: with it on, the concurrent calls would be served the sequential
run's results and prove nothing about the forward pass.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from contextlens.analyses.lesson.attention import attend
from contextlens.analyses.lesson.divergence import compare
from contextlens.analyses.lesson.polysemy import explore
from contextlens.analyses.lesson.probe import probe
from contextlens.analyses.lesson.trace import trace
from contextlens.core.contextual_models import ContextualModel
from contextlens.core.occurrences import parse_marked
from contextlens.core.static_models import StaticModel
from tests.helpers import assert_plain_json

THREADS = 8
CALLS_PER_THREAD = 40

SENTENCES = [
    "The [bank] approved the loan.",
    "We sat on the river [bank] and watched the boats drift slowly past the old mill.",
    "[Bank].",
    "After the storm the muddy [bank] of the stream had collapsed into the water below the bridge.",
    "She asked the [bank] for a statement of every account she held there since the spring.",
    "A [bank] of fog.",
    "The pilot let the plane [bank] sharply to the left as the runway came into view.",
    "Money in the [bank] earns very little interest these days, my grandfather complained again.",
]


def mixed_calls(
    model: ContextualModel, glove: StaticModel, with_attention: bool
) -> list[tuple[str, Callable[[], dict]]]:
    """Forty named calls; each returns the result's JSON document (benchmarks/concurrency.py times
    the same calls)."""
    occs = [parse_marked(s) for s in SENTENCES]
    calls: list[tuple[str, Callable[[], dict]]] = []
    for i in range(len(occs)):
        pair = [occs[i], occs[(i + 3) % len(occs)]]
        calls.append((f"compare {i}", lambda p=pair: compare(p, model, glove).to_dict()))
        calls.append((f"probe {i}", lambda o=occs[i]: probe([o], ["river", "money"], model, static=glove).to_dict()))
        if with_attention:
            calls.append((f"attention {i}", lambda p=pair, i=i: attend(p, model, layer=1 + i % 6, head=i).to_dict()))
            calls.append((f"trace {i}", lambda o=occs[i]: trace(o, model).to_dict()))
        else:
            three = [occs[i], occs[(i + 1) % 8], occs[(i + 5) % 8]]
            calls.append((f"compare-3 {i}", lambda t=three: compare(t, model).to_dict()))
            calls.append((f"layers {i}", lambda p=pair: compare(p, model, layers=[1, 2]).to_dict()))
    for word in ("bank", "bat", "light", "spring", "lead", "bank", "bat", "light"):
        calls.append((f"explore {word}", lambda w=word: explore([w], model, permutations=20).to_dict()))
    assert len(calls) == CALLS_PER_THREAD
    return calls


def _same_answers_from_many_threads(model: ContextualModel, glove: StaticModel, with_attention: bool) -> None:
    saved = model.cache_size
    model.cache_size = 0  # every call computes (see the module docstring)
    model.clear_cache()
    try:
        calls = mixed_calls(model, glove, with_attention)
        sequential = {name: json.dumps(call(), sort_keys=True) for name, call in calls}

        def worker(seed: int) -> list[tuple[str, str]]:
            order = list(calls)
            random.Random(seed).shuffle(order)
            return [(name, json.dumps(call(), sort_keys=True)) for name, call in order]

        with ThreadPoolExecutor(THREADS) as pool:
            answers = [a for got in pool.map(worker, range(THREADS)) for a in got]
    finally:
        model.cache_size = saved
    assert len(answers) == THREADS * CALLS_PER_THREAD
    wrong = [name for name, got in answers if got != sequential[name]]
    assert not wrong, f"{len(wrong)} of {len(answers)} concurrent answers differ from the sequential ones: {wrong[:5]}"


def test_one_torch_model_serves_eight_threads(minilm: ContextualModel, glove: StaticModel) -> None:
    _same_answers_from_many_threads(minilm, glove, with_attention=True)


def test_one_onnx_model_serves_eight_threads(minilm_onnx: ContextualModel, glove: StaticModel) -> None:
    _same_answers_from_many_threads(minilm_onnx, glove, with_attention=False)


def test_the_eager_twin_shares_the_weights(minilm: ContextualModel) -> None:
    """Attention weights come from a second module tree; it must not hold a second copy of them."""
    twin = minilm.attention_model
    assert twin is not minilm.model
    assert twin.config._attn_implementation == "eager" and minilm.model.config._attn_implementation == "sdpa"
    main = dict(minilm.model.named_parameters())
    for name, param in twin.named_parameters():
        assert param.data_ptr() == main[name].data_ptr(), name


def test_a_call_leaves_nothing_on_the_shared_modules(minilm: ContextualModel) -> None:
    """The hooks go on once, at load: calls of any kind add none and leave none behind."""

    def hooks(net) -> int:
        return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in net.modules())

    before = (hooks(minilm.model), hooks(minilm.attention_model))
    occ = parse_marked(SENTENCES[1])
    minilm.forward_one(occ, attentions=True, through=3)
    minilm.encode_occurrences([occ], layers=[2])
    assert (hooks(minilm.model), hooks(minilm.attention_model)) == before


@pytest.mark.parametrize("through", [0, 2])
def test_a_stopped_forward_does_not_leak_into_the_next(minilm: ContextualModel, through: int) -> None:
    """A call that stops early leaves no state behind: a full call after it equals a fresh one."""
    occ = parse_marked(SENTENCES[3])
    full = minilm.forward_one(occ)
    minilm.forward_one(occ, through=through)
    again = minilm.forward_one(occ)
    assert (again.hidden_states == full.hidden_states).all()


def test_an_arrays_plain_json_is_its_values_walked_one_by_one() -> None:
    """Every answer above is dumped through jsonable, mostly arrays: a numeric array with no NaN or
    infinity is its tolist() at once; one with them is walked value by value, and those are null."""
    from contextlens.core.jsonable import jsonable

    arrays = [
        np.arange(6, dtype=np.int64).reshape(2, 3),
        np.array([[0.5, -1.25], [3.0, 1e-8]], dtype=np.float32),
        np.array([True, False]),
        np.array([[1.0, np.nan], [np.inf, -np.inf]]),
        np.zeros((0, 3)),
    ]
    for a in arrays:
        got = jsonable(a)
        assert got == jsonable(a.tolist())  # what walking each value gives
        assert_plain_json(got, str(a.dtype))
        json.dumps(got, allow_nan=False)
    assert jsonable(arrays[3]) == [[1.0, None], [None, None]]
    assert jsonable({"m": arrays[1]})["m"] == arrays[1].tolist()
