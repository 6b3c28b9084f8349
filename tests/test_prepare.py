"""`contextlens prepare` (issue 30): after it, a first compare and same-sense build nothing."""

import json

import pytest

from contextlens.analyses.lesson import same_sense
from contextlens.analyses.lesson.same_sense import rule_cached
from contextlens.analyses.measures import layer_choice, span_encoding, word_baseline
from contextlens.analyses.measures.word_baseline import baseline_cached
from contextlens.analyses.search import builtin_index
from contextlens.analyses.search.index import VectorIndex
from contextlens.core.contextual_models import load_contextual
from contextlens.core.onnx_runtime import OnnxForward
from contextlens.core.runtime_choice import export_pending
from tests.helpers import run_cli

RIVER, MONEY = "I sat on the river [bank].", "I opened a [bank] account."


def _prepare_minilm() -> dict:
    done = run_cli("prepare", "--model", "minilm", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _forbid_building(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cache a first compare or same-sense fills answers from disk, or the test fails: the
    compute functions raise, and the in-process memories of prepare's run are forgotten."""

    def read_only(real):
        def cached(namespace, key, compute, **kwargs):
            def refuse():
                raise AssertionError(f"{namespace} was computed, not read from the prepared cache")

            return real(namespace, key, refuse, **kwargs)

        return cached

    for module in (span_encoding, word_baseline, layer_choice):
        monkeypatch.setattr(module, "cached_arrays", read_only(module.cached_arrays))

    def no_index(*args, **kwargs):
        raise AssertionError("serve's built-in index was built, not read from the prepared cache")

    monkeypatch.setattr(VectorIndex, "build", no_index)

    def no_export(self, *args):
        raise AssertionError("the ONNX graphs were exported again")

    monkeypatch.setattr(OnnxForward, "_export", no_export)
    monkeypatch.setattr(OnnxForward, "_export_attention", no_export)
    word_baseline._cached.cache_clear()
    monkeypatch.setattr(layer_choice, "_memory", {})
    monkeypatch.setattr(same_sense, "_rules", {})


@pytest.mark.slow
def test_first_compare_and_same_sense_read_what_prepare_built(monkeypatch):
    result = _prepare_minilm()
    steps = [s for s in result["steps"] if s["model"] == "minilm"]
    assert {s["step"] for s in steps} >= {
        "ONNX export + checks (with attention)",
        "random-word baseline (onnx)",
        "random-word baseline (torch)",
        "sense layer + same-sense rule (onnx)",
        "serve's built-in index (Lee, onnx)",
    }
    assert result["models"] == ["minilm"] and all(s["seconds"] >= 0 for s in result["steps"])
    shared = {s["step"] for s in result["steps"] if s["model"] is None}
    assert "installed corpora's sizes (corpus list)" in shared  # a first `corpus list` counted 100 s
    lean, reference = load_contextual("minilm", "fp32", "onnx"), load_contextual("minilm", "fp32", "torch")
    assert not export_pending("minilm", "fp32")
    assert baseline_cached(lean) and baseline_cached(reference)
    assert rule_cached(lean, "full")  # on the runtime every face's same-sense uses (issue 33)
    assert builtin_index.lee_index_ready(lean)  # what the first `serve` after set-up indexed before it was ready

    again = _prepare_minilm()  # idempotent: every checked step reads its cache
    assert [s["cached"] for s in again["steps"] if s["cached"] is not None] == [True] * 5

    _forbid_building(monkeypatch)
    compare = run_cli("compare", RIVER, MONEY, "-m", "minilm", "--json")
    assert compare.returncode == 0, compare.stderr
    compared = json.loads(compare.stdout)
    assert compared["runtime"] == "onnx" and compared["baseline"] is not None
    answer = run_cli("same-sense", RIVER, MONEY, "-m", "minilm", "--json")
    assert answer.returncode == 0, answer.stderr
    answered = json.loads(answer.stdout)
    assert answered["rule"]["runtime"] == "onnx"
    assert answered["rule"]["test_accuracy"] == pytest.approx(same_sense.same_sense_rule(lean).test_accuracy)
    served = load_contextual("minilm", "fp32", "auto")  # what `serve` loads: auto, the export made
    assert builtin_index.lee_index(served) == builtin_index.lee_folder(lean)  # read, not built


@pytest.mark.parametrize("name", ["glove-50d", "smollm2", "nope"])
def test_prepare_refuses_what_is_not_a_shipped_encoder(name):
    done = run_cli("prepare", "--model", name)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and name in done.stderr
