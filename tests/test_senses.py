"""Sense induction on a real extraction: two senses of 'bank' come apart, and are labelled."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contextlens.analyses.corpus.extract import extract_corpus
from contextlens.analyses.corpus.senses import induce_senses
from contextlens.cli import main
from contextlens.errors import InputError, TargetNotFoundError
from tests.helpers import run_cli

RIVER = [
    "We fished from the muddy bank of the river.",
    "The river overflowed its bank after the rain.",
    "Reeds grew thick along the river bank.",
    "The boat drifted toward the grassy bank of the stream.",
    "Otters dug a den in the steep bank of the river.",
    "Willows lean over the bank where the creek bends.",
    "He sat on the river bank and watched the water.",
    "Erosion wore away the bank of the stream.",
]
MONEY = [
    "The bank approved her mortgage loan.",
    "He deposited his salary at the bank on Friday.",
    "The bank raised its interest rates again.",
    "She opened a savings account at the bank.",
    "The central bank cut rates to fight inflation.",
    "The bank charged a fee for the wire transfer.",
    "Investors worried the bank would default on its debt.",
    "The bank manager refused the loan.",
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory, minilm):
    corpus = tmp_path_factory.mktemp("senses") / "bank.txt"
    corpus.write_text("\n".join(RIVER + MONEY) + "\n")
    out = corpus.parent / "out"
    extract_corpus(str(corpus), ["bank"], out, model="minilm", layers=[0, 5, 6])
    return out


def test_two_senses_come_apart_and_are_labelled(folder):
    result = induce_senses(folder, "bank", layer=5, k=2)
    assert result.pos == "n" and result.sense_vectors == "examples"
    river = {result.labels[i] for i in range(8)}
    money = {result.labels[i] for i in range(8, 16)}
    assert len(river) == 1 and len(money) == 1 and river != money
    by_cluster = {c.cluster: c for c in result.clusters}
    river_cluster = by_cluster[river.pop()]
    assert "river" in river_cluster.distinctive_words
    assert river_cluster.gloss is not None and "slope" in river_cluster.gloss["definition"]
    money_cluster = by_cluster[money.pop()]
    # the two closest senses are the noun senses about money (gloss vectors without a part of speech
    # said bank.v.03/v.04); they split the votes, so the label is one of them or none (the margin)
    money_senses = {"depository_financial_institution.n.01", "bank.n.09"}
    assert {c["synset"] for c in money_cluster.candidates} == money_senses
    assert money_cluster.gloss is None or money_cluster.gloss["synset"] in money_senses
    assert all("[bank]" in e["marked"].lower() for e in river_cluster.typical)
    auto = induce_senses(folder, "bank", layer=5)
    assert auto.k == max(auto.silhouettes, key=auto.silhouettes.get) or auto.k == 1
    # layer 0 (embedding output) has one vector per token in every sentence: no separation
    assert induce_senses(folder, "bank", layer=0).silhouettes[2] < auto.silhouettes[2]


def test_part_of_speech_filter_fixes_verb_labels_for_noun_uses(folder):
    """The old labels (gloss vectors, every part of speech) put a verb sense on the money uses."""
    from contextlens.analyses.corpus.senses import sense_vectors_of

    result = induce_senses(folder, "bank", layer=5, k=2)
    money = result.clusters[result.labels[8]]
    senses = sense_vectors_of("minilm", "bank", 5, "gloss")
    x = result_vectors(folder, 5)[result.labels == money.cluster]
    centroid = x.mean(axis=0) / np.linalg.norm(x.mean(axis=0))
    old = senses[int(np.argmax([s.vector @ centroid for s in senses]))]
    assert old.pos == "v"  # the bug this fixes, measured: the nearest gloss of any POS is a verb
    top = money.candidates[0]["synset"]
    assert top != old.synset and ".n." in top
    assert result.pos_scores["n"] > result.pos_scores["v"]
    # restricted to nouns, the candidates are nouns
    nouns = induce_senses(folder, "bank", layer=5, k=2, pos="n", sense_vectors="gloss")
    assert all(".n." in c["synset"] for cl in nouns.clusters for c in cl.candidates)


def result_vectors(folder, layer: int) -> np.ndarray:
    from contextlens.analyses.corpus.chunks import layer_column
    from contextlens.analyses.corpus.folder import read_rows
    from contextlens.core.similarity import normalize_rows

    table = read_rows(folder, "bank", [layer_column(layer)])
    return normalize_rows(np.array(table.column(0).to_pylist(), dtype=np.float32))


def test_bad_requests_are_one_line(folder, tmp_path, capsys):
    with pytest.raises(InputError, match="no WordNet adverb sense; its parts of speech: n"):
        induce_senses(folder, "bank", layer=5, pos="r")
    with pytest.raises(InputError, match="`pos` 'x'"):
        induce_senses(folder, "bank", layer=5, pos="x")
    with pytest.raises(InputError, match="`sense_vectors`"):
        induce_senses(folder, "bank", layer=5, sense_vectors="lemmas")
    proc = run_cli("senses", "induce", str(folder), "--word", "bank", "--pos", "r")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    with pytest.raises(TargetNotFoundError):
        induce_senses(folder, "river")
    with pytest.raises(InputError, match="extracted layers"):
        induce_senses(folder, "bank", layer=3)
    with pytest.raises(InputError, match="not a corpus extraction folder"):
        induce_senses(tmp_path, "bank")
    with pytest.raises(SystemExit) as stop:
        main(
            [
                "senses",
                "induce",
                str(folder),
                "--word",
                "bank",
                "--layer",
                "5",
                "--k",
                "2",
                "--json",
                "--plot",
                str(tmp_path / "s.png"),
                "--html",
                str(tmp_path / "s.html"),
            ]
        )
    out, _ = capsys.readouterr()
    assert (stop.value.code or 0) == 0
    data = json.loads(out)
    assert data["k"] == 2 and sum(c["size"] for c in data["clusters"]) == 16
    assert (tmp_path / "s.png").stat().st_size > 0 and "plotly" in (tmp_path / "s.html").read_text().lower()


def test_corpus_contextuality_on_an_extraction(folder):
    from contextlens.analyses.corpus.contextuality import corpus_contextuality

    result = corpus_contextuality(folder, min_contexts=10)
    assert result.meta["counts"]["contexts_per_word"]["min"] == 16
    mev = {lay: result.value(layer=lay, metric="mev") for lay in (0, 5, 6)}
    assert all(1 / 16 <= v <= 1 for v in mev.values())
    assert mev[0] > mev[5]  # the embedding output is close to one static vector; layer 5 is not
    with pytest.raises(InputError, match="has 17 contexts .*'bank' 16; try `min_contexts` 16"):
        corpus_contextuality(folder, min_contexts=17)


def test_corpus_contextuality_reports_the_papers_centred_mev(folder):
    """The corpus variant has both MEVs (issue 19): the centred one is sklearn's PCA explained-variance
    ratio of the word's occurrences, each beside its random-word baseline; the table names both."""
    from sklearn.decomposition import PCA

    from contextlens.analyses.corpus.contextuality import corpus_contextuality
    from contextlens.analyses.corpus.folder import layer_matrix, read_rows

    result = corpus_contextuality(folder, min_contexts=10)
    x = layer_matrix(read_rows(folder, columns=["layer_5"]), "layer_5")  # 16 sentences, one "bank" each
    expected = PCA(n_components=1).fit(x.astype(np.float64)).explained_variance_ratio_[0]
    assert result.value(layer=5, metric="mev_centred") == pytest.approx(expected, abs=1e-6)
    for layer in (0, 5, 6):
        centred, raw = result.value(layer=layer, metric="mev_centred"), result.value(layer=layer, metric="mev")
        assert 1 / 15 <= centred < raw
        baseline = result.value(layer=layer, metric="mev_centred_baseline")
        assert result.value(layer=layer, metric="mev_centred_adjusted") == pytest.approx(centred - baseline)
    assert set(result.meta["mev_definitions"]) == {"mev", "mev_centred", "mev_paper"}
    assert result.meta["published"]["bert_base_cased"]["baseline"][12] == 0.477
    table = run_cli("eval", "contextuality", "--corpus", str(folder), "--min-contexts", "10")
    assert table.returncode == 0, table.stderr
    text = " ".join(table.stdout.split())
    assert "MEV pca" in text and "MEV paper = what the paper's released per-word files hold" in text


def test_an_int8_extraction_is_labelled_with_int8_sense_vectors(tmp_path, minilm):
    """Both sides of the label's cosine come from the precision the occurrences were extracted at."""
    from contextlens.analyses.corpus.senses import sense_vectors_of

    corpus = tmp_path / "bank.txt"
    corpus.write_text("\n".join(RIVER + MONEY) + "\n")
    out = tmp_path / "int8"
    extract_corpus(str(corpus), ["bank"], out, model="minilm", layers=[5], precision="int8")
    result = induce_senses(out, "bank", layer=5, k=2)
    x = result_vectors(out, 5)
    by_precision = {p: {s.synset: s.evidence for s in sense_vectors_of("minilm", "bank", 5, "examples", p)}
                    for p in ("int8", "fp32")}  # fmt: skip
    for cluster in result.clusters:
        members = x[result.labels == cluster.cluster]
        lead = cluster.candidates[0]
        cosine = {p: float(np.mean(np.max(members @ ev[lead["synset"]].T, axis=1))) for p, ev in by_precision.items()}
        assert lead["cosine"] == pytest.approx(cosine["int8"], abs=1e-4)
        assert cosine["int8"] != pytest.approx(cosine["fp32"], abs=1e-4)


TILT = [
    "The pilot let the plane bank sharply to the left.",
    "Small aircraft bank gently before they turn onto final approach.",
    "The glider began to bank as it circled in the rising air.",
    "Watch the jet bank hard over the coast before landing.",
    "The plane began to bank to the right.",
    "Pilots bank the aircraft into the turn.",
    "The fighter jets bank and climb.",
    "Birds bank in the wind above the cliff.",
]


def test_pos_auto_names_a_verb_sense_for_a_verb_cluster(tmp_path, minilm):
    """Issue 19: under --pos auto one part of speech labelled every cluster, so the verb uses of
    "bank" (to tilt) got a noun sense; each cluster now takes its own nearest part of speech."""
    corpus = tmp_path / "bank.txt"
    corpus.write_text("\n".join(MONEY + TILT) + "\n")
    extract_corpus(str(corpus), ["bank"], tmp_path / "out", model="minilm", layers=[6])
    result = induce_senses(tmp_path / "out", "bank", layer=6, k=2)
    assert result.pos == "n" and result.pos_per_cluster  # over all occurrences the noun wins
    money, tilt = result.clusters[result.labels[0]], result.clusters[result.labels[8]]
    assert {result.labels[i] for i in range(8)} == {money.cluster} and money is not tilt
    assert ".n." in money.candidates[0]["synset"]
    assert (
        tilt.gloss is not None and tilt.gloss["synset"] == "bank.v.01" and tilt.gloss["pos"] == "v"
    )  # "tip laterally"
    nouns = induce_senses(tmp_path / "out", "bank", layer=6, k=2, pos="n")
    assert not nouns.pos_per_cluster and all(".n." in c["synset"] for cl in nouns.clusters for c in cl.candidates)


def test_an_occurrence_is_never_both_typical_and_ambiguous(folder):
    result = induce_senses(folder, "bank", layer=5, k=2, examples=5)  # clusters of 8: 5 typical, 3 left
    for c in result.clusters:
        typical = {(e["doc_id"], e["marked"]) for e in c.typical}
        ambiguous = {(e["doc_id"], e["marked"]) for e in c.ambiguous}
        assert len(typical) == 5 and not typical & ambiguous and len(ambiguous) == c.size - 5


def test_cluster_words_skip_proper_names_and_are_never_blank():
    from contextlens.analyses.corpus.senses import _distinctive

    rows = [
        {"sentence": s}
        for s in (
            "He works at the New York bank on loans.",
            "The New York bank raised loans.",
            "A New bank opened downtown with loans.",
            "The river bank flooded.",  # a cluster of one sentence: no word seen twice
        )
    ]
    words = _distinctive(rows, np.array([0, 0, 0, 1]), 2, "bank")
    assert words[0][0] == "loans" and "new" not in words[0] and "york" not in words[0]
    assert words[1] == ["flooded", "river"]  # the single sentence's words, not a blank label


def test_cluster_words_are_none_only_when_no_context_word_is_left():
    """_distinctive answers no word exactly when every word of a cluster's sentences is the target,
    a stop word, one or two letters long or part of a name: what NO_DISTINCTIVE_WORDS says."""
    from contextlens.analyses.corpus.senses import NO_DISTINCTIVE_WORDS, _distinctive

    rows = [{"sentence": s} for s in ("It is the bank.", "So it is at the Azizi bank.", "The river bank flooded.")]
    words = _distinctive(rows, np.array([0, 0, 1]), 2, "bank")
    assert words == [[], ["flooded", "river"]]
    assert NO_DISTINCTIVE_WORDS.startswith("none stand out: ")


def test_corpus_contextuality_typed_reads_are_its_documents_values(folder):
    """The faces read the result's typed fields; each is the value `--json` prints under meta."""
    from contextlens.analyses.corpus.contextuality import corpus_contextuality

    result = corpus_contextuality(folder, min_contexts=10)
    meta = result.to_dict()["meta"]
    c = result.counts
    assert (c.words, c.word_occurrences, c.min_contexts) == tuple(
        meta["counts"][k] for k in ("words", "word_occurrences", "min_contexts")
    )
    per = meta["counts"]["contexts_per_word"]
    assert (c.contexts_per_word.min, c.contexts_per_word.median, c.contexts_per_word.max) == tuple(per.values())
    assert c.max_contexts_per_word is None  # the WordNet sample's cap, not a corpus's
    assert result.corpus == meta["corpus"] and result.warnings == meta["warnings"]
    assert result.choice is None and result.word_rule is None  # a folder: no words chosen here
    assert result.published_rows == meta["published"]["rows"] and result.paper_findings == meta["paper_findings"]
