"""The models named for what they are where a learner reads their numbers (issue 19)."""

import pytest

from contextlens.core.model_kinds import KINDS, model_kind
from contextlens.core.resources import REGISTRY
from tests.helpers import run_cli

SUMMARY = "minilm = MiniLM-L6 fine-tuned for sentence similarity, not plain BERT"


def test_every_registered_contextual_model_has_a_kind():
    contextual = {n for n, s in REGISTRY.items() if s.kind == "contextual"}
    assert contextual == set(KINDS)
    assert model_kind("/some/folder") is None
    assert "left" in model_kind("smollm2").summary


@pytest.mark.parametrize(
    "args",
    [
        ("compare", "The river [bank] flooded.", "I opened a [bank] account.", "-m", "minilm"),
        ("trace", "The river [bank] flooded.", "-m", "minilm"),
        ("rank", "-m", "minilm"),
    ],
)
def test_compare_trace_and_rank_say_what_the_model_is(args):
    out = run_cli(*args)
    assert out.returncode == 0, out.stderr
    assert SUMMARY in " ".join(out.stdout.split())
