import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from contextlens import InputError, compare, parse_marked
from contextlens.analyses.lesson.divergence import same_minus_cross
from contextlens.examples import BANK_BY_SENSE, WORKED_EXAMPLE


def direct_layer_cosines(folder: str, sentences: list[tuple[str, str]]) -> list[float]:
    """The seeds' computation, written out with transformers only (single-token target)."""
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()
    per_sentence = []
    for text, word in sentences:
        enc = tok(text, return_tensors="pt", return_offsets_mapping=True)
        offsets = enc.pop("offset_mapping")[0].tolist()
        start = text.index(word)
        (idx,) = [i for i, (a, b) in enumerate(offsets) if (a, b) == (start, start + len(word))]
        with torch.no_grad():
            states = model(**enc, output_hidden_states=True).hidden_states
        per_sentence.append([h[0, idx] for h in states])
    return [
        torch.nn.functional.cosine_similarity(a, b, dim=0).item()
        for a, b in zip(per_sentence[0], per_sentence[1], strict=True)
    ]


@pytest.mark.parametrize("model_name", ["minilm", "mpnet"])
def test_compare_matches_a_direct_transformers_computation(model_name, request, glove):
    model = request.getfixturevalue(model_name)
    occs = [parse_marked(s) for s in WORKED_EXAMPLE]
    result = compare(occs, model, glove)
    assert len(result.layers) == model.num_layers + 1
    expected = direct_layer_cosines(model.source, [(o.text, "bank") for o in occs])
    assert np.allclose(result.layer_cosines, expected, atol=1e-4)
    assert result.static_cosine == 1.0 and result.input_row_cosine == 1.0
    assert result.layer_cosines[-1] < 0.9
    assert result.most_divergent_layer == result.layers[int(np.argmin(expected))]
    d = result.to_dict()
    assert d["model"] == model.name and d["static_model"] == "glove-50d"
    assert [row["layer"] for row in d["layers"]] == list(range(model.num_layers + 1))


def test_same_sense_closer_than_cross_sense_at_mpnet_last_layer(mpnet):
    labels = [label for label, _ in BANK_BY_SENSE]
    result = compare([parse_marked(s) for _, s in BANK_BY_SENSE], mpnet)
    same, cross = same_minus_cross(result.matrices[-1], labels)
    assert same > cross
    m = result.matrices[-1]
    assert np.allclose(m, m.T) and np.all(np.diag(m) == 1.0)


def test_one_pair_alone_can_mislead_with_minilm(minilm):
    """The reason compare takes several sentences: some same-sense pair scores below some
    cross-sense pair with minilm at its last layer."""
    labels = [label for label, _ in BANK_BY_SENSE]
    m = compare([parse_marked(s) for _, s in BANK_BY_SENSE], minilm).matrices[-1]
    n = len(labels)
    same = [m[i, j] for i in range(n) for j in range(i + 1, n) if labels[i] == labels[j]]
    cross = [m[i, j] for i in range(n) for j in range(i + 1, n) if labels[i] != labels[j]]
    assert min(same) < max(cross)


def test_three_sentences_give_pairwise_matrices(minilm, glove):
    occs = [parse_marked(s) for s in (*WORKED_EXAMPLE, "She deposited cash at the [bank].")]
    result = compare(occs, minilm, glove)
    assert result.matrices.shape == (7, 3, 3)
    d = result.to_dict()
    assert len(d["layers"][0]["matrix"]) == 3 and d["static_matrix"] == [[1.0] * 3] * 3


def test_compare_needs_two_sentences(minilm):
    with pytest.raises(InputError, match="at least two"):
        compare([parse_marked(WORKED_EXAMPLE[0])], minilm)


def test_compare_and_explore_compute_on_provenance_checked_vectors(minilm, monkeypatch):
    """DESIGN: an input row is compared with an input row, a hidden state with a hidden state of
    the same model. compare and explore build their matrices through the checked cosine_matrix."""
    from contextlens.analyses.lesson.polysemy import explore
    from contextlens.core import similarity
    from contextlens.errors import ProvenanceMismatchError

    seen: list[tuple[str, str]] = []
    real = similarity.check_comparable

    def spy(a, b, names=("a", "b")):
        seen.append((a.provenance.kind, b.provenance.kind))
        return real(a, b, names)

    monkeypatch.setattr(similarity, "check_comparable", spy)
    compare([parse_marked(s) for s in WORKED_EXAMPLE], minilm)
    assert ("input-row", "input-row") in seen and ("hidden-state", "hidden-state") in seen
    assert all(a == b for a, b in seen)
    seen.clear()
    explore(["bank"], minilm, permutations=10)
    assert seen and all(k == ("hidden-state", "hidden-state") for k in seen)

    def refuse(a, b, names=("a", "b")):
        raise ProvenanceMismatchError("refused")

    monkeypatch.setattr(similarity, "check_comparable", refuse)
    with pytest.raises(ProvenanceMismatchError):
        compare([parse_marked(s) for s in WORKED_EXAMPLE], minilm)
