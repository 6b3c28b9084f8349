"""WordNet 3.0 from the Debian files: the NLTK layout, lemma location, SemCor counts, clear errors."""

from __future__ import annotations

import functools
import json

import pytest

from contextlens.analyses.benchmarks import suite
from contextlens.analyses.measures import wic_pairs
from contextlens.core import wordnet as wn
from tests.helpers import run_cli


def test_reader_reads_debian_files_with_our_lexnames():
    reader = wn.wordnet()
    bank = reader.synset("bank.n.01")
    assert "sloping land" in bank.definition()
    assert bank.lexname() == "noun.object"  # resolved through the lexnames file we write
    lines = (wn.nltk_root() / "lexnames").read_text().splitlines()
    assert len(lines) == 45
    assert lines[0].split() == ["00", "adj.all", "3"] and lines[-1].split() == ["44", "adj.ppl", "3"]


@pytest.mark.parametrize(
    ("text", "lemma", "pos", "word"),
    [
        ("he ran all the way home", "run", "v", "ran"),
        ("the banks of the river flooded", "bank", "n", "banks"),
        ("two geese flew over", "goose", "n", "geese"),
        ("she is taller than her brother", "tall", "a", "taller"),
    ],
)
def test_find_lemma_handles_inflections(text, lemma, pos, word):
    start, end = wn.find_lemma(text, lemma, pos)
    assert text[start:end] == word


def test_find_lemma_skips_absent_and_multiword_lemmas():
    assert wn.find_lemma("the cat sat", "dog", "n") is None
    assert wn.find_lemma("the plane will take off soon", "take_off", "v") is None


def test_usage_examples_locate_a_lemma_of_their_synset():
    examples = wn.usage_examples()
    stats = wn.usage_example_stats()
    assert stats["examples"] == 48339  # WordNet 3.0 ships 48,339 usage examples
    assert stats["located"] == len(examples) and 0 < stats["not_located"] < stats["examples"]
    reader = wn.wordnet()
    for ex in examples[::997]:
        lemmas = {lemma.name().lower() for lemma in reader.synset(ex.synset).lemmas()}
        assert ex.lemma in lemmas
        assert wn.find_lemma(ex.text, ex.lemma, ex.pos) == (ex.start, ex.end)
        assert ex.occurrence().word == ex.word


def test_sense_count_matches_cntlist_rev():
    lemma = wn.wordnet().synset("bank.n.01").lemmas()[0]
    key = lemma.key()
    with open(wn.source_dir() / "cntlist.rev") as f:
        expected = next(int(line.split()[2]) for line in f if line.split()[0] == key)
    assert wn.sense_count("bank.n.01", "bank") == expected
    counts = wn.sense_counts("bank", "n")
    assert counts["bank.n.01"] == expected and len(counts) == len(wn.wordnet().synsets("bank", pos="n"))


def test_missing_wordnet_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTLENS_WORDNET_DIR", str(tmp_path))
    with pytest.raises(wn.WordNetNotInstalledError, match="install-system-deps.sh"):
        wn.check_installed()
    # this process already built (and keeps in memory) the benchmark data from WordNet: the
    # command gets an empty cache of its own, as in a fresh process, and finds the files missing
    monkeypatch.setattr(suite, "build_suite", functools.cache(suite.build_suite.__wrapped__))
    fresh_wic_set = functools.cache(wic_pairs.build_wic_set.__wrapped__)  # eval wic's, read by the suite too
    monkeypatch.setattr(wic_pairs, "build_wic_set", fresh_wic_set)
    monkeypatch.setattr(suite, "build_wic_set", fresh_wic_set)
    proc = run_cli("eval", "wic", "--model", "minilm", "--quick")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "wordnet-base" in proc.stderr and "Traceback" not in proc.stderr


def test_damaged_stats_cache_is_rebuilt_with_a_note(caplog, test_cache_warmed):
    from contextlens.core.resources import cache_dir
    from contextlens.core.wordnet import EXAMPLES_VERSION, usage_example_stats

    good = usage_example_stats()
    path = cache_dir() / "wordnet" / f"usage-example-stats-v{EXAMPLES_VERSION}.json"
    path.write_text("")  # what a kill during a non-atomic write used to leave
    with caplog.at_level("WARNING", logger="contextlens"):
        rebuilt = usage_example_stats()
    assert rebuilt == good
    assert "damaged" in caplog.text
    assert json.loads(path.read_text()) == good


def _nltk_copy(cache) -> list:
    return sorted((cache / "nltk_data" / "corpora" / "wordnet").iterdir())


def test_a_hard_linked_cache_copy_is_read_and_the_original_left_intact(tmp_path, monkeypatch):
    """Each cache is read as a fresh process reads it: a reader built anew (``wordnet``'s own
    body, past its in-process cache) from that cache's copy. In this process, not two: each
    process spent ~2 CPU s importing NLTK, which this one has done."""
    import subprocess

    def read_bank(cache) -> str:
        monkeypatch.setenv("CONTEXTLENS_CACHE", str(cache))
        return wn.wordnet.__wrapped__().synset("bank.n.01").lexname()

    first, second = tmp_path / "cache", tmp_path / "linked"
    assert read_bank(first) == "noun.object"
    subprocess.run(["cp", "-al", str(first), str(second)], check=True)  # as a user copies a cache
    assert all(p.stat().st_nlink == 2 for p in _nltk_copy(second))
    before = {p.name: p.read_bytes() for p in _nltk_copy(first)}
    # before: NLTK refused the multiply-linked lexnames with a 63-line PermissionError traceback
    assert read_bank(second) == "noun.object"
    assert all(p.stat().st_nlink == 1 for p in _nltk_copy(second))  # copied, not linked
    assert {p.name: p.read_bytes() for p in _nltk_copy(first)} == before  # the original copy untouched


def test_a_wordnet_copy_nltk_still_refuses_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTLENS_CACHE", str(tmp_path / "cache"))
    root = wn.nltk_root()
    monkeypatch.setattr(wn, "nltk_root", lambda: root)  # as if the copy were not checked
    (root / "lexnames").unlink()
    (root / "lexnames").hardlink_to(root / "adv.exc")  # a multiply-linked file NLTK refuses
    wn.wordnet.cache_clear()
    try:
        with pytest.raises(wn.WordNetNotInstalledError, match="NLTK refuses the WordNet copy") as caught:
            wn.wordnet()
    finally:
        wn.wordnet.cache_clear()
    assert "\n" not in str(caught.value) and "remove that folder" in str(caught.value)
