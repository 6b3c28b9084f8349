"""The lean path (core/lean_net.py): a cached, checked ONNX graph run with tokenizers,
onnxruntime and numpy alone. Its answers must be torch's within the export check, command by
command, and torch and transformers must never be imported by it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from contextlens.core import onnx_graphs
from contextlens.core.backbone import Backbone
from contextlens.core.contextual_models import ContextualModel, load_contextual
from contextlens.core.lean_tokenizer import FolderTokenizer
from contextlens.core.occurrences import Occurrence
from contextlens.core.onnx_graphs import ATTENTION_EXACT, EXACT
from contextlens.core.resources import resolve_contextual
from contextlens.core.runtime_choice import resolve_runtime
from contextlens.core.wordnet import usage_examples
from tests.helpers import HANG_SECONDS, link_test_cache, run_cli

BANK = ["The [bank] called about my account.", "The river [bank] flooded last night."]
OCC = Occurrence("The river bank flooded last night.", 10, 14)

# what the process imported, printed after the command ran (stdout holds the command's JSON first)
PROBE = (
    "import sys, json; from contextlens.cli import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit as stop:\n    code = stop.code\n"
    "print(json.dumps({'heavy': sorted(m for m in ('torch', 'transformers', 'gensim') if m in sys.modules),"
    " 'code': code}))\n"
)


def _lean_process(*args: str) -> tuple[dict, dict]:
    """``contextlens ARGS --json`` in a fresh process: its JSON and what heavy modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args, "--json"], capture_output=True, text=True, timeout=HANG_SECONDS
    )
    assert done.returncode == 0, done.stderr
    *body, last = done.stdout.strip().splitlines()
    return json.loads("\n".join(body)), json.loads(last)


@pytest.mark.parametrize("name", ["minilm", "mpnet"])
def test_the_folder_tokenizer_is_transformers_tokenizer(name: str) -> None:
    from transformers import AutoTokenizer

    _, source, _ = resolve_contextual(name)
    theirs, ours = AutoTokenizer.from_pretrained(source), FolderTokenizer(source)
    texts = [e.text for e in usage_examples()[::7]] + ["Café naïve — “quotes” 😀 <mask> [MASK]", "x " * 900]
    for kwargs in (
        {"return_offsets_mapping": True, "return_special_tokens_mask": True, "truncation": False},
        {"truncation": True, "max_length": 64},
        {"add_special_tokens": False, "truncation": True, "max_length": 512},
    ):
        want, got = theirs(texts, verbose=False, **kwargs), ours(texts, **kwargs)
        for key in got:
            assert [list(map(tuple, r)) if key == "offset_mapping" else list(r) for r in want[key]] == [
                list(map(tuple, r)) if key == "offset_mapping" else list(r) for r in got[key]
            ], (key, kwargs)
    assert (ours.pad_token_id, ours.unk_token_id, ours.model_max_length) == (
        theirs.pad_token_id,
        theirs.unk_token_id,
        theirs.model_max_length,
    )
    assert ours.all_special_ids == sorted(theirs.all_special_ids)
    assert ours.num_special_tokens_to_add() == theirs.num_special_tokens_to_add()


def test_a_lean_model_answers_what_torch_answers_within_the_check(minilm: ContextualModel) -> None:
    lean = load_contextual("minilm", runtime="onnx")  # (that it never imports torch: the fresh processes below)
    assert np.abs(lean.encode(OCC).hidden - minilm.encode(OCC).hidden).max() <= EXACT
    assert np.array_equal(lean.encode(OCC).input_row_values, minilm.encode(OCC).input_row_values)
    texts = ["The river bank flooded.", "She sat on the bank.", "hi"]
    assert np.abs(lean.embed_sentences(texts) - minilm.embed_sentences(texts)).max() <= EXACT
    for mode in ("mean", "cls", "max"):
        assert np.abs(lean.embed_texts(texts, 3, mode) - minilm.embed_texts(texts, 3, mode)).max() <= EXACT
    assert np.array_equal(lean.embed_input_rows(texts), minilm.embed_input_rows(texts))
    a, b = lean.forward_one(OCC), minilm.forward_one(OCC)
    assert np.abs(a.hidden_states - b.hidden_states).max() <= EXACT
    assert np.array_equal(a.input_rows, b.input_rows)
    for x, y in zip(lean.token_states(texts, [2, 6]), minilm.token_states(texts, [2, 6]), strict=True):
        assert (x.tokens, x.offsets) == (y.tokens, y.offsets)
        assert np.abs(x.states - y.states).max() <= EXACT


def test_lean_attention_weights_are_torchs_eager_attention(minilm: ContextualModel) -> None:
    lean = load_contextual("minilm", runtime="onnx")
    assert lean.lean_attention
    a, b = lean.forward_one(OCC, attentions=True), minilm.forward_one(OCC, attentions=True)
    assert a.attentions.shape == b.attentions.shape
    assert np.abs(a.attentions - b.attentions).max() <= ATTENTION_EXACT
    assert np.abs(a.hidden_states - b.hidden_states).max() <= EXACT
    through = lean.forward_one(OCC, attentions=True, through=2)  # the pruned attention graph
    assert np.abs(through.attentions - b.attentions[:2]).max() <= ATTENTION_EXACT


def test_mpnet_lean_position_rows_are_the_torch_models(mpnet: ContextualModel) -> None:
    lean = load_contextual("mpnet", runtime="onnx")
    assert np.array_equal(lean.position_rows(9), mpnet.position_rows(9))  # offset past the padding index
    assert np.abs(lean.encode(OCC).hidden - mpnet.encode(OCC).hidden).max() <= EXACT


@pytest.mark.parametrize(
    "command",
    [
        ["compare", *BANK],
        ["explore", "bank", "spring"],
        ["probe", "The river [bank] flooded.", "--anchors", "money,water"],
        ["rank", "--static", "glove-50d"],  # (its default may be a word2vec model made here: gensim's)
        ["attention", *BANK, "--layer", "2", "--head", "1"],
        ["trace", BANK[1]],
    ],
    ids=["compare", "explore", "probe", "rank", "attention", "trace"],
)
def test_each_command_on_auto_runs_lean_and_equals_torch(command: list[str], minilm_onnx: ContextualModel) -> None:
    lean, imported = _lean_process(*command, "-m", "minilm")
    assert imported == {"heavy": [], "code": 0}  # no torch, no transformers, no gensim
    assert lean["runtime"] == "onnx"
    reference = json.loads(run_cli(*command, "-m", "minilm", "--runtime", "torch", "--json").stdout)
    assert reference["runtime"] == "torch"
    _assert_close(lean, reference, "")


def _assert_close(a: object, b: object, where: str) -> None:
    """Equal JSON but for the runtime labels and numbers, which may differ by the export check."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), where
        for key in a:
            if key not in ("runtime", "backend", "drift", "seconds", "elapsed_s"):
                _assert_close(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert abs(a - b) <= 10 * EXACT, (where, a, b)
    elif isinstance(a, str) and isinstance(b, str) and ("onnx" in a or "fp32" in a):
        pass  # a label naming the backend
    else:
        assert a == b, (where, a, b)


def test_auto_picks_onnx_for_encoders_and_torch_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    load_contextual("minilm", runtime="onnx")  # its export, attention graph included, exists
    assert resolve_runtime("minilm", "fp32", "auto") == "onnx"
    assert resolve_runtime("minilm", "fp32", "auto", attention=True) == "onnx"  # the checked attention graph
    assert resolve_runtime("minilm", "int8", "auto", attention=True) == "torch"  # no int8 attention graph
    assert resolve_runtime("minilm", "int8", "torch") == "torch"  # asked for: kept
    monkeypatch.setattr("contextlens.core.runtime_choice.onnxruntime_installed", lambda: False)
    assert resolve_runtime("minilm", "fp32", "auto") == "torch"


def test_the_first_onnx_use_exports_once_then_starts_lean(monkeypatch: pytest.MonkeyPatch, tmp_path, capsys) -> None:
    from contextlens.cli.common import load_model, notes_after_result
    from contextlens.core.runtime_choice import ModelBackend

    folder = tmp_path / "onnx" / "minilm-fresh"
    monkeypatch.setattr(onnx_graphs, "export_folder", lambda *_args: folder)
    name, source, revision = resolve_contextual("minilm")
    # no export here: auto runs torch on every face, builds nothing, and the CLI says how to prepare
    for attention in (False, True):
        face = ModelBackend.checked("minilm", "fp32", "auto", weights=attention)
        assert (face.backend.runtime, face.export_missing) == ("torch", True)
        assert resolve_runtime("minilm", "fp32", "auto", attention=attention) == "torch"
    assert ModelBackend.resolve("minilm", "fp32", "auto") == face  # the API's auto (the web's) alike
    assert ModelBackend.resolve("minilm", "int8", "auto").backend.runtime == "torch"  # no int8 export either
    assert not ModelBackend.checked("minilm", "fp32", "torch").export_missing  # asked for torch: nothing to say
    assert load_model(face).runtime == "torch"
    notes_after_result(True)  # the note comes after the result (a bad-input error stays one line)
    assert "contextlens prepare -m minilm" in " ".join(capsys.readouterr().err.split())
    assert not folder.exists()  # nothing exported by auto
    # two first uses at once (threads here, test workers on a cold cache in CI): one exports, the
    # other waits for the finished folder (onnx_graphs.export_lock); before the lock both exported,
    # and a second process once opened the folder before its lean.json was written
    with ThreadPoolExecutor(2) as pool:
        both = list(pool.map(lambda _: Backbone(name, source, revision, "fp32", "onnx"), range(2)))
    assert sorted(b.exported_now for b in both) == [False, True]
    assert (folder / "fp32-check.json").is_file() and (folder / "lean.json").is_file()
    attention = json.loads((folder / "fp32-attention-check.json").read_text())  # kept, not refused
    assert attention["ok"] and max(attention["attention_max_abs_diff"]) <= ATTENTION_EXACT
    again = Backbone(name, source, revision, "fp32", "onnx")
    assert not again.exported_now and again._reference is None
    # once the export exists (prepare, or this explicit onnx use), auto runs on it, attention included
    face = ModelBackend.checked("minilm", "fp32", "auto", weights=True)
    assert (face.backend.runtime, face.export_missing) == ("onnx", False)


def test_glove_is_a_table_with_gensims_neighbours(glove) -> None:
    from gensim.models import KeyedVectors

    assert type(glove.kv).__name__ == "ArrayVectors"
    kv = KeyedVectors(glove.dim)
    kv.add_vectors(glove.kv.index_to_key, np.asarray(glove.kv.vectors))
    for positive, negative in [(["bank"], []), (["king", "woman"], ["man"]), (["paris", "italy"], ["france"])]:
        ours = glove.kv.most_similar(positive=positive, negative=negative, topn=10)
        theirs = kv.most_similar(positive=positive, negative=negative, topn=10)
        assert [w for w, _ in ours] == [w for w, _ in theirs]
        assert np.allclose([s for _, s in ours], [s for _, s in theirs], atol=1e-6)


def test_the_unseen_word_hint_reads_one_range_of_the_sorted_words(glove) -> None:
    """The lean table finds the hint's candidates by the first letter's range of its sorted words
    (0.12 s sooner than decoding the first 200,000 words); the candidates and the line are the same."""
    import difflib

    index, words = glove.kv.key_to_index, glove.kv.index_to_key
    for prefix in ("b", "st", "ω", "zz"):
        brute = sorted((w, i) for i, w in enumerate(words[:]) if w.startswith(prefix))
        assert sorted(index.starting_with(prefix)) == brute
    for word in ("bnak", "strete", "qqzzxv"):
        pool = [w for w in words[:200_000] if w[:1] == word[:1] and abs(len(w) - len(word)) <= 2]
        close = difflib.get_close_matches(word, pool, n=3, cutoff=0.75)
        message = glove._oov_message(word)
        assert (f"close words it knows: {', '.join(close)};" in message) if close else "close words" not in message


def test_models_lists_the_exports_this_machine_holds(
    minilm_onnx: ContextualModel, monkeypatch, tmp_path, shared_test_cache
) -> None:
    """`contextlens models` says which models run lean, with each graph's check against torch (the
    same figures the export stored), and that a fresh machine has none yet."""
    proc = run_cli("models", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)["models"]}
    fp32 = rows["minilm"]["onnx"]["fp32"]
    from contextlens.core.drift import drift

    assert fp32["max_abs_diff"] == max(drift("minilm", "fp32", "onnx").max_abs_diff) <= EXACT
    assert rows["minilm"]["onnx"]["attention"]["max_abs_diff"] <= ATTENTION_EXACT
    assert rows["glove-50d"]["onnx"] is None
    shown = run_cli("models")
    assert f"fp32 ±{fp32['max_abs_diff']:.1e}" in shown.stdout
    # a machine that exported nothing yet; its mpnet folder linked from the suite's cache, or listing
    # the models would assemble mpnet from its wheels' zip (~4 s) for a row this test does not read
    link_test_cache(shared_test_cache, tmp_path, "models")
    monkeypatch.setenv("CONTEXTLENS_CACHE", str(tmp_path))
    fresh = json.loads(run_cli("models", "--json").stdout)["models"]
    assert {r["name"]: r["onnx"] for r in fresh}["minilm"] == {"fp32": None, "int8": None, "attention": None}


def test_the_printed_export_check_includes_the_attention_graphs(minilm_onnx: ContextualModel) -> None:
    from contextlens.core.drift import drift

    fp32 = drift("minilm", "fp32", "onnx")
    assert len(fp32.attention_max_abs_diff) == minilm_onnx.num_layers  # one per block
    assert 0 < max(fp32.attention_max_abs_diff) <= ATTENTION_EXACT
    assert "attention weights within" in fp32.line() and fp32.to_dict()["attention_max_abs_diff"]
    assert drift("minilm", "int8", "onnx").attention_max_abs_diff == ()  # int8 has no attention graph


def test_int8_quantization_reads_a_private_copy_so_two_first_uses_do_not_collide(monkeypatch, tmp_path) -> None:
    """onnxruntime's quantize_dynamic writes ``fp32-inferred.onnx`` beside its input and deletes it
    after; run on the shared export folder, two processes' first int8 loads at once deleted each
    other's file (FileNotFoundError, seen with two test workers). The input is now a link in the
    process's own temporary folder, and the shared folder never holds an inferred copy."""
    import shutil

    from contextlens.core import onnx_runtime
    from contextlens.core.contextual_models import ContextualModel as Model
    from contextlens.core.resources import cache_dir

    shared_cache = cache_dir()
    shared = next((shared_cache / "onnx").glob("minilm-*"))
    monkeypatch.setenv("CONTEXTLENS_CACHE", str(tmp_path))
    fresh = tmp_path / "onnx" / shared.name
    shutil.copytree(shared, fresh, ignore=shutil.ignore_patterns("int8*"), copy_function=os.link)
    # the int8 check's drift sentences are WordNet usage examples: the shared cache's scan, linked,
    # not made again in the empty cache (a full WordNet scan: most of this test's CPU, issue 30)
    shutil.copytree(shared_cache / "wordnet", tmp_path / "wordnet", copy_function=os.link)
    inputs = []
    real = onnx_runtime.quantize_onnx
    monkeypatch.setattr(onnx_runtime, "quantize_onnx", lambda path, *a, **k: inputs.append(path) or real(path, *a, **k))
    model = Model(*resolve_contextual("minilm"), "int8", "onnx")
    assert len(inputs) == 1 and Path(inputs[0]).parent != fresh and Path(inputs[0]).parent.parent == fresh
    assert (fresh / "int8-check.json").is_file() and not list(fresh.glob("*inferred*"))
    assert not [p for p in fresh.iterdir() if ".tmp-" in p.name]  # the private folder is gone
    assert model.precision == "int8" and model.runtime == "onnx"
