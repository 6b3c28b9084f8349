"""Ethayarajh's contextuality metrics on hand cases, the sample, and the CLI with a figure."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from contextlens.analyses.benchmarks.contextuality import (
    anisotropy_baseline,
    build_sample,
    intra_sentence_similarity,
    max_explainable_variance,
    self_similarity,
)
from tests.helpers import run_cli


def test_self_similarity_hand_case():
    # pairwise cosines: (1,0)-(0,1) = 0, (1,0)-(1,1) = (0,1)-(1,1) = 1/sqrt(2)
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert self_similarity(x) == pytest.approx(2 / math.sqrt(2) / 3)


def test_intra_sentence_similarity_hand_case():
    # mean (0.5, 0.5); each word has cosine 1/sqrt(2) with it
    assert intra_sentence_similarity(np.array([[1.0, 0.0], [0.0, 1.0]])) == pytest.approx(1 / math.sqrt(2))


def test_mev_hand_cases():
    assert max_explainable_variance(np.array([[1.0, 2.0], [2.0, 4.0], [-3.0, -6.0]])) == pytest.approx(1.0)
    assert max_explainable_variance(np.eye(4)) == pytest.approx(0.25)
    # singular values of diag(3, 1): 9 / (9 + 1)
    assert max_explainable_variance(np.array([[3.0, 0.0], [0.0, 1.0]])) == pytest.approx(0.9)


def test_anisotropy_baseline_only_pairs_different_texts():
    # rows 0 and 1 share text 0 (orthogonal, never paired); row 2 (text 1) equals row 0
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    value = anisotropy_baseline(x, [0, 0, 1], n_pairs=4000, seed=0)
    # pairs across texts: (0,2) cosine 1 and (1,2) cosine 0, equally likely
    assert value == pytest.approx(0.5, abs=0.03)


def test_sample_is_deterministic_and_respects_min_contexts():
    texts = [f"the cat number {i} sat on the mat" for i in range(8)] + ["a dog barked loudly today"] * 2
    s1 = build_sample(texts, n_words=3, n_sentences=4, min_contexts=5, seed=0)
    s2 = build_sample(texts, n_words=3, n_sentences=4, min_contexts=5, seed=0)
    assert s1 == s2
    for word, spans in s1.words.items():
        assert len({t for t, _, _ in spans}) == len(spans) >= 5
        assert all(texts[t][a:b].lower() == word for t, a, b in spans)
    assert "dog" not in s1.words and len(s1.sentences) == 4


def test_cli_quick_json_and_figure(tmp_path):
    png = tmp_path / "ctx.png"
    proc = run_cli("eval", "contextuality", "--model", "minilm", "--quick", "--json", "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    anis = {r["layer"]: r["value"] for r in doc["rows"] if r["metric"] == "anisotropy"}
    assert set(anis) == set(range(7)) and all(-1 <= v <= 1 for v in anis.values())
    for metric in ("self_similarity_adjusted", "intra_sentence_adjusted", "mev_adjusted"):
        assert len([r for r in doc["rows"] if r["metric"] == metric]) == 7
    assert png.stat().st_size > 10_000


def test_combine_keeps_one_tidy_shape_for_several_models():
    from contextlens.analyses.benchmarks.contextuality import combine
    from contextlens.analyses.benchmarks.result import BenchmarkResult

    a = BenchmarkResult(
        "contextuality", "mpnet", [{"system": "mpnet", "layer": 0, "metric": "anisotropy", "value": 0.1}]
    )
    b = BenchmarkResult(
        "contextuality", "minilm", [{"system": "minilm", "layer": 0, "metric": "anisotropy", "value": 0.2}]
    )
    doc = combine([a, b]).to_dict()
    assert set(doc) == {"benchmark", "model", "rows", "meta"}
    assert [r["system"] for r in doc["rows"]] == ["mpnet", "minilm"] and doc["meta"]["models"] == ["mpnet", "minilm"]


def test_corpus_by_path_chooses_words_extracts_once_and_reuses(tmp_path, minilm):
    """`--corpus PATH`: words chosen by the counting pass, extracted into the cache, reused next time."""
    from tests.test_senses import MONEY, RIVER

    corpus = tmp_path / "bank.txt"
    corpus.write_text("\n".join(RIVER + MONEY) + "\n")
    args = ("eval", "contextuality", "--corpus", str(corpus), "--model", "minilm", "--json")
    small = ("--min-contexts", "5", "--max-words", "3", "--sentences", "4")
    proc = run_cli(*args, *small)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    meta = doc["meta"]
    # 'bank' is in all 16 lines, 'river' in 5; no other content word reaches 5 sentences
    assert meta["words"] == {"bank": 16, "river": 5} and meta["choice"]["eligible_words"] == 2
    assert meta["counts"]["sentences"] == 4 and meta["intra_sentence_words"] == "every word of sampled sentences"
    assert meta["cache"]["reused"] == []
    rows = {(r["layer"], r["metric"]): r["value"] for r in doc["rows"]}
    assert {lay for lay, _ in rows} == set(range(7))
    for lay in range(7):
        assert 1 / 5 <= rows[lay, "mev"] <= 1 and -1 <= rows[lay, "intra_sentence"] <= 1
        assert rows[lay, "mev_adjusted"] == pytest.approx(rows[lay, "mev"] - rows[lay, "mev_baseline"])
    folder = Path(meta["cache"]["folder"])
    shards = {p: p.stat().st_mtime_ns for p in folder.rglob("*.parquet")}
    assert shards
    again = run_cli(*args, *small)
    assert again.returncode == 0, again.stderr
    doc2 = json.loads(again.stdout)
    assert doc2["meta"]["cache"]["reused"] == ["words-minilm", "sentences-minilm"]
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*.parquet")} == shards  # nothing re-encoded
    assert doc2["rows"] == doc["rows"]
    # the folder it wrote is an extraction folder: the DIR path measures the same words
    direct = run_cli("eval", "contextuality", "--corpus", str(folder / "words-minilm"), "--min-contexts", "5", "--json")
    assert json.loads(direct.stdout)["meta"]["words"] == meta["words"]
    assert meta["precision"] == "fp32"
    # int8: its own extraction beside the fp32 one (never the fp32 vectors), recorded in the result
    quant = run_cli(*args, *small, "--precision", "int8")
    assert quant.returncode == 0, quant.stderr
    assert "int8 drift vs fp32 (minilm" in quant.stderr  # the drift is shown with every int8 result
    qdoc = json.loads(quant.stdout)
    assert qdoc["meta"]["precision"] == "int8" and qdoc["meta"]["cache"]["reused"] == []
    assert (folder / "words-minilm-int8" / "manifest.json").is_file()
    assert {p: p.stat().st_mtime_ns for p in (folder / "words-minilm").rglob("*.parquet")} == {
        p: t for p, t in shards.items() if "words-minilm" in p.parts
    }
    qrows = {(r["layer"], r["metric"]): r["value"] for r in qdoc["rows"]}
    assert qrows[0, "mev"] == pytest.approx(rows[0, "mev"], abs=1e-3)  # layer 0 is not quantized
    assert any(abs(qrows[k] - rows[k]) > 1e-6 for k in rows if k[0] > 0)


def test_corpus_refusals_are_one_line(tmp_path):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("The bank opened.\nThe bank closed.\nThe river rose.\n")
    cases = [
        (("--corpus", "nosuchcorpus"), "neither a file, a folder nor an installed corpus"),
        (
            ("--corpus", str(corpus), "--min-contexts", "50"),
            "the best: 'bank' 2, 'closed' 1, 'opened' 1; try --min-contexts 2",
        ),
        (("--corpus", str(corpus), "--min-contexts", "1"), "at least 2"),
    ]
    for extra, message in cases:
        proc = run_cli("eval", "contextuality", "--model", "minilm", *extra)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr, proc.stderr


def test_corpus_run_logged_to_a_file_prints_plain_progress_lines(tmp_path, minilm, monkeypatch):
    """A stderr that is no terminal (`--json 2> log`) got nothing for a 254 s Lee run: the plain
    lines of `corpus extract` reach it too (every PLAIN_EVERY_SECONDS; 0 here, so every update)."""
    import re

    from contextlens.cli import common
    from tests.test_senses import MONEY, RIVER

    monkeypatch.setattr(common, "PLAIN_EVERY_SECONDS", 0.0)
    corpus = tmp_path / "bank.txt"
    corpus.write_text("\n".join(RIVER + MONEY) + "\n")
    small = ("--min-contexts", "5", "--max-words", "3", "--sentences", "4")
    proc = run_cli("eval", "contextuality", "--corpus", str(corpus), "--model", "minilm", "--json", *small)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if re.match(r"\[\d\d:\d\d:\d\d\] minilm: ", line)]
    assert lines and all("sentences/s" in line for line in lines)  # the first update starts the clock, then each
    assert "extracting sentences" in lines[-1]
    json.loads(proc.stdout)  # stdout is still the JSON alone
