"""Issue 33 item 3: fp32 on torch and fp32 on ONNX Runtime (its export check passed) share the
benchmark calibrations (the WiC pair encodings, the sense layer choice, same-sense's rule, the
random-word baseline); int8 keeps its own; the shared result says which backend computed it."""

import pytest

from contextlens.analyses.lesson import same_sense as same_sense_module
from contextlens.analyses.measures import layer_choice, word_baseline
from contextlens.analyses.measures.wic_pairs import wic_is_encoded
from contextlens.core import disk_cache
from contextlens.core.contextual_models import load_contextual
from contextlens.core.onnx_graphs import EXACT

# sentences of this file alone: another file's same-sense on the same worker may hold its own pair's
# states in memory, and the forward count below must be this pair's
RIVER, MONEY = "The canal's grassy [bank] flooded in April.", "She paid the rent at the [bank] on Friday."


@pytest.fixture
def empty_result_cache(tmp_path, monkeypatch):
    """A fresh folder for cached arrays (the ONNX export stays where it is) and no results held in
    memory, so the first runtime below computes everything and the second can only read it."""
    monkeypatch.setattr(disk_cache, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(same_sense_module, "_rules", {})
    monkeypatch.setattr(layer_choice, "_memory", {})
    word_baseline._cached.cache_clear()
    yield tmp_path
    word_baseline._cached.cache_clear()


def _count_forwards(model, monkeypatch) -> list[int]:
    calls: list[int] = []
    inner = model._net.run_layers

    def counted(*args, **kwargs):
        calls.append(1)
        return inner(*args, **kwargs)

    monkeypatch.setattr(model._net, "run_layers", counted)
    return calls


def test_torch_reads_the_rule_onnx_computed(minilm, minilm_onnx, empty_result_cache, monkeypatch):
    check = minilm_onnx.export_check_diff
    assert check is not None and check <= EXACT
    assert minilm_onnx.identity != minilm.identity  # the runtime's own results stay apart
    assert minilm_onnx.shared_identity == minilm.shared_identity == minilm.identity

    onnx_forwards = _count_forwards(minilm_onnx, monkeypatch)
    made = same_sense_module.same_sense_rule(minilm_onnx, "auto", "quick")
    word_baseline.random_word_baseline(minilm_onnx)
    assert onnx_forwards  # the first runtime computed it here, in the empty cache
    assert made.made_on.backend == "onnx fp32"

    torch_forwards = _count_forwards(minilm, monkeypatch)
    read = same_sense_module.same_sense_rule(minilm, "auto", "quick")
    base = word_baseline.random_word_baseline(minilm)
    assert torch_forwards == []  # nothing encoded on the second runtime
    assert (read.layer, read.threshold, read.coef, read.intercept, read.test_accuracy) == (
        made.layer, made.threshold, made.coef, made.intercept, made.test_accuracy,
    )  # fmt: skip
    assert read.backend.runtime == "torch" and read.made_on.backend == "onnx fp32"
    assert base.made_on.backend == "onnx fp32"
    provenance = read.to_dict()["made_on"]
    assert provenance["computed_on"] == "onnx fp32" and provenance["export_check_max_abs_diff"] == check
    assert f"{check:.2g}" in provenance["note"]

    answer = same_sense_module.same_sense(RIVER, MONEY, minilm, size="quick")
    assert any("computed on onnx fp32" in note for note in answer.notes)
    assert answer.to_dict()["random_word_baseline"]["made_on"]["computed_on"] == "onnx fp32"
    assert len(torch_forwards) == 1  # the user's two sentences, one batch: the calibration was read


def test_onnx_answer_says_nothing_extra_about_its_own_rule(minilm_onnx, empty_result_cache):
    answer = same_sense_module.same_sense(RIVER, MONEY, minilm_onnx, size="quick")
    assert answer.rule.made_on.backend == "onnx fp32"
    assert not any("computed on" in note for note in answer.notes)


def test_int8_keeps_its_own_calibration(minilm, empty_result_cache):
    same_sense_module.same_sense_rule(minilm, "auto", "quick")
    int8 = load_contextual("minilm", "int8")
    assert int8.shared_identity == int8.identity != minilm.shared_identity
    assert int8.export_check_diff is None
    assert wic_is_encoded(minilm, "quick") and not wic_is_encoded(int8, "quick")


def test_only_the_calibrations_encodings_are_shared(minilm, minilm_onnx):
    """The benchmarks' own span encodings (WSD, similarity, probes) stay per runtime: their results
    name the runtime they ran on; only the calibrations' (``shared=True``) are read across."""
    from contextlens.analyses.measures.span_encoding import _key

    texts, spans = ["The river bank flooded."], [(0, 10, 14)]
    assert _key(minilm, texts, spans, True) == _key(minilm_onnx, texts, spans, True)
    assert _key(minilm, texts, spans, False) != _key(minilm_onnx, texts, spans, False)
