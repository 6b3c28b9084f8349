"""Static models made here: word2vec / fastText trained on the Lee corpus (seconds), a model distilled
from minilm, each saved in the cache under its name and usable as every `static` argument."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.static.train import train_static
from contextlens.core.static_models import DistilledStaticModel, load_static
from contextlens.core.static_store import PROVENANCE, made_dir, made_models
from contextlens.errors import OutOfVocabularyError, ParameterError
from helpers import link_test_cache, run_cli

LEE = dict(epochs=2, min_count=2, dim=32)  # the 60,302-token Lee corpus: well under a second


@pytest.fixture()
def own_cache(tmp_path, monkeypatch):
    """Made models go to a cache of the test's own (the shared test cache is never written)."""
    monkeypatch.setenv("CONTEXTLENS_CACHE", str(tmp_path))
    return tmp_path


def test_word2vec_on_lee_is_saved_with_its_provenance_and_loads_by_name(own_cache):
    result = train_static("lee", "word2vec", name="w2v-lee", **LEE)
    assert result.tokens == 60302 and result.documents == 300 and result.vocabulary > 3000
    assert result.architecture == "skip-gram" and result.reproducible and result.train_seconds >= 0
    folder = made_dir("w2v-lee")
    assert folder is not None and folder == own_cache / "static" / "made" / "w2v-lee"
    provenance = json.loads((folder / PROVENANCE).read_text())
    assert provenance["method"] == "word2vec" and provenance["corpus"] == ["lee"]
    assert provenance["parameters"]["vector_size"] == 32 and provenance["parameters"]["epochs"] == 2
    static = load_static("w2v-lee")
    assert static.dim == 32 and len(static) == result.vocabulary and static.provenance["tokens"] == 60302
    assert static.vector("Police").values.shape == (32,)  # lowercased like its corpus
    assert len(static.most_similar("police", topn=3)) == 3
    with pytest.raises(OutOfVocabularyError):
        static.vector("policemanish")
    assert [m["name"] for m in made_models()] == ["w2v-lee"]
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temporary left


def test_one_worker_is_reproducible_from_the_seed_and_cbow_differs(own_cache):
    a = load_static(train_static("lee", name="a", **LEE).name).kv.vectors.copy()
    b = load_static(train_static("lee", name="b", **LEE).name).kv.vectors.copy()
    c = load_static(train_static("lee", name="c", sg=False, **LEE).name).kv.vectors.copy()
    d = load_static(train_static("lee", name="d", seed=1, **LEE).name).kv.vectors.copy()
    assert np.array_equal(a, b)
    assert not np.allclose(a, c) and not np.allclose(a, d)


def test_fasttext_gives_an_unseen_word_a_vector_from_its_ngrams(own_cache):
    result = train_static("lee", "fasttext", name="ft-lee", buckets=5000, **LEE)
    assert result.parameters["bucket"] == 5000 and result.parameters["min_n"] == 3
    static = load_static("ft-lee")
    assert static.has_subwords and "policemanish" not in static.kv.key_to_index
    unseen = static.vector("policemanish").values
    assert unseen.shape == (32,) and np.any(unseen)
    assert len(static.most_similar("policemanish", topn=3)) == 3


def test_remade_under_the_same_name_is_loaded_anew_and_needs_force(own_cache):
    train_static("lee", name="again", **LEE)
    first = load_static("again").dim
    with pytest.raises(ParameterError, match="already a made model"):
        train_static("lee", name="again", **LEE)
    train_static("lee", name="again", force=True, **{**LEE, "dim": 16})
    assert first == 32 and load_static("again").dim == 16


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"name": "glove-50d"}, "name"),
        ({"name": "../escape"}, "name"),
        ({"name": "ok", "method": "glove"}, "method"),
        ({"name": "ok", "dim": 0}, "dim"),
        ({"name": "ok", "epochs": 0}, "epochs"),
    ],
)
def test_bad_arguments_name_their_parameter(own_cache, kwargs, parameter):
    with pytest.raises(ParameterError) as err:
        train_static("lee", **kwargs)
    assert err.value.parameter == parameter
    assert not (own_cache / "static" / "made").exists() or not list((own_cache / "static" / "made").iterdir())


def test_cli_train_then_neighbors_compare_and_list_take_the_name(own_cache, shared_test_cache, minilm_onnx):
    # compare's lean path and random-word baseline read the suite's minilm export and WordNet scan
    # (linked; the export and the scan were most of this test's CPU, issue 30), not made again here
    link_test_cache(shared_test_cache, own_cache, "wordnet", "onnx/minilm-*")
    done = run_cli("static", "train", "lee", "--name", "w2v", "--epochs", "2", "--min-count", "2", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tokens"] == 60302
    near = run_cli("neighbors", "police", "--static", "w2v", "--json")
    assert near.returncode == 0, near.stderr
    assert json.loads(near.stdout)["static_model"] == "w2v"
    listed = run_cli("static", "list", "--json")
    assert [r["name"] for r in json.loads(listed.stdout)] == ["w2v"]
    compared = run_cli(
        "compare", "The [bank] raised rates.", "The river [bank] flooded.", "-m", "minilm", "--static", "w2v", "--json"
    )
    assert compared.returncode == 0, compared.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["static", "train", "lee", "--name", "glove-50d"], "--name 'glove-50d' is a registered"),
        (["static", "train", "nowhere.txt", "--name", "x"], "corpus 'nowhere.txt'"),
        (["static", "train", "lee", "--name", "x", "--dim", "1"], "--dim must be between"),
        (["static", "train", "lee", "--name", "x", "--method", "glove"], "--method must be one of"),
        (["static", "distill", "minilm", "--name", "x", "--pca-dims", "1"], "--pca-dims must be between"),
        (["neighbors", "bank", "--static", "never-made"], "unknown static model 'never-made'"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(own_cache, args, says):
    done = run_cli(*args)
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_distilled_from_minilm_keeps_its_vocabulary_and_meaning(own_cache, minilm, monkeypatch):
    from contextlens.analyses.static import distill

    # a slice of the vocabulary keeps the test in seconds; the recipe is the same for all of it
    full = distill.vocabulary_tokens
    monkeypatch.setattr(distill, "vocabulary_tokens", lambda tok: full(tok)[:3000])
    result = distill.distill_static(minilm, name="m2v", pca_dims=64)
    assert result.tokens == 3000 and result.dim == 64 and result.teacher == "minilm"
    assert 0.5 < result.explained_variance <= 1
    static = load_static("m2v")
    assert isinstance(static, DistilledStaticModel) and static.provenance["method"] == "distilled"
    assert static.vector("The").values.shape == (64,)  # the teacher's tokenizer lowercases
    assert np.allclose(static.vector("The").values, static.vector("the").values)
    texts = ["the cat sat on the mat", "a dog sat on a rug", "stock markets fell sharply"]
    enc = static.encode(texts)
    assert enc.shape == (3, 64) and np.allclose(np.linalg.norm(enc, axis=1), 1, atol=1e-5)
    assert enc[0] @ enc[1] > enc[0] @ enc[2]
    assert all(w.isalpha() for w, _ in static.most_similar("the", topn=5))


def test_distilled_rows_follow_model2vec_recipe(minilm):
    """The token vector is the teacher's last layer averaged over [CLS] tok [SEP]; PCA keeps the
    variance in order; SIF down-weights the first (most frequent by Zipf) ranks."""
    import torch

    from contextlens.analyses.static.distill import pca, sif_weights, token_embeddings

    tid = minilm.tokenizer.convert_tokens_to_ids("bank")
    ours = token_embeddings(minilm, [tid])[0]
    ids = torch.tensor([[minilm.tokenizer.cls_token_id, tid, minilm.tokenizer.sep_token_id]])
    expected = minilm.run(ids, torch.ones_like(ids), hidden_states=False).last_hidden_state[0].mean(0).numpy()
    assert np.allclose(ours, expected, atol=1e-5)
    rng = np.random.default_rng(0)
    scores, kept = pca(rng.normal(size=(200, 10)) * np.arange(1, 11), 3)
    variances = scores.var(axis=0)
    assert scores.shape == (200, 3) and list(variances) == sorted(variances, reverse=True) and 0 < kept < 1
    w = sif_weights(1000, 1e-4)
    assert w[0] < w[-1] < 1 and np.all(np.diff(w) > 0)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("static", "train", "lee", "--name", "glove-50d"), "registered model's name"),
        (("static", "train", "nowhere.txt", "--name", "x"), "corpus 'nowhere.txt'"),
        (("static", "distill", "nosuchmodel", "--name", "x"), "unknown model"),
        (("static", "distill", "minilm", "--name", "x", "--pca-dims", "1"), "--pca-dims must be between"),
        (("static", "distill", "minilm", "--name", "x", "--sif", "2"), "--sif must be between"),
        (("eval", "static", "-m", "nosuchmodel"), "unknown model"),
    ],
    ids=["train-name", "train-corpus", "distill-model", "distill-pca", "distill-sif", "eval-teacher"],
)
def test_static_usage_errors_answer_without_torch(tmp_path, args, says):
    from test_lazy import _fresh

    done, imported = _fresh(tmp_path, *args)
    assert imported == [], f"{args} imported {imported}"
    assert done.returncode == 2 and says in done.stderr and done.stderr.count("\n") == 1, done.stderr
