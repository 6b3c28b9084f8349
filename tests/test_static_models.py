import numpy as np
import pytest
from gensim.models import FastText, KeyedVectors
from gensim.models.fasttext import save_facebook_model

from contextlens import OutOfVocabularyError, ProvenanceMismatchError, UnknownModelError, load_static
from contextlens.core.similarity import cosine


def test_glove_default_has_400k_lowercase_words(glove):
    assert len(glove) == 400_000
    assert glove.dim == 50
    v = glove.vector("Bank")
    assert v.provenance.kind == "static" and v.provenance.model == "glove-50d"
    assert np.array_equal(v.values, glove.vector("bank").values)
    assert cosine(glove.vector("bank"), glove.vector("BANK")) == 1.0


def test_glove_neighbours_and_analogy(glove):
    near = [w for w, _ in glove.most_similar("bank", topn=10)]
    assert "banks" in near
    assert glove.analogy("king", "man", "queen", topn=1)[0][0] == "woman"  # king:man::queen:woman
    assert glove.similarity("cat", "dog") > glove.similarity("cat", "finance")


def test_oov_is_an_error_not_a_zero_vector(glove):
    with pytest.raises(OutOfVocabularyError, match="not in the vocabulary of glove-50d"):
        glove.vector("qwzxvbnm")


def test_unknown_static_model():
    with pytest.raises(UnknownModelError, match="unknown static model"):
        load_static("no-such-vectors")


def test_static_and_contextual_vectors_do_not_mix(glove, minilm):
    from contextlens import parse_marked

    enc = minilm.encode(parse_marked("The [bank] called."))
    with pytest.raises(ProvenanceMismatchError):
        cosine(glove.vector("bank"), enc.hidden_state(6))
    with pytest.raises(ProvenanceMismatchError, match="different kinds"):
        cosine(enc.input_row(), enc.hidden_state(0))


@pytest.fixture(scope="module")
def tiny_kv() -> KeyedVectors:
    kv = KeyedVectors(4)
    kv.add_vectors(["river", "bank", "money"], np.array([[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0]], dtype=np.float32))
    return kv


def test_glove_text_loader(tmp_path, tiny_kv):
    path = tmp_path / "vectors.txt"
    path.write_text("".join(f"{w} {' '.join(map(str, tiny_kv[w]))}\n" for w in tiny_kv.index_to_key))
    model = load_static(str(path))
    assert np.allclose(model.vector("bank").values, [1, 1, 0, 0])


@pytest.mark.parametrize(("binary", "suffix"), [(False, ".vec"), (True, ".bin")])
def test_word2vec_loaders(tmp_path, tiny_kv, binary, suffix):
    path = tmp_path / f"w2v{suffix}"
    tiny_kv.save_word2vec_format(str(path), binary=binary)
    model = load_static(str(path))
    assert np.allclose(model.vector("money").values, [0, 1, 1, 0])
    with pytest.raises(OutOfVocabularyError):
        model.vector("shore")


def test_gensim_kv_loader_and_format_prefix(tmp_path, tiny_kv):
    path = tmp_path / "tiny.kv"
    tiny_kv.save(str(path))
    assert load_static(str(path)).vector("river").dim == 4
    txt = tmp_path / "noext"
    tiny_kv.save_word2vec_format(str(txt), binary=False)
    assert load_static(f"word2vec:{txt}").vector("river").dim == 4


def test_fasttext_bin_composes_unseen_words_from_ngrams(tmp_path):
    sentences = [["the", "river", "bank", "flooded"], ["the", "bank", "approved", "the", "loan"]] * 20
    ft = FastText(vector_size=8, window=2, min_count=1, epochs=2, seed=1, workers=1)
    ft.build_vocab(sentences)
    ft.train(sentences, total_examples=len(sentences), epochs=2)
    path = tmp_path / "tiny.bin"
    save_facebook_model(ft, str(path))
    model = load_static(str(path))
    assert model.has_subwords
    unseen = model.vector("riverbanks")  # not in the vocabulary: built from character n-grams
    assert unseen.dim == 8 and np.any(unseen.values)
    assert "riverbanks" not in model.kv.key_to_index


def test_a_vectors_file_rewritten_in_the_same_process_is_read_anew(tmp_path):
    """load_static is cached per process; the cache is keyed on the file's size and mtime too, so
    a file rewritten (a retrained model) does not give back its old vectors."""
    import os

    from contextlens.core.static_models import load_static

    path = tmp_path / "vectors.txt"
    path.write_text("bank 0.1 0.2\nriver 0.3 0.4\n")
    first = load_static(str(path), fmt="glove")
    assert first.vector("bank").values.tolist() == pytest.approx([0.1, 0.2])
    path.write_text("bank 0.9 0.8 0.7\nriver 0.3 0.4 0.5\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    again = load_static(str(path), fmt="glove")
    assert again.vector("bank").values.tolist() == pytest.approx([0.9, 0.8, 0.7])
    assert load_static(str(path), fmt="glove") is again  # unchanged file: the cached copy


def test_a_static_model_still_held_is_handed_out_again_not_read_twice(glove):
    """The static load cache keeps the 4 latest models; one it dropped that is still held (the
    session's glove) comes back as that instance (core/held_models.py)."""
    from contextlens.core import static_models

    static_models._load_static_cached.cache_clear()  # as if four other models had been loaded since
    assert static_models.load_static("glove-50d") is glove
