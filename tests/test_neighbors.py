"""The neighbors analysis: one document for the CLI and the web page."""

from __future__ import annotations

import json

import pytest

from contextlens.analyses.lesson.neighbors import neighbors, parse_analogy
from contextlens.errors import InputError


def test_analogy_finds_queen_and_says_what_it_computed(glove):
    result = neighbors(glove, analogy="man:king::woman", top=5)
    assert result.positive == ["king", "woman"] and result.negative == ["man"]
    assert "queen" in [w for w, _ in result.neighbors]
    doc = result.to_dict()
    assert doc["analogy"] == "man:king::woman" and len(doc["neighbors"]) == 5
    json.dumps(doc, allow_nan=False)


def test_word_neighbors_are_sorted_by_cosine_and_exclude_the_word(glove):
    result = neighbors("glove-50d", "bank", top=8)
    cosines = [c for _, c in result.neighbors]
    assert cosines == sorted(cosines, reverse=True)
    assert "bank" not in [w for w, _ in result.neighbors]
    assert "analogy" not in result.to_dict()


@pytest.mark.parametrize("text", ["king:man", "a::b::c::d", ":b::c", ""])
def test_a_malformed_analogy_is_refused(text):
    with pytest.raises(InputError, match="a:b::c"):
        parse_analogy(text)


def test_nothing_to_look_for_and_top_zero_are_refused(glove):
    with pytest.raises(InputError, match="give a word"):
        neighbors(glove)
    with pytest.raises(InputError, match="`top` must be at least 1"):
        neighbors(glove, "bank", top=0)


def test_a_word_with_an_analogy_is_refused_not_ignored_in_one_line():
    """The analogy used to win silently over a typed word (the web page's /neighbors); the refusal
    names a positional argument, which crashed the CLI's flag naming before (a traceback)."""
    from tests.helpers import run_cli

    out = run_cli("neighbors", "cat", "--analogy", "man:king::woman")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == (
        "error: give either --analogy or WORD (with --positive/--negative), not both: an analogy would ignore the words"
    )
