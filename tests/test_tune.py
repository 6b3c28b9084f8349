"""`contextlens tune`: a tiny real tuning run on minilm (a few steps, a handful of lemmas) proving
the plumbing, the seed, the split check, the resume, the registration and the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from contextlens.analyses.benchmarks.suite import build_suite, build_wic_set
from contextlens.analyses.tuning.data import build_tuning_data
from contextlens.analyses.tuning.folder import work_dir
from contextlens.analyses.tuning.train import tune
from contextlens.core.resources import REGISTRY, cache_dir, resolve_contextual, sha256_file
from contextlens.core.tuned_store import WEIGHTS_FILE, keep_registered_weights, read_record, register, tuned_models
from contextlens.errors import InputError, ParameterError
from helpers import run_cli
from tests.test_doc_commands import documented

# blocks 1..2 learn, for 3 steps of 3 lemmas; the last step's weights are kept, so that equal weights
# prove equal training (the best dev evaluation could be the base model's own)
TINY = dict(layer=2, max_lemmas=10, max_steps=3, lemmas_per_step=3, eval_every=2, checkpoint_every=1,
            keep_best=False, learning_rate=1e-3, seed=3)  # fmt: skip
NAME = "test-tune-tiny"


def weights(result) -> dict[str, torch.Tensor]:
    return load_file(f"{result.path}/model.safetensors")


@pytest.fixture(scope="module")
def tiny():
    return tune("minilm", NAME, force=True, restart=True, export_onnx=False, **TINY)


@pytest.fixture(scope="module")
def base_weights() -> dict[str, torch.Tensor]:
    _name, source, _revision = resolve_contextual("minilm")
    return load_file(f"{source}/model.safetensors")


def test_the_run_learns_blocks_up_to_its_layer_and_nothing_else(tiny, base_weights):
    tuned = weights(tiny)
    assert tiny.steps == 3 and tiny.stopped == "steps" and len(tiny.history) == 4  # step 0 is the base's dev score
    assert [h["dev_auc"] is not None for h in tiny.history] == [True, False, True, True]
    assert all(h["loss"] > 0 for h in tiny.history[1:])
    assert set(tuned) <= set(base_weights)  # the same tensors (minilm's file also holds its position ids)
    changed = {k for k in tuned if not torch.equal(base_weights[k], tuned[k])}
    assert changed and all(k.startswith(("encoder.layer.0.", "encoder.layer.1.")) for k in changed)
    assert torch.equal(tuned["embeddings.word_embeddings.weight"], base_weights["embeddings.word_embeddings.weight"])


def test_same_seed_same_weights_other_seed_other_weights(tiny):
    again = tune("minilm", NAME + "-again", force=True, restart=True, export_onnx=False, **TINY)
    assert again.weights_sha256 == tiny.weights_sha256
    other = tune("minilm", NAME + "-seed4", force=True, restart=True, export_onnx=False, **{**TINY, "seed": 4})
    assert other.weights_sha256 != tiny.weights_sha256


def test_no_benchmark_lemma_or_sentence_is_in_the_tuning_data():
    data = build_tuning_data(seed=0)
    assert data.check.clean and data.check.test_lemmas_in_tuning == 0 and data.check.test_sentences_in_tuning == 0
    lemmas = {g.key[0] for g in data.train + data.dev}
    texts = {e.text.lower() for g in data.train + data.dev for e in g.examples}
    wic = build_wic_set("full").wic.pairs  # counted again here from the benchmarks' own builders
    wsd = build_suite("quick").wsd.items
    assert not lemmas & {p.lemma for p in wic} and not lemmas & {i.example.lemma for i in wsd}
    assert not texts & {t.lower() for p in wic for t in (p.first.text, p.second.text)}
    assert not texts & {i.example.text.lower() for i in wsd}
    assert not {g.key for g in data.train} & {g.key for g in data.dev}
    assert data.check.benchmark_lemmas >= len({p.lemma for p in wic})
    assert len(data.train) > 500  # the full pool, not an empty one that passes trivially


def test_an_interrupted_run_resumes_to_the_same_weights(tiny):
    name = NAME + "-resumed"

    def stop_at_two(step) -> None:
        if step.step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tune("minilm", name, force=True, restart=True, export_onnx=False, on_step=stop_at_two, **TINY)
    assert (work_dir(name) / "checkpoint.pt").is_file()
    with pytest.raises(ParameterError, match="restart"):  # other settings: refused, not mixed in
        tune("minilm", name, force=True, export_onnx=False, **{**TINY, "learning_rate": 2e-3})
    resumed = tune("minilm", name, force=True, export_onnx=False, **TINY)
    assert resumed.resumed_from == 2 and resumed.steps == 3
    assert resumed.weights_sha256 == tiny.weights_sha256
    assert not work_dir(name).exists()


def test_registered_with_provenance_and_usable_as_model(tiny):
    record = next(r for r in tuned_models(cache_dir()) if r["name"] == NAME)
    assert record["base"] == "minilm" and record["base_sha256"] == REGISTRY["minilm"].sha256
    assert record["seed"] == 3 and record["steps"] == 3 and record["split_hash"] == tiny.data["split_hash"]
    assert record["weights_sha256"] == tiny.weights_sha256
    listed = run_cli("models", "--json")
    assert listed.returncode == 0, listed.stderr
    row = next(r for r in json.loads(listed.stdout)["models"] if r["name"] == NAME)
    assert row["kind"] == "contextual (made here)" and row["path"] == tiny.path
    s1, s2 = "The river [bank] flooded.", "The [bank] approved my loan."
    ran = run_cli("compare", s1, s2, "-m", NAME, "--runtime", "torch", "--json")
    assert ran.returncode == 0, ran.stderr
    shipped = json.loads(run_cli("compare", s1, s2, "-m", "minilm", "--runtime", "torch", "--json").stdout)
    tuned = json.loads(ran.stdout)
    assert tuned["model"] == NAME
    assert json.dumps(tuned["layers"]) != json.dumps(shipped["layers"])  # the tuned weights ran, not minilm's


def test_a_retune_to_the_same_bytes_keeps_the_weight_files_date_and_other_bytes_replace_it(tmp_path):
    """The suite re-tunes its model in place every run (`force`), and the ONNX export is keyed on the
    weight file's date: the same bytes keep the registered file (same inode, same date), so the
    export is found again; a file whose bytes differ from its folder's digest is replaced."""

    def built(payload: bytes) -> tuple[Path, str]:
        folder = tmp_path / f"build-{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        (folder / WEIGHTS_FILE).write_bytes(payload)
        (folder / "config.json").write_text("{}")
        return folder, sha256_file(folder / WEIGHTS_FILE)

    cache = tmp_path / "cache"
    first, digest = built(b"tuned weights" * 100)
    path = register(cache, "kept", first, digest, {"weights_sha256": digest})
    before = (path / WEIGHTS_FILE).stat()
    again, same = built(b"tuned weights" * 100)
    assert same == digest and register(cache, "kept", again, same, {"weights_sha256": same}) == path
    after = (path / WEIGHTS_FILE).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert read_record(cache, "kept")["weights_sha256"] == digest and not again.exists()
    spare, _ = built(b"tuned weights" * 100)  # until the switch, the registered folder keeps its file
    assert keep_registered_weights(path, spare, digest) and (path / WEIGHTS_FILE).is_file()
    assert (spare / WEIGHTS_FILE).stat().st_ino == after.st_ino
    (path / WEIGHTS_FILE).write_bytes(b"damaged" * 100)  # the folder's name says `digest`, its file does not
    damaged = (path / WEIGHTS_FILE).stat()
    fixed, _ = built(b"tuned weights" * 100)
    register(cache, "kept", fixed, digest, {"weights_sha256": digest})
    assert sha256_file(path / WEIGHTS_FILE) == digest and (path / WEIGHTS_FILE).stat().st_ino != damaged.st_ino


def test_the_tuned_folder_takes_the_lean_path(tiny):
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.onnx_graphs import EXACT, SOURCE_FILE, export_folder, export_summary

    lean = load_contextual(NAME, "fp32", "onnx")
    reference = load_contextual(NAME, "fp32", "torch")
    text = "She sat on the [bank] of the river."
    a, b = lean.encode(text, layers=[2]), reference.encode(text, layers=[2])
    assert float(abs(a.hidden[0] - b.hidden[0]).max()) < EXACT
    summary = export_summary(NAME, tiny.path)
    assert summary["fp32"] is not None and summary["fp32"]["max_abs_diff"] < EXACT
    # the export says what it was made from, so that the next export prunes it once that is gone
    record = json.loads((export_folder(NAME, tiny.path) / SOURCE_FILE).read_text())
    assert Path(record["source"]) == Path(tiny.path) and record["weights"]


def test_the_documented_lines_run_on_a_tuned_model(tiny):
    """docs/tuning.md's `eval wic` (with --quick) and `same-sense` lines, taken from the doc, on the
    tuned model of this file in the place of minilm-senses."""
    for words, _ in (
        documented("docs/tuning.md", "eval wic -m minilm-senses"),
        documented(
            "docs/tuning.md", 'same-sense "The [bank] approved it." "We fished from the [bank]." -m minilm-senses'
        ),
    ):
        words = [NAME if w == "minilm-senses" else w for w in words]
        done = run_cli(*words)
        assert done.returncode == 0, f"{words}: {done.stderr}"
        assert NAME in done.stdout + done.stderr, f"{words}: {done.stdout}"  # it ran the tuned model, and said so
    assert "same sense:" in done.stdout or "different senses:" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--layer", "0"], "layer 0 is the embedding output"),
        (["--layer", "9"], "layer"),
        (["--lr", "0"], "--lr"),
        (["--max-lemmas", "1"], "--max-lemmas"),
        (["--temperature", "-1"], "--temperature"),
    ],
)
def test_impossible_settings_are_one_line_refusals(args, says):
    done = run_cli("tune", "minilm", "--name", "test-tune-refused", *args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


def test_names_and_models_that_cannot_be_tuned_are_refused(tiny):
    for args, says in [
        (["minilm", "--name", "MiniLM"], "shipped model"),
        (["minilm", "--name", NAME], "already a tuned model"),
        (["minilm", "--name", "../x"], "--name"),
        (["glove-50d", "--name", "test-tune-refused"], "static model"),
    ]:
        done = run_cli("tune", *args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    with pytest.raises(ParameterError, match="layer"):
        tune("minilm", "test-tune-refused", layer=7)
    with pytest.raises(InputError, match="unknown tuning setting"):
        tune("minilm", "test-tune-refused", learning_rat=1e-3)


def test_the_command_tunes_and_says_what_it_made():
    """docs/tuning.md's `tune` line as the doc's one-step variant, under a test name."""
    words, _ = documented("docs/tuning.md", "tune minilm --name minilm-senses")
    words[words.index("--name") + 1] = NAME + "-cli"
    done = run_cli(*words, "--force", "--restart", "--json")
    assert done.returncode == 0, done.stderr
    made = json.loads(done.stdout)
    assert made["name"] == NAME + "-cli" and made["layer"] == 1 and made["steps"] == 1
    check = made["data"]["check"]
    assert check["test_lemmas_in_tuning"] == 0 and check["test_sentences_in_tuning"] == 0
    assert resolve_contextual(NAME + "-cli")[1] == made["path"]


def test_the_report_says_which_layers_moved_and_what_it_cost(tiny):
    done = run_cli("tune", "report", NAME, "--quick", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    cka = {r["layer"]: r["cka"] for r in report["cka"]}
    assert sorted(cka) == list(range(7)) and [r["layer"] for r in report["wic"]] == list(range(7))
    assert cka[0] == pytest.approx(1.0, abs=1e-9)  # the input embedding table did not learn
    assert all(cka[layer] < 1 - 1e-6 for layer in range(1, 7))  # blocks 1-2 learned; 3-6 read their new output
    for who in ("base", "tuned"):
        assert 0 < report["lee"][who]["ndcg@10"] <= 1 and -1 <= report["lee"][who]["spearman"] <= 1
    assert {r["dataset"] for r in report["similarity"]} == {"simlex999", "wordsim353"}
    bank, spread = report["bank"], report["anisotropy"]
    assert [r["layer"] for r in bank] == [r["layer"] for r in spread] == list(range(7))
    assert bank[0]["base_cosine"] == pytest.approx(bank[0]["tuned_cosine"], abs=1e-6)  # layer 0 did not learn
    assert bank[6]["base_cosine"] != pytest.approx(bank[6]["tuned_cosine"], abs=1e-6)
    for row, base in zip(bank, spread, strict=True):
        for who in ("base", "tuned"):
            assert row[f"{who}_minus_random"] == pytest.approx(row[f"{who}_cosine"] - base[f"{who}_random_mean"])
    refused = run_cli("tune", "report", "no-such-tuned-model")
    assert refused.returncode == 2 and "needs a tuned model's name" in refused.stderr


def test_prepare_takes_a_tuned_model_and_still_refuses_others(tiny):
    from contextlens.analyses.lesson.prepare import check_models

    assert check_models([NAME]) == [NAME]
    with pytest.raises(InputError, match="not a shipped encoder"):
        check_models(["no-such-tuned-model"])


def test_gloss_views_join_train_only_and_name_no_benchmark_lemma():
    from contextlens.analyses.tuning.data import held_out
    from contextlens.core import wordnet as wn

    plain = build_tuning_data(max_lemmas=20, seed=1)
    glossed = build_tuning_data(max_lemmas=20, seed=1, glosses=True)
    assert [g.examples for g in glossed.dev] == [g.examples for g in plain.dev]  # dev scores stay comparable
    assert len(glossed.train) > len(plain.train) and glossed.check.clean
    assert glossed.split_hash != plain.split_hash
    views = [e for g in glossed.train for e in g.examples if e.text.startswith(f"{e.lemma}: ")]
    assert views and all(e.start == 0 and e.word == e.lemma for e in views)
    benchmark = held_out().lemmas
    for view in views:
        assert not {n.lower() for n in wn.wordnet().synset(view.synset).lemma_names()} & benchmark
