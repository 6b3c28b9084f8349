"""The ONNX Runtime forward: exact to 1e-4, stopping at the highest layer, exported once, refused
when it is not exact, and never silently used where only torch can answer."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from contextlens.core import onnx_graphs, onnx_runtime
from contextlens.core.contextual_models import ContextualModel, load_contextual
from contextlens.core.drift import drift
from contextlens.core.onnx_graphs import ATTENTION
from contextlens.core.onnx_runtime import EXACT, OnnxForward, check_runtime, require_onnxruntime
from contextlens.errors import InputError, ModelLoadError, ModelNotInstalledError

TEXTS = [
    "The river bank flooded the low fields after three days of rain.",
    "She deposited the cheque at the bank on Monday.",
    "Bank.",
]


@pytest.fixture(scope="module")
def onnx_minilm(minilm_onnx: ContextualModel) -> ContextualModel:
    return minilm_onnx  # the session's one instance (tests/conftest.py)


def _batch(model: ContextualModel) -> tuple[torch.Tensor, torch.Tensor]:
    return model.pad([model.tokenizer(t)["input_ids"] for t in TEXTS])


def test_states_equal_torch_within_the_bar_at_any_layer_set(minilm, onnx_minilm) -> None:
    ids, mask = _batch(minilm)
    real = mask.bool()
    top = minilm.num_layers
    for layers in [(0,), (1,), (0, 3), (2, 3), (top,), tuple(range(top + 1))]:
        want = minilm.run_layers(ids, mask, layers)
        got = onnx_minilm.run_layers(ids, mask, layers)
        assert len(got) == len(layers)
        for layer, a, b in zip(layers, want, got, strict=True):
            assert b.shape == a.shape
            assert float((a[real] - b[real]).abs().max()) <= EXACT, (layers, layer)
    # keep() sees each requested layer's whole state, as in torch
    rows = onnx_minilm.run_layers(ids, mask, (1, 2), keep=lambda h: h[:, 0])
    assert [tuple(r.shape) for r in rows] == [(3, minilm.hidden_size)] * 2


def test_a_pruned_graph_holds_only_the_blocks_below_the_highest_layer(onnx_minilm) -> None:
    ids, mask = _batch(onnx_minilm)
    onnx_minilm.run_layers(ids, mask, (0, 2))
    forward = onnx_minilm.onnx_forward()
    full = onnx.load(str(forward.full_graph), load_external_data=False).graph
    pruned_path = forward.folder / "fp32-top2.onnx"
    pruned = onnx.load(str(pruned_path), load_external_data=False).graph
    assert [o.name for o in pruned.output] == ["hidden_0", "hidden_1", "hidden_2"]
    ops_full = sum(n.op_type in {"Attention", "MatMul"} for n in full.node)
    ops_pruned = sum(n.op_type in {"Attention", "MatMul"} for n in pruned.node)
    assert ops_pruned * onnx_minilm.num_layers == ops_full * 2  # 2 of the 6 blocks' products
    # the weights stay in the one shared file: the pruned graph is small
    assert pruned_path.stat().st_size < 1_000_000 < (forward.folder / "fp32.onnx.data").stat().st_size


def test_the_export_is_made_once_and_reused(onnx_minilm) -> None:
    folder = onnx_minilm.onnx_forward().folder
    stamps = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    again = OnnxForward(onnx_minilm)
    assert again.folder == folder
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir() if p.name in stamps} == stamps
    assert again.check == onnx_minilm.onnx_forward().check


def test_an_export_beyond_the_bar_is_refused_and_not_kept(onnx_minilm, monkeypatch, tmp_path) -> None:
    built = onnx_minilm.onnx_forward().folder

    def optimized_copy(_raw: str, out: str, _config, external_data: bool = False) -> dict:
        # the session's real exported and fused graph stands in for a second export (~4 s):
        # what is under test is the check against torch that follows, and what it leaves behind
        for name in ("fp32.onnx", "fp32.onnx.data"):
            shutil.copyfile(built / name, Path(out).parent / name)
        return {}

    def attention_copy(forward: OnnxForward) -> None:
        # likewise the session's checked attention graph, made after the refusal's test (~3 s)
        for name in (f"{ATTENTION}.onnx", f"{ATTENTION}.onnx.data", f"{ATTENTION}-check.json"):
            shutil.copyfile(built / name, forward.folder / name)

    monkeypatch.setattr(onnx_graphs, "export_folder", lambda *_args: tmp_path / "onnx" / "minilm-test")
    monkeypatch.setattr(onnx_runtime, "export_onnx", lambda *_args: None)
    monkeypatch.setattr(onnx_runtime, "optimize_onnx", optimized_copy)
    monkeypatch.setattr(OnnxForward, "_export_attention", attention_copy)
    monkeypatch.setattr(onnx_runtime, "EXACT", 1e-9)  # the real graph differs from torch by ~1e-5
    torch_net = onnx_minilm.torch_reference()  # what an export is made from
    with pytest.raises(ModelLoadError, match="differs from torch"):
        OnnxForward(torch_net)
    assert list((tmp_path / "onnx").iterdir()) == []  # no graph, no half-built folder
    monkeypatch.setattr(onnx_runtime, "EXACT", EXACT)  # within the bar, the same graph is kept
    assert max(OnnxForward(torch_net).check["max_abs_diff"]) <= EXACT
    assert [p.name for p in (tmp_path / "onnx").iterdir()] == ["minilm-test"]


def test_the_fp32_check_is_printed_with_its_largest_difference(onnx_minilm) -> None:
    d = drift("minilm", "fp32", "onnx")
    assert (d.backend.runtime, d.backend.precision) == ("onnx", "fp32")
    assert len(d.max_abs_diff) == onnx_minilm.num_layers + 1
    assert 0 < max(d.max_abs_diff) <= EXACT  # not bit-equal to torch, within the bar
    assert "onnx fp32 vs torch fp32" in d.line() and "largest |difference|" in d.line()


def test_onnx_int8_drifts_a_little_and_is_its_own_cache_identity(minilm, onnx_minilm) -> None:
    int8 = load_contextual("minilm", "int8", "onnx")
    d = drift("minilm", "int8", "onnx")
    assert d.mean_cosine[0] > 0.9999  # embeddings are not quantized
    assert 0.97 < d.worst_mean < 0.9999  # quantized: close, not exact
    ids, mask = _batch(minilm)
    a = onnx_minilm.run_layers(ids, mask, (minilm.num_layers,))[0]
    b = int8.run_layers(ids, mask, (minilm.num_layers,))[0]
    assert float(np.abs(a - b).max()) > EXACT
    identities = {m.identity for m in (minilm, onnx_minilm, int8, load_contextual("minilm", "int8"))}
    assert len(identities) == 4
    assert int8.backend.label == "onnx int8" and onnx_minilm.backend.label == "onnx fp32"
    assert int8.weight_bytes() < onnx_minilm.weight_bytes()


def test_what_only_torch_provides_is_refused_in_one_line(onnx_minilm) -> None:
    ids, mask = _batch(onnx_minilm)
    states, weights = onnx_minilm.run_with_attentions(ids, mask, 2)  # fp32: the checked attention graph
    assert (len(states), len(weights)) == (3, 2)
    int8 = load_contextual("minilm", "int8", "onnx")  # int8 has no attention graph
    with pytest.raises(InputError, match="attention weights come from the torch runtime"):
        int8.run_with_attentions(ids, mask, 2)
    with pytest.raises(InputError, match="torch runtime"):
        onnx_minilm.run(ids, mask, hidden_states=True)


def test_bad_runtime_and_missing_package_are_typed_errors(monkeypatch) -> None:
    with pytest.raises(InputError, match="unknown runtime 'tensorrt'"):
        check_runtime("tensorrt")
    with pytest.raises(InputError, match="unknown runtime"):
        load_contextual("minilm", "fp32", "tensorrt")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as if not installed
    with pytest.raises(ModelNotInstalledError, match=r"pip install 'contextlens\[runtimes\]'"):
        require_onnxruntime()


def test_sessions_follow_the_thread_count_torch_has(onnx_minilm) -> None:
    ids, mask = _batch(onnx_minilm)
    forward = onnx_minilm.onnx_forward()
    before = torch.get_num_threads()
    other = 2 if before == 1 else 1
    try:
        first = forward.session(2)
        torch.set_num_threads(other)
        onnx_minilm.run_layers(ids, mask, (2,))
        assert forward.threads == other
        assert forward.session(2) is not first  # made anew for the new count
    finally:
        torch.set_num_threads(before)


def test_an_export_prunes_the_exports_of_gone_folders_and_of_earlier_weights(tmp_path):
    """`tune --force` re-tunes in place, and each test run tunes again: every new set of weights got a
    new export folder (its graphs and lean tables) that nothing read again. A new export removes those of a
    model folder that is gone and those of its own folder's earlier weights, and nothing else."""
    import json

    from contextlens.core.onnx_graphs import SOURCE_FILE, _weights_fingerprint, prune_stale_exports

    tuned, other = tmp_path / "tuned", tmp_path / "other"
    for folder in (tuned, other):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"weights")
    now = _weights_fingerprint(str(tuned))
    exports = tmp_path / "onnx"
    made = {  # export folder -> (the source it records, its weights), or None for no record
        "tuned-current": (tuned, now),
        "tuned-earlier": (tuned, [["model.safetensors", 3, 1]]),  # the folder's weights before a re-tune
        "tuned-other-tools": (tuned, now),  # other torch/onnxruntime versions: another venv may read it
        "gone-1": (tmp_path / "deleted", now),
        "other-1": (other, [["model.safetensors", 3, 1]]),
        "old-1": None,  # made before exports recorded their source
        ".gone-2.tmp-1": (tmp_path / "deleted", now),  # another process's temporary
    }
    for name, record in made.items():
        (exports / name).mkdir(parents=True)
        (exports / name / "fp32.onnx").write_bytes(b"graph")
        if record is not None:
            source, weights = record
            (exports / name / SOURCE_FILE).write_text(json.dumps({"source": str(source), "weights": weights}))
    removed = prune_stale_exports(str(tuned), exports / "tuned-current")
    assert sorted(p.name for p in removed) == ["gone-1", "tuned-earlier"]
    assert sorted(p.name for p in exports.iterdir()) == sorted(set(made) - {"gone-1", "tuned-earlier"})
