"""`eval static`: static models beside their teacher on the same work, each number beside its baseline."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.static.evaluate import evaluate_static, kept_share
from contextlens.errors import InputError
from helpers import FT, M2V, W2V, run_cli


@pytest.fixture(scope="module")
def made(made_statics):
    """The word2vec, fastText and distilled models the suite shares (tests/conftest.py)."""
    return [made_statics["word2vec"], made_statics["fasttext"], made_statics["distilled"]]


def test_static_models_are_at_chance_on_wic_and_a_small_table_beside_the_teacher(made, minilm):
    result = evaluate_static(made, [minilm], "quick", wic_teachers=False)
    chance = result.value(system="chance", task="wic", metric="accuracy")
    for name in made:
        assert result.value(system=name, task="wic", metric="accuracy") <= chance  # one vector per word
    assert result.value(system=FT, task="simlex999", metric="coverage") == 1.0  # fastText composes
    assert result.value(system=W2V, task="simlex999", metric="coverage") < 1.0  # word2vec skips
    for dataset in ("simlex999", "wordsim353"):  # the out-of-vocabulary pairs, both ways
        oov = result.value(system=FT, task=dataset, metric="oov_pairs")
        assert oov > 0 and result.value(system=FT, task=dataset, metric="skipped_pairs") == 0  # composed
        assert result.value(system=W2V, task=dataset, metric="skipped_pairs") == oov  # the same Lee vocabulary
        assert result.value(system="minilm", task=dataset, metric="oov_pairs") is None  # a teacher has no vocabulary
    for system in [*made, "minilm"]:
        assert -1 <= result.value(system=system, task="lee", metric="spearman") <= 1
        assert result.value(system=system, task="speed", metric="documents_per_s") > 0
    assert result.value(system="random", task="lee", metric="ndcg@10") < result.value(
        system="minilm", task="lee", metric="ndcg@10"
    )
    # The speed ratio (~300x on the full run, docs/static.md) is a timing, which a loaded machine
    # changes: benchmarks/static_speed.py measures it. Here, what makes it, which no load changes:
    # the student is a table a small fraction of its teacher's weights (4,000 x 64 here: ~1 MB, 90x less).
    student = result.value(system=M2V, task="memory", metric="bytes")
    teacher = result.value(system="minilm", task="memory", metric="bytes")
    assert 0 < 20 * student < teacher
    kept = kept_share(result, M2V, "minilm")
    assert set(kept) == {"simlex999:spearman", "wordsim353:spearman", "lee:spearman", "lee:ndcg@10"}
    json.dumps(result.to_dict(), allow_nan=False)


def test_a_static_model_named_twice_is_refused(made):
    with pytest.raises(InputError, match="`statics` names a model twice"):
        evaluate_static([W2V, W2V], [], "quick")


def test_cli_eval_static_json_and_table(made, tmp_path):
    done = run_cli("eval", "static", "-s", W2V, "-s", M2V, "-m", "minilm", "--quick", "--no-wic-teacher", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["benchmark"] == "static" and {r["system"] for r in doc["rows"]} >= {W2V, M2V, "minilm", "chance"}
    png = tmp_path / "static.png"
    table = run_cli(
        "eval",
        "static",
        "-s",
        W2V,
        "-s",
        M2V,
        "-s",
        FT,
        "-m",
        "minilm",
        "--quick",
        "--no-wic-teacher",
        "--plot",
        str(png),
    )
    assert table.returncode == 0 and f"{M2V} keeps of minilm" in table.stderr
    assert "skipped)" in table.stdout and "composed)" in table.stdout and "common" in table.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    twice = run_cli("eval", "static", "-s", W2V, "-s", W2V, "--quick")
    assert twice.returncode == 2 and "--static names a model twice" in twice.stderr


def test_vector_or_none_is_vector_without_the_unknown_words_hint(made, glove, monkeypatch):
    """The similarity scores and `eval static` skip unknown words through vector_or_none: the
    vector where `vector` gives one, None where it raises, and no close-word search of the
    vocabulary for a message nobody reads."""
    from contextlens.analyses.measures.word_pairs import static_vectors
    from contextlens.core.static_models import load_static
    from contextlens.errors import OutOfVocabularyError

    words = ["bank", "Bank", "zzyzxqv", "banksz"]
    for model in [glove, *(load_static(name) for name in made)]:
        expected = {}
        for word in words:
            try:
                expected[word] = model.vector(word).values
            except OutOfVocabularyError:
                expected[word] = None
        monkeypatch.setattr(model, "_oov_message", lambda key: pytest.fail(f"a hint was built for {key!r}"))
        for word in words:
            got = model.vector_or_none(word)
            assert (got is None) if expected[word] is None else np.array_equal(got.values, expected[word]), word
        assert set(static_vectors(words, model)) == {w for w in words if expected[w] is not None}
        with pytest.raises(InputError, match="empty"):
            model.vector_or_none(" ")
    assert glove.vector_or_none("zzyzxqv") is None and load_static(FT).vector_or_none("zzyzxqv") is not None
