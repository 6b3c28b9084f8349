"""Wrong calls on the public Python API: a typed error, one line, naming the parameter.

Every public name of ``contextlens.__all__`` is either called wrongly below (wrong types, None,
empty, NaN, out of range) or listed in NOT_CALLED with the reason. A wrong call must raise a
:class:`~contextlens.errors.ContextlensError` subclass whose message names the Python parameter
and what was expected: never a TypeError, IndexError, AttributeError or KeyError from inside,
never a silent answer (a float layer written into a provenance, a str read as its letters).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

import contextlens
from contextlens import (
    ContextlensError,
    InputError,
    Occurrence,
    Provenance,
    ProvenanceMismatchError,
    StaticModelError,
    Vector,
    compare,
    cosine,
    cosine_matrix,
    find_word,
    load_contextual,
    load_static,
    locate,
    parse_marked,
    same_sense,
)
from tests.helpers import run_cli

FIN, RIVER = "The [bank] approved the loan.", "The river [bank] flooded."
NAN = float("nan")


@pytest.fixture(scope="module")
def c(minilm, glove) -> SimpleNamespace:
    """What the wrong calls are made on: the shipped minilm and glove-50d, one occurrence, its encoding."""
    occ = locate(FIN)
    enc = minilm.encode(occ, layers=[0, 3])
    prov = Provenance("minilm", "static")
    return SimpleNamespace(m=minilm, g=glove, occ=occ, enc=enc, prov=prov, ok=Vector(np.ones(2, np.float32), prov))


def _nan_vector(prov: Provenance) -> Vector:
    return Vector(np.array([NAN, 1.0], dtype=np.float32), prov)


# (public name, what is wrong, the call, a fragment the message must hold: the parameter's name)
WRONG_CALLS = [
    # analyses exported from the package (the notebook's names)
    ("attend", "model=42", lambda c: contextlens.attend([locate(FIN)], 42), "expected a contextual model"),
    ("compare_layers", "model_a=42", lambda c: contextlens.compare_layers(42), "expected a contextual model"),
    (
        "contextuality_of_corpus",
        "a missing corpus",
        lambda c: contextlens.contextuality_of_corpus("/no/such/corpus"),
        "nor an installed corpus",
    ),
    ("distill_static", "model=42", lambda c: contextlens.distill_static(42, name="x"), "expected a contextual model"),
    ("estimate", "config='flat'", lambda c: contextlens.estimate("flat", 1000, 384), "`config` must be an IndexConfig"),
    ("evaluate_lee", "model=42", lambda c: contextlens.evaluate_lee(42), "expected a contextual model"),
    (
        "evaluate_static",
        "no statics",
        lambda c: contextlens.evaluate_static([]),
        "give at least one static model (`statics`)",
    ),
    ("evaluate_wordnet", "model=42", lambda c: contextlens.evaluate_wordnet(42), "expected a contextual model"),
    ("explore", "model=42", lambda c: contextlens.explore(["bank"], 42), "expected a contextual model"),
    (
        "export_projector",
        "a folder that is no extraction",
        lambda c: contextlens.export_projector("/no/such/extraction"),
        "is not a corpus extraction folder",
    ),
    ("extract_corpus", "no targets", lambda c: contextlens.extract_corpus("lee", [], "/no/such/out"), "`targets`"),
    (
        "open_folder",
        "a folder that is no extraction",
        lambda c: contextlens.open_folder("/no/such/extraction"),
        "is not a corpus extraction folder",
    ),
    (
        "induce_senses",
        "a folder that is no extraction",
        lambda c: contextlens.induce_senses("/no/such/extraction", "bank"),
        "is not a corpus extraction folder",
    ),
    ("input_row_share", "model=42", lambda c: contextlens.input_row_share(42, ["a b"]), "expected a contextual model"),
    ("load_pairs", "a missing file", lambda c: contextlens.load_pairs("/no/such/pairs.tsv"), "does not exist"),
    ("make_encoder", "model=42", lambda c: contextlens.make_encoder(42), "expected a contextual model"),
    ("measure_cost", "one sentence", lambda c: contextlens.measure_cost(c.m, c.g, ["a"]), "at least 8 sentences"),
    ("neighbors", "static=42", lambda c: contextlens.neighbors(42, "bank"), "expected a static model"),
    (
        "pg_estimate",
        "config='hnsw'",
        lambda c: contextlens.pg_estimate("hnsw", 1000, 384),
        "`config` must be a PgIndexConfig",
    ),
    ("probe", "model=42", lambda c: contextlens.probe([locate(FIN)], ["river"], 42), "expected a contextual model"),
    ("random_word_baseline", "model=42", lambda c: contextlens.random_word_baseline(42), "expected a contextual model"),
    ("rank_pairs", "model=42", lambda c: contextlens.rank_pairs([], 42, c.g), "expected a contextual model"),
    ("run_contextuality", "model=42", lambda c: contextlens.run_contextuality(42), "expected a contextual model"),
    ("run_layer_probes", "model=42", lambda c: contextlens.run_layer_probes(42), "expected a contextual model"),
    ("run_lesson", "model=42", lambda c: contextlens.run_lesson(42, c.g), "expected a contextual model"),
    ("run_similarity", "model=42", lambda c: contextlens.run_similarity(42, c.g), "expected a contextual model"),
    ("run_wic", "model=42", lambda c: contextlens.run_wic(42, c.g), "expected a contextual model"),
    ("run_wsd", "model=42", lambda c: contextlens.run_wsd(42), "expected a contextual model"),
    ("run_wsi", "model=42", lambda c: contextlens.run_wsi(42, None), "expected a contextual model"),
    (
        "search_index",
        "a missing folder",
        lambda c: contextlens.search_index("/no/such/index", "money"),
        "does not exist",
    ),
    (
        "search_occurrences",
        "a folder that is no extraction",
        lambda c: contextlens.search_occurrences("/no/such/extraction", RIVER),
        "is not a corpus extraction folder",
    ),
    (
        "sense_map",
        "a folder that is no extraction",
        lambda c: contextlens.sense_map("/no/such/extraction", "bank"),
        "is not a corpus extraction folder",
    ),
    ("side_by_side", "one model", lambda c: contextlens.side_by_side([c.m], len), "side by side takes two models"),
    ("three_kinds", "one text", lambda c: contextlens.three_kinds([FIN], c.m, c.g), "give exactly two texts"),
    ("trace", "model=42", lambda c: contextlens.trace(locate(FIN), 42), "expected a contextual model"),
    (
        "train_static",
        "method='glove'",
        lambda c: contextlens.train_static("installed", "glove", name="x"),
        "method must be one of",
    ),
    ("tune", "layer=0", lambda c: contextlens.tune("minilm", "x", layer=0), "layer must be a hidden-state layer 1..6"),
    ("tune", "name=None", lambda c: contextlens.tune("minilm", None), "name is required"),
    # StaticModel
    ("StaticModel", "vector(None)", lambda c: c.g.vector(None), "word must be a str"),
    ("StaticModel", "vector(3)", lambda c: c.g.vector(3), "word must be a str"),
    ("StaticModel", "vector('')", lambda c: c.g.vector(""), "empty"),
    ("StaticModel", "similarity(None, w)", lambda c: c.g.similarity(None, "bank"), "word must be a str"),
    ("StaticModel", "most_similar topn='5'", lambda c: c.g.most_similar("bank", topn="5"), "topn"),
    ("StaticModel", "most_similar topn=2.5", lambda c: c.g.most_similar("bank", topn=2.5), "topn"),
    ("StaticModel", "most_similar topn=True", lambda c: c.g.most_similar("bank", topn=True), "topn"),
    ("StaticModel", "most_similar topn=0", lambda c: c.g.most_similar("bank", topn=0), "topn must be at least 1"),
    ("StaticModel", "most_similar topn=nan", lambda c: c.g.most_similar("bank", topn=NAN), "topn"),
    ("StaticModel", "most_similar(5)", lambda c: c.g.most_similar(5), "positive"),
    ("StaticModel", "most_similar([None])", lambda c: c.g.most_similar([None]), "positive[0]"),
    ("StaticModel", "most_similar(None)", lambda c: c.g.most_similar(None), "at least one word"),
    ("StaticModel", "most_similar negative=3", lambda c: c.g.most_similar("bank", negative=3), "negative"),
    ("StaticModel", "analogy(None, ...)", lambda c: c.g.analogy(None, "man", "queen"), "negative[0]"),
    ("StaticModel", "analogy topn=None", lambda c: c.g.analogy("king", "man", "queen", topn=None), "topn"),
    # ContextualModel
    ("ContextualModel", "encode(None)", lambda c: c.m.encode(None), "occurrence: expected an Occurrence"),
    ("ContextualModel", "encode(42)", lambda c: c.m.encode(42), "occurrence: expected an Occurrence"),
    ("ContextualModel", "encode(unmarked str)", lambda c: c.m.encode("The bank approved."), "no [marked] target"),
    ("ContextualModel", "encode layers='all'", lambda c: c.m.encode(c.occ, layers="all"), "layers must be a list"),
    ("ContextualModel", "encode layers=3", lambda c: c.m.encode(c.occ, layers=3), "layers=[3]"),
    ("ContextualModel", "encode layers=[99]", lambda c: c.m.encode(c.occ, layers=[99]), "out of range"),
    ("ContextualModel", "encode layers=[]", lambda c: c.m.encode(c.occ, layers=[]), "no layers"),
    ("ContextualModel", "encode pooling='x'", lambda c: c.m.encode(c.occ, pooling="x"), "pooling"),
    (
        "ContextualModel",
        "encode_occurrences(occ)",
        lambda c: c.m.encode_occurrences(c.occ),
        "occurrences must be a list",
    ),
    ("ContextualModel", "encode_occurrences(None)", lambda c: c.m.encode_occurrences(None), "occurrences must be"),
    ("ContextualModel", "encode_occurrences([None])", lambda c: c.m.encode_occurrences([None]), "occurrences[0]"),
    (
        "ContextualModel",
        "encode_occurrences batch_size='2'",
        lambda c: c.m.encode_occurrences([c.occ], batch_size="2"),
        "batch_size",
    ),
    (
        "ContextualModel",
        "encode_occurrences batch_size=0",
        lambda c: c.m.encode_occurrences([c.occ], batch_size=0),
        "batch_size must be between 1 and",
    ),
    ("ContextualModel", "check_layers(['a'])", lambda c: c.m.check_layers(["a"]), "layers[0] must be a layer number"),
    ("ContextualModel", "check_layers([2.0])", lambda c: c.m.check_layers([2.0]), "layers[0]"),
    ("ContextualModel", "check_layers([True])", lambda c: c.m.check_layers([True]), "layers[0]"),
    ("ContextualModel", "check_layers([nan])", lambda c: c.m.check_layers([NAN]), "layers[0]"),
    ("ContextualModel", "check_layers(3)", lambda c: c.m.check_layers(3), "layers=[3]"),
    ("ContextualModel", "check_layers([-99])", lambda c: c.m.check_layers([-99]), "out of range"),
    ("ContextualModel", "embed_texts([])", lambda c: c.m.embed_texts([]), "texts is empty"),
    ("ContextualModel", "embed_texts(None)", lambda c: c.m.embed_texts(None), "texts must be a list"),
    ("ContextualModel", "embed_texts('abc')", lambda c: c.m.embed_texts("abc"), "got one str"),
    ("ContextualModel", "embed_texts([''])", lambda c: c.m.embed_texts([""]), "texts[0] is empty"),
    ("ContextualModel", "embed_texts([3])", lambda c: c.m.embed_texts([3]), "texts[0] must be a text"),
    ("ContextualModel", "embed_texts layer='3'", lambda c: c.m.embed_texts(["a bank"], layer="3"), "layer must be"),
    ("ContextualModel", "embed_texts layer=99", lambda c: c.m.embed_texts(["a bank"], layer=99), "out of range"),
    ("ContextualModel", "embed_texts mode='x'", lambda c: c.m.embed_texts(["a bank"], mode="x"), "pooling"),
    ("ContextualModel", "embed_texts batch_size=0", lambda c: c.m.embed_texts(["a"], batch_size=0), "batch_size"),
    ("ContextualModel", "embed_texts_layers([])", lambda c: c.m.embed_texts_layers([]), "texts is empty"),
    (
        "ContextualModel",
        "embed_texts_layers layers='all'",
        lambda c: c.m.embed_texts_layers(["a bank"], layers="all"),
        "layers must be a list",
    ),
    ("ContextualModel", "embed_sentences([])", lambda c: c.m.embed_sentences([]), "texts is empty"),
    ("ContextualModel", "embed_sentences('abc')", lambda c: c.m.embed_sentences("abc"), "got one str"),
    ("ContextualModel", "embed_input_rows(None)", lambda c: c.m.embed_input_rows(None), "texts must be a list"),
    ("ContextualModel", "token_states(None)", lambda c: c.m.token_states(None), "texts must be a list"),
    ("ContextualModel", "token_states('abc')", lambda c: c.m.token_states("abc"), "got one str"),
    ("ContextualModel", "token_states([])", lambda c: c.m.token_states([]), "texts is empty"),
    ("ContextualModel", "token_states batch_size=0", lambda c: c.m.token_states(["a"], batch_size=0), "batch_size"),
    ("ContextualModel", "token_states layers=['a']", lambda c: c.m.token_states(["a"], layers=["a"]), "layers[0]"),
    ("ContextualModel", "tokenize(None)", lambda c: c.m.tokenize(None), "occurrence: expected"),
    ("ContextualModel", "tokenize_many(occ)", lambda c: c.m.tokenize_many(c.occ), "occurrences must be a list"),
    ("ContextualModel", "forward_one(None)", lambda c: c.m.forward_one(None), "occurrence: expected"),
    ("ContextualModel", "forward_one through='3'", lambda c: c.m.forward_one(c.occ, through="3"), "through must be"),
    ("ContextualModel", "forward_one through=99", lambda c: c.m.forward_one(c.occ, through=99), "out of range"),
    # OccurrenceEncoding
    ("OccurrenceEncoding", "hidden_state('3')", lambda c: c.enc.hidden_state("3"), "layer must be a layer number"),
    ("OccurrenceEncoding", "hidden_state(3.0)", lambda c: c.enc.hidden_state(3.0), "got float 3.0"),
    ("OccurrenceEncoding", "hidden_state(None)", lambda c: c.enc.hidden_state(None), "layer must be"),
    ("OccurrenceEncoding", "hidden_state(True)", lambda c: c.enc.hidden_state(True), "layer must be"),
    ("OccurrenceEncoding", "hidden_state(nan)", lambda c: c.enc.hidden_state(NAN), "layer must be"),
    ("OccurrenceEncoding", "hidden_state(5): not extracted", lambda c: c.enc.hidden_state(5), "not extracted"),
    # Vector and Provenance
    ("Vector", "values None", lambda c: Vector(None, c.prov), "values"),
    ("Vector", "values 2-D", lambda c: Vector(np.zeros((2, 2)), c.prov), "1-D"),
    ("Vector", "values empty", lambda c: Vector([], c.prov), "non-empty"),
    ("Vector", "values of str", lambda c: Vector(["a", "b"], c.prov), "numbers"),
    ("Vector", "values of bool", lambda c: Vector([True, False], c.prov), "numbers"),
    ("Vector", "values ragged", lambda c: Vector([[1, 2], [3]], c.prov), "values"),
    ("Vector", "provenance None", lambda c: Vector(np.ones(2), None), "provenance must be a Provenance"),
    ("Vector", "provenance a str", lambda c: Vector(np.ones(2), "minilm"), "provenance must be a Provenance"),
    ("Provenance", "kind 'banana'", lambda c: Provenance("m", "banana"), "kind 'banana'"),
    ("Provenance", "precision 'fp99'", lambda c: Provenance("m", "static", precision="fp99"), "precision 'fp99'"),
    ("Provenance", "runtime 'tf'", lambda c: Provenance("m", "static", runtime="tf"), "runtime 'tf'"),
    ("Provenance", "model None", lambda c: Provenance(None, "static"), "model"),
    ("Provenance", "model ''", lambda c: Provenance("", "static"), "model"),
    ("Provenance", "layer 2.0", lambda c: Provenance("m", "hidden-state", 2.0), "layer"),
    ("Provenance", "layer '2'", lambda c: Provenance("m", "hidden-state", "2"), "layer"),
    ("Provenance", "layer -1", lambda c: Provenance("m", "hidden-state", -1), "layer must be at least 0"),
    ("Provenance", "dim 0", lambda c: Provenance("m", "sentence", dim=0), "dim must be at least 1"),
    ("Provenance", "pooling 3", lambda c: Provenance("m", "sentence", pooling=3), "pooling"),
    # similarity
    ("cosine", "a NaN vector", lambda c: cosine(_nan_vector(c.prov), c.ok), "NaN"),
    ("cosine", "an infinite vector", lambda c: cosine(Vector([math.inf, 1.0], c.prov), c.ok), "NaN or infinity"),
    ("cosine", "a zero vector", lambda c: cosine(Vector([0.0, 0.0], c.prov), c.ok), "zero vector"),
    ("cosine", "a None", lambda c: cosine(None, c.ok), "a: expected a Vector"),
    ("cosine", "a raw array", lambda c: cosine(c.ok, c.ok.values), "b: expected a Vector"),
    ("cosine", "two dimensions", lambda c: cosine(c.ok, Vector([1.0, 2.0, 3.0], c.prov)), "dimension"),
    ("cosine_matrix", "None", lambda c: cosine_matrix(None), "vectors must be"),
    ("cosine_matrix", "a number", lambda c: cosine_matrix(5), "vectors must be"),
    ("cosine_matrix", "one Vector", lambda c: cosine_matrix(c.ok), "vectors must be"),
    ("cosine_matrix", "empty", lambda c: cosine_matrix([]), "non-empty"),
    ("cosine_matrix", "a NaN vector", lambda c: cosine_matrix([c.ok, _nan_vector(c.prov)]), "NaN"),
    ("cosine_matrix", "a raw array", lambda c: cosine_matrix([c.ok, c.ok.values]), "vectors[1]"),
    # compare
    ("compare", "layers='all'", lambda c: compare([FIN, RIVER], c.m, layers="all"), "layers must be a list"),
    ("compare", "layers=['a']", lambda c: compare([FIN, RIVER], c.m, layers=["a"]), "layers[0]"),
    ("compare", "layers=[99]", lambda c: compare([FIN, RIVER], c.m, layers=[99]), "out of range"),
    ("compare", "pooling='x'", lambda c: compare([FIN, RIVER], c.m, pooling="x"), "pooling"),
    ("compare", "None", lambda c: compare(None, c.m), "list of two or more"),
    ("compare", "one sentence", lambda c: compare([FIN], c.m), "at least two"),
    ("compare", "[occ, None]", lambda c: compare([FIN, None], c.m), "occurrences[1]"),
    ("compare", "an unmarked sentence", lambda c: compare([FIN, "The bank."], c.m), "no [marked] target"),
    ("compare", "model None", lambda c: compare([FIN, RIVER], None), "expected a contextual model"),
    ("compare", "static 3.5", lambda c: compare([FIN, RIVER], c.m, static=3.5), "expected a static model"),
    ("compare", "an unknown word for GloVe", lambda c: compare(["A [qqzzxv].", "The [qqzzxv]."], c.m, c.g), "qqzzxv"),
    ("same_sense", "None", lambda c: same_sense(FIN, None, c.m, size="quick"), "occurrences[1]"),
    ("same_sense", "layer=99", lambda c: same_sense(FIN, RIVER, c.m, layer=99, size="quick"), "out of range"),
    ("same_sense", "layer='x'", lambda c: same_sense(FIN, RIVER, c.m, layer="x", size="quick"), "`layer` must be auto"),
    ("same_sense", "size='huge'", lambda c: same_sense(FIN, RIVER, c.m, size="huge"), "`size`"),
    # the locator
    ("locate", "None", lambda c: locate(None), "text: expected a text"),
    ("locate", "''", lambda c: locate(""), "empty"),
    ("locate", "word=42", lambda c: locate("The bank.", word=42), "word: expected"),
    ("locate", "index None", lambda c: locate("a bank", "bank", None), "index"),
    ("locate", "index 5", lambda c: locate("a bank", "bank", 5), "occurrence index must be between"),
    ("find_word", "None", lambda c: find_word(None, "bank"), "text: expected"),
    ("find_word", "word None", lambda c: find_word("a bank", None), "word: expected"),
    ("find_word", "index nan", lambda c: find_word("a bank", "bank", NAN), "index"),
    ("find_word", "absent word", lambda c: find_word("a bank", "river"), "does not occur"),
    ("parse_marked", "None", lambda c: parse_marked(None), "text: expected"),
    ("parse_marked", "3", lambda c: parse_marked(3), "text: expected"),
    ("parse_marked", "two marks", lambda c: parse_marked("[a] [b]"), "2 marked targets"),
    ("Occurrence", "text None", lambda c: Occurrence(None, 0, 1), "text as a str"),
    ("Occurrence", "start nan", lambda c: Occurrence("a bank", NAN, 2), "start must be"),
    ("Occurrence", "span outside", lambda c: Occurrence("a bank", 2, 99), "does not lie inside"),
    ("Occurrence", "from_span None", lambda c: Occurrence.from_span("a bank", None, 1), "start must be"),
    # loaders
    ("load_static", "None", lambda c: load_static(None), "expected a static model name"),
    ("load_static", "''", lambda c: load_static(""), "empty"),
    ("load_static", "fmt=3", lambda c: load_static("glove-50d", fmt=3), "fmt=3"),
    ("load_static", "a contextual name", lambda c: load_static("minilm"), "contextual model"),
    ("load_contextual", "None", lambda c: load_contextual(None), "expected"),
    ("load_contextual", "precision='fp99'", lambda c: load_contextual("minilm", precision="fp99"), "precision"),
    ("load_contextual", "runtime=None", lambda c: load_contextual("minilm", runtime=None), "runtime"),
]

# Public names a user does not call with arguments of their own, and why.
NOT_CALLED = {
    "__version__": "a string",
    "Comparison": "a result, made by compare (its wrong calls are compare's)",
    "ForwardPass": "a result, made by ContextualModel.forward_one",
    "TokenStates": "a result, made by ContextualModel.token_states",
    "TokenizedOccurrence": "a result, made by ContextualModel.tokenize",
    **{
        name: f"a result, made by {maker} (its wrong calls are {maker}'s)"
        for name, maker in {
            "AttentionResult": "attend",
            "Exploration": "explore",
            "ProbeResult": "probe",
            "Ranking": "rank_pairs",
            "SenseMap": "sense_map",
            "ThreeKinds": "three_kinds",
            "Trace": "trace",
            "VectorIndex": "index build",
            "ExtractionFolder": "open_folder",
            "TwoModels": "side_by_side",
            "TuneResult": "tune",
        }.items()
    },
    **{name: "an exception class" for name in contextlens.__all__ if name.endswith("Error")},
}


@pytest.mark.parametrize(
    ("name", "what", "call", "fragment"), WRONG_CALLS, ids=[f"{n}: {w}" for n, w, _, _ in WRONG_CALLS]
)
def test_a_wrong_call_raises_a_typed_one_line_error_naming_the_parameter(c, name, what, call, fragment):
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the type is what this test checks
        call(c)
    error = caught.value
    assert isinstance(error, ContextlensError), f"{name} {what}: raw {type(error).__name__}: {error}"
    message = str(error)
    assert message and "\n" not in message
    assert fragment in message, message


def test_every_public_name_is_called_wrongly_or_said_why_not():
    called = {name for name, *_ in WRONG_CALLS}
    assert called.isdisjoint(NOT_CALLED)
    assert called | set(NOT_CALLED) == set(contextlens.__all__)


# --- the forms that are accepted instead --------------------------------------------------------


def test_encode_takes_a_marked_sentence_as_compare_does(minilm):
    by_text = minilm.encode(FIN, layers=[0, 3])
    by_occurrence = minilm.encode(locate(FIN), layers=[0, 3])
    assert np.array_equal(by_text.hidden, by_occurrence.hidden)
    mixed = minilm.encode_occurrences([FIN, locate(RIVER)], layers=[3])
    assert [e.occurrence.word for e in mixed] == ["bank", "bank"]
    assert minilm.encode_occurrences([]) == []  # an empty list is an empty answer


def test_a_hidden_state_layer_is_an_int_in_its_provenance(minilm):
    enc = minilm.encode(FIN, layers=[0, 3])
    vec = enc.hidden_state(np.int64(3))  # numpy integers are layer numbers too
    assert vec.provenance.layer == 3 and type(vec.provenance.layer) is int
    assert vec.provenance.describe() == "hidden-state layer 3 of minilm"
    assert enc.hidden_state(-1).provenance.layer == 3


def test_vector_takes_a_list_of_numbers_as_float32():
    prov = Provenance("m", "static")
    vec = Vector([1, 2, 3], prov)
    assert vec.values.dtype == np.float32 and vec.values.tolist() == [1.0, 2.0, 3.0]
    exact = np.array([0.1, 0.2], dtype=np.float64)
    assert Vector(exact, prov).values is exact  # a float array is kept as given
    assert cosine(Vector([1, 0], prov), Vector([2, 0], prov)) == 1.0


def test_provenance_takes_numpy_integers_and_says_them_as_int():
    prov = Provenance("m", "hidden-state", np.int64(2), dim=np.int32(384))
    assert (prov.layer, prov.dim) == (2, 384) and type(prov.layer) is int and type(prov.dim) is int


def test_most_similar_reads_one_negative_word_as_a_word_not_its_letters(glove):
    assert glove.most_similar("bank", negative="river", topn=3) == glove.most_similar(
        ["bank"], negative=["river"], topn=3
    )
    assert glove.most_similar("bank", topn=np.int64(2)) == glove.most_similar("bank", topn=2)


def test_the_precision_and_runtime_vocabulary_is_the_one_the_models_run():
    from contextlens.core import onnx_runtime, precision, vectors

    assert precision.PRECISIONS == vectors.PRECISIONS
    assert onnx_runtime.RUNTIMES == vectors.RUNTIMES


# --- provenance: what DESIGN promises -------------------------------------------------------------


def test_vectors_of_two_models_or_two_kinds_are_not_compared(minilm, glove):
    enc = minilm.encode(FIN, layers=[0, 3])
    other_model = Vector(enc.hidden_state(3).values, Provenance("mpnet", "hidden-state", 3))
    with pytest.raises(ProvenanceMismatchError, match="different models"):
        cosine(enc.hidden_state(3), other_model)
    with pytest.raises(ProvenanceMismatchError, match="different kinds"):
        cosine(enc.input_row(), enc.hidden_state(0))
    with pytest.raises(ProvenanceMismatchError, match="different models"):  # a static vector is glove's
        cosine(glove.vector("bank"), Vector(glove.vector("bank").values, Provenance("minilm", "static")))
    with pytest.raises(ProvenanceMismatchError):
        cosine_matrix([enc.hidden_state(0), enc.hidden_state(3), enc.input_row()])
    # layers of one model share its space; its int8 copy is comparable (that is how drift is measured)
    assert -1.0 <= cosine(enc.hidden_state(0), enc.hidden_state(3)) <= 1.0
    int8 = Vector(enc.hidden_state(3).values, Provenance("minilm", "hidden-state", 3, "mean", precision="int8"))
    assert cosine(enc.hidden_state(3), int8) == 1.0


# --- a malformed GloVe file -------------------------------------------------------------------


MALFORMED = {
    "a short row": ("bank 0.1 0.2\nriver 0.3\n", "line 2 holds 1 value after its word, expected 2"),
    "a long row": ("bank 0.1 0.2\nriver 0.3 0.4 0.5\n", "line 2 holds 3 values after its word, expected 2"),
    "a short row after a blank line": ("bank 0.1 0.2\n\nshore 0.1 0.2\nriver 0.3\n", "line 4 holds 1 value"),
    "a word alone": ("bank\n", "line 1 holds a word but no values"),
    "not a number": ("bank 0.1 0.2\nriver 0.3 x\n", "line 2 holds 'x', which is not a number"),
    "a NaN": ("bank 0.1 0.2\nriver nan 0.3\n", "line 2 holds NaN or infinity"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_glove_file_is_refused_naming_the_file_line_and_dimension(tmp_path, case):
    content, fragment = MALFORMED[case]
    path = tmp_path / "vectors.txt"
    path.write_text(content)
    with pytest.raises(StaticModelError) as caught:
        load_static(str(path))
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and fragment in message, message


def test_a_word2vec_text_file_is_checked_against_its_header(tmp_path):
    path = tmp_path / "vectors.vec"
    path.write_text("2 2\nbank 0.1 0.2\nriver 0.3\n")
    with pytest.raises(StaticModelError, match=r"line 3 holds 1 value after its word, expected 2 \(as the header"):
        load_static(str(path))
    path.write_text("3 2\nbank 0.1 0.2\nriver 0.3 0.4\n")
    with pytest.raises(StaticModelError, match="ends after 2 vectors, but its header promises 3"):
        load_static(str(path))
    path.write_text("1 2\nbank 0.1 0.2\nriver 0.3 0.4\n")
    with pytest.raises(StaticModelError, match="line 3 is one vector more than the 1 its header promises"):
        load_static(str(path))


def test_a_well_formed_glove_file_reads_as_gensim_read_it(tmp_path):
    from gensim.models import KeyedVectors

    path = tmp_path / "vectors.txt"
    path.write_text("bank 0.1 0.2\n\nriver -3e-1 4\nbank 9 9\ncafé 1 2  \n")  # blank line, repeat, trailing space
    model = load_static(str(path))
    assert model.kv.index_to_key == ["bank", "river", "café"]
    assert np.allclose(model.vector("bank").values, [0.1, 0.2])  # the first of a repeated word, as gensim
    plain = tmp_path / "plain.txt"  # another name: load_static caches by path
    plain.write_text("bank 0.1 0.2\nriver -3e-1 4\n")
    reference = KeyedVectors.load_word2vec_format(str(plain), binary=False, no_header=True)
    assert np.array_equal(load_static(str(plain)).kv.vectors, reference.vectors)


def test_compare_refuses_a_malformed_glove_file_in_one_line(tmp_path, minilm):
    path = tmp_path / "bad.txt"
    path.write_text("bank 0.1 0.2\nriver 0.3\n")
    with pytest.raises(StaticModelError, match="line 2"):
        compare([FIN, RIVER], minilm, str(path))
    result = run_cli("compare", FIN, RIVER, "--model", "minilm", "--static", str(path))
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "bad.txt" in line and "line 2" in line and "expected 2" in line


@pytest.mark.parametrize("bad", [None, 3, "a Comparison", {"to_dict": 1}])
def test_notebook_to_html_refuses_what_is_not_a_result(bad):
    from contextlens import notebook

    with pytest.raises(InputError, match="result must be a contextlens result"):
        notebook.to_html(bad)


def test_a_layer_counted_back_too_far_says_so(minilm):
    """hidden_state(-99) used to answer "layer -95 was not extracted": a number the caller never gave."""
    from contextlens.core.occurrences import parse_marked

    enc = minilm.encode(parse_marked("The river [bank] flooded."), layers=[1, 3])
    assert enc.hidden_state(-1).provenance.layer == 3
    with pytest.raises(InputError, match=r"`layer` -99 was not extracted \(counting back from layer 3"):
        enc.hidden_state(-99)
    with pytest.raises(InputError, match=r"`layer` 2 was not extracted; extracted layers: \[1, 3\]"):
        enc.hidden_state(2)


def _pg_server():
    from contextlens.analyses.search import pg_server

    return pg_server


def _pg_index():
    from contextlens.analyses.search import pg_index

    return pg_index


# the newest names of the search and database layers, not exported from the package (issue 35)
SEARCH_WRONG_CALLS = [
    ("search_index", "query=None", lambda: contextlens.search_index("/tmp", None), "query must be a text"),
    ("search_index", "folder=None", lambda: contextlens.search_index(None, "q"), "folder must be a path"),
    ("PgIndexConfig", "params=[1]", lambda: _pg_index().PgIndexConfig("hnsw", [1]), "params must be a dict"),
    ("PgVectorIndex.build", "config='hnsw'",
     lambda: _pg_index().PgVectorIndex.build([_pg_index().Document("a", "b")], None, "/tmp/n", config="hnsw"),
     "config must be a PgIndexConfig"),
    ("connect", "None", lambda: _pg_server().connect(None), "conninfo must be a text"),
    ("embedded_server", "idle='x'", lambda: _pg_server().embedded_server(idle="x").__enter__(), "idle must be"),
    ("embedded_server", "idle=-1", lambda: _pg_server().embedded_server(idle=-1).__enter__(), "0 or more"),
    ("embedded_server", "idle=nan", lambda: _pg_server().embedded_server(idle=float("nan")).__enter__(), "0 or more"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "what", "call", "fragment"), SEARCH_WRONG_CALLS,
                         ids=[f"{n}: {w}" for n, w, _, _ in SEARCH_WRONG_CALLS])  # fmt: skip
def test_a_wrong_call_to_the_search_and_database_layers_is_one_typed_line(name, what, call, fragment):
    with pytest.raises(ContextlensError) as caught:
        call()
    assert "\n" not in str(caught.value) and fragment in str(caught.value), (name, what, str(caught.value))


def test_pg_index_config_without_params_takes_pgvectors_defaults():
    config = _pg_index().PgIndexConfig("hnsw", None)
    assert config.params == {} and config.resolved(384).params == _pg_index().PgIndexConfig("hnsw").resolved(384).params
