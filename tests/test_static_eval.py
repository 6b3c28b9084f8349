"""`eval static`: static models beside their teacher on the same work, each number beside its baseline."""

from __future__ import annotations

import json

import pytest

from contextlens.analyses.static.evaluate import evaluate_static, kept_share
from contextlens.analyses.static.train import train_static
from contextlens.errors import InputError
from helpers import run_cli


@pytest.fixture(scope="module")
def made(tmp_path_factory, minilm):
    """A word2vec and a fastText model on Lee, and a static model distilled from part of minilm's
    vocabulary, in a cache of this module's own (made once)."""
    from contextlens.analyses.static import distill

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONTEXTLENS_CACHE", str(tmp_path_factory.mktemp("static-eval")))
        train_static("lee", name="w2v", epochs=2, min_count=2, dim=32)
        train_static("lee", "fasttext", name="ft", epochs=2, min_count=2, dim=32, buckets=5000)
        full = distill.vocabulary_tokens
        patch.setattr(distill, "vocabulary_tokens", lambda tok: full(tok)[:4000])
        distill.distill_static(minilm, name="m2v", pca_dims=64)
        patch.setattr(distill, "vocabulary_tokens", full)
        yield ["w2v", "ft", "m2v"]


def test_static_models_are_at_chance_on_wic_and_much_faster_than_the_teacher(made, minilm):
    result = evaluate_static(made, [minilm], "quick", wic_teachers=False)
    chance = result.value(system="chance", task="wic", metric="accuracy")
    for name in made:
        assert result.value(system=name, task="wic", metric="accuracy") <= chance  # one vector per word
    assert result.value(system="ft", task="simlex999", metric="coverage") == 1.0  # fastText composes
    assert result.value(system="w2v", task="simlex999", metric="coverage") < 1.0  # word2vec skips
    for system in [*made, "minilm"]:
        assert -1 <= result.value(system=system, task="lee", metric="spearman") <= 1
        assert result.value(system=system, task="speed", metric="documents_per_s") > 0
    assert result.value(system="random", task="lee", metric="ndcg@10") < result.value(
        system="minilm", task="lee", metric="ndcg@10"
    )
    student = result.value(system="m2v", task="speed", metric="documents_per_s")
    teacher = result.value(system="minilm", task="speed", metric="documents_per_s")
    assert student > 20 * teacher  # measured ~300x on the full run (docs/static.md)
    kept = kept_share(result, "m2v", "minilm")
    assert set(kept) == {"simlex999:spearman", "wordsim353:spearman", "lee:spearman", "lee:ndcg@10"}
    json.dumps(result.to_dict(), allow_nan=False)


def test_a_static_model_named_twice_is_refused(made):
    with pytest.raises(InputError, match="`statics` names a model twice"):
        evaluate_static(["w2v", "w2v"], [], "quick")


def test_cli_eval_static_json_and_table(made, tmp_path):
    done = run_cli("eval", "static", "-s", "w2v", "-s", "m2v", "-m", "minilm", "--quick", "--no-wic-teacher", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["benchmark"] == "static" and {r["system"] for r in doc["rows"]} >= {"w2v", "m2v", "minilm", "chance"}
    png = tmp_path / "static.png"
    table = run_cli(
        "eval", "static", "-s", "w2v", "-s", "m2v", "-m", "minilm", "--quick", "--no-wic-teacher", "--plot", str(png)
    )
    assert table.returncode == 0 and "m2v keeps of minilm" in table.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    twice = run_cli("eval", "static", "-s", "w2v", "-s", "w2v", "--quick")
    assert twice.returncode == 2 and "--static names a model twice" in twice.stderr
