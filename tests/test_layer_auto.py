"""`--layer auto`: one resolver, the layer the matching benchmark chose on dev data (issue 19)."""

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from contextlens import InputError
from contextlens.analyses.lesson.polysemy import explore
from contextlens.analyses.lesson.probe import probe
from contextlens.analyses.lesson.same_sense import same_sense_rule
from contextlens.analyses.measures import layer_choice as lc
from contextlens.cli import app
from contextlens.core.occurrences import parse_marked
from tests.helpers import run_cli

RIVER = "The river [bank] flooded."


@pytest.fixture
def quick_choices(monkeypatch):
    """auto chooses on the quick benchmark subset here (seconds, not the full suite's minutes)."""
    monkeypatch.setattr(lc, "DEFAULT_SIZE", "quick")


def test_sense_choice_is_eval_wics_dev_layer(minilm):
    wic = json.loads(run_cli("eval", "wic", "--quick", "--model", "minilm", "--json").stdout)
    choice = lc.choose_layer(minilm, "sense", size="quick")
    assert choice.layer == wic["meta"]["best_layer"]["layer_by_dev"]
    rows = {(r["system"], r["layer"], r["split"], r["metric"]): r["value"] for r in wic["rows"]}
    assert choice.score == pytest.approx(rows["minilm", choice.layer, "dev", "accuracy"])
    assert choice.label() == f"layer {choice.layer} (auto: best sense separation on dev lemmas (eval wic))"
    assert choice.to_dict()["auto"] is True and choice.to_dict()["task"] == "sense"
    assert same_sense_rule(minilm, "auto", "quick").layer == choice.layer  # same-sense uses the same resolver


def test_resolver_reads_numbers_and_refuses_the_rest(minilm):
    assert lc.resolve_layer(minilm, -1) == (6, None)
    assert lc.resolve_layer(minilm, " 3 ") == (3, None)
    with pytest.raises(InputError, match="`layer` must be auto or a layer number"):
        lc.resolve_layer(minilm, "top")
    with pytest.raises(InputError, match="task"):
        lc.choose_layer(minilm, "parsing")


def test_the_choice_is_cached_on_disk(minilm, monkeypatch):
    first = lc.choose_layer(minilm, "sense", size="quick")
    lc._memory.clear()
    from contextlens.analyses.benchmarks import suite

    monkeypatch.setattr(suite, "encode_suite", lambda *a, **k: pytest.fail("re-encoded"))
    again = lc.choose_layer(minilm, "sense", size="quick")
    # who computed it is stored; the export check beside it is this machine's now (another worker
    # may have exported minilm in between: a clean-clone CI saw None, then 1.05e-05)
    assert again.made_on is not None and first.made_on is not None
    assert again.made_on.backend == first.made_on.backend
    assert dataclasses.replace(again, made_on=None) == dataclasses.replace(first, made_on=None)


def test_retrieval_choice_uses_dev_synsets_outside_eval_retrievals(minilm):
    from contextlens.analyses.measures.wordnet_task import load_wordnet_task

    task = lc.retrieval_dev_task("quick")
    assert len(task.synsets) == 40 and not set(task.synsets) & set(load_wordnet_task(100, 0).synsets)
    choice = lc.choose_layer(minilm, "retrieval", size="quick")
    assert 0 <= choice.layer <= 6 and 0 < choice.score <= 1 and "retrieval" in choice.label()


def test_explore_and_probe_take_auto_and_say_so(minilm, quick_choices):
    layer = lc.choose_layer(minilm, "sense").layer
    result = explore(["bank"], minilm, layer="auto", permutations=10)
    assert result.layer == layer and result.to_dict()["layer_choice"]["reason"].startswith("best sense separation")
    assert "(auto: best sense separation on dev lemmas" in result.layer_label
    assert explore(["bank"], minilm, layer=2, permutations=10).to_dict()["layer_choice"] is None
    probed = probe([parse_marked(RIVER)], ["shore", "deposit"], minilm, layer="auto")
    assert probed.layer == layer and probed.to_dict()["layer_choice"]["layer"] == layer


def test_cli_layer_auto_is_printed_as_such(quick_choices):
    runner = CliRunner()
    out = runner.invoke(app, ["explore", "bank", "-m", "minilm", "--permutations", "10", "--layer", "auto"])
    assert out.exit_code == 0, out.output
    assert "(auto: best sense separation on dev" in " ".join(out.stdout.split())
    out = runner.invoke(app, ["probe", RIVER, "--anchors", "shore", "deposit", "-m", "minilm", "--layer", "auto"])
    assert out.exit_code == 0, out.output
    assert "(auto: best sense separation on dev lemmas (eval wic))" in " ".join(out.stdout.split())


@pytest.mark.parametrize("command", [("explore", "bank"), ("probe", RIVER, "--anchors", "shore")])
def test_cli_bad_layer_is_one_line_exit_2(command):
    out = run_cli(*command, "-m", "minilm", "--layer", "top")
    assert out.returncode == 2 and out.stderr.strip() == "error: --layer must be auto or a layer number, got 'top'"


@pytest.fixture(scope="module")
def bank_folder(tmp_path_factory, minilm):
    from contextlens.analyses.corpus.extract import extract_corpus
    from tests.test_senses import MONEY
    from tests.test_senses import RIVER as RIVER_SENTENCES

    corpus = tmp_path_factory.mktemp("auto") / "bank.txt"
    corpus.write_text("\n".join(RIVER_SENTENCES + MONEY) + "\n")
    every = corpus.parent / "every"
    extract_corpus(str(corpus), ["bank"], every, model="minilm", layers=list(range(7)))
    other = corpus.parent / "other"  # every layer but the one auto picks
    chosen = lc.choose_layer(minilm, "sense", size="quick").layer
    extract_corpus(str(corpus), ["bank"], other, model="minilm", layers=[x for x in range(7) if x != chosen])
    return every, other


def test_folder_commands_take_auto(bank_folder, minilm, quick_choices):
    from contextlens.analyses.corpus.manifest import pick_layer, require_manifest
    from contextlens.analyses.corpus.senses import induce_senses

    every, other = bank_folder
    layer = lc.choose_layer(minilm, "sense").layer
    assert pick_layer(require_manifest(every), "auto", every) == layer
    assert induce_senses(every, "bank", "auto", k=2).layer == layer
    with pytest.raises(InputError, match="did not extract"):
        pick_layer(require_manifest(other), "auto", other)
    out = CliRunner().invoke(app, ["senses", "induce", str(every), "--word", "bank", "--layer", "auto", "--k", "2"])
    assert out.exit_code == 0, out.output
    assert f"layer {layer} (auto: best sense separation" in " ".join(out.stdout.split())
    out = CliRunner().invoke(app, ["corpus", "search", str(every), "--like", RIVER, "--layer", "auto", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["layer"] == layer


def test_index_build_layer_auto_uses_the_retrieval_choice(tmp_path, minilm, quick_choices):
    docs = tmp_path / "docs.txt"
    docs.write_text("The river bank flooded.\nShe paid at the bank.\nA spring of fresh water.\n")
    layer = lc.choose_layer(minilm, "retrieval").layer
    out = CliRunner().invoke(
        app, ["index", "build", str(docs), "--out", str(tmp_path / "ix"), "-m", "minilm", "--kind", "hidden-mean",
              "--layer", "auto", "--json"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout[out.stdout.index("{") :])
    assert doc["layer_choice"]["layer"] == layer and doc["layer_choice"]["task"] == "retrieval"
    assert doc["encoder"]["layer"] == layer and doc["encoder"]["kind"] == "hidden-mean"
    refused = run_cli("index", "build", str(docs), "--out", str(tmp_path / "iy"), "-m", "minilm", "--layer", "auto")
    assert refused.returncode == 2 and "--layer auto is for --kind hidden-mean" in refused.stderr
