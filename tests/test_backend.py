"""One backend value (precision, runtime): checked once, one label, one JSON pair at the head of
every result, and the same spelling on the CLI, in the JSON and on the web page."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from contextlens.core import backend as backend_module
from contextlens.core import onnx_runtime, precision
from contextlens.core.backend import PRECISIONS, REFERENCE, RUNTIMES, Backend
from contextlens.core.contextual_models import ContextualModel
from contextlens.errors import InputError
from tests.helpers import run_cli

BANK = ["I sat on the river [bank].", "I opened a [bank] account."]


@pytest.mark.parametrize(
    ("precision_", "runtime", "parameter"), [("fp16", "torch", "precision"), ("fp32", "tensorflow", "runtime")]
)
def test_an_unknown_backend_is_refused_naming_the_parameter(precision_: str, runtime: str, parameter: str) -> None:
    with pytest.raises(InputError, match=rf"unknown {parameter} "):
        Backend(precision_, runtime)


def test_one_label_one_dict_one_reference() -> None:
    labels = {(p, r): Backend(p, r).label for p in PRECISIONS for r in RUNTIMES}
    assert labels == {
        ("fp32", "torch"): "fp32",
        ("int8", "torch"): "int8",
        ("fp32", "onnx"): "onnx fp32",
        ("int8", "onnx"): "onnx int8",
    }
    assert Backend() == REFERENCE and REFERENCE.is_reference
    assert not Backend("int8").is_reference and not Backend("fp32", "onnx").is_reference
    assert Backend("int8", "onnx").to_dict() == {"precision": "int8", "runtime": "onnx"}
    # the tuples and checks kept their old homes
    assert precision.PRECISIONS is PRECISIONS and onnx_runtime.RUNTIMES is RUNTIMES
    assert precision.check_precision is backend_module.check_precision


def test_the_backend_module_imports_nothing_heavy() -> None:
    """Faces check a precision or runtime before anything heavy loads: the module must be light."""
    code = (
        "import sys, contextlens.core.backend as b; b.Backend('int8', 'onnx'); "
        "print(sorted(m for m in ('torch', 'transformers', 'gensim', 'numpy') if m in sys.modules))"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "[]"


def test_a_loaded_model_and_its_vectors_carry_the_backend(minilm: ContextualModel) -> None:
    assert minilm.backend == REFERENCE and (minilm.precision, minilm.runtime) == ("fp32", "torch")
    from contextlens.core.occurrences import parse_marked

    vectors = minilm.encode(parse_marked(BANK[0]), layers=[-1])
    assert vectors.hidden_state(-1).provenance.backend == REFERENCE


def test_attention_trace_and_the_lesson_put_the_backend_at_their_head(minilm: ContextualModel) -> None:
    from contextlens.analyses.lesson.attention import attend
    from contextlens.analyses.lesson.run import run_lesson
    from contextlens.analyses.lesson.trace import trace
    from contextlens.core.occurrences import parse_marked

    occurrence = parse_marked(BANK[0])
    lesson = run_lesson(minilm, "glove-50d", permutations=50)
    for result in (attend([occurrence], minilm), trace(occurrence, minilm), lesson):
        head = list(result.to_dict())[:3]
        assert head == ["model", "precision", "runtime"], type(result).__name__
        assert {k: result.to_dict()[k] for k in head[1:]} == {"precision": "fp32", "runtime": "torch"}
    for part in (lesson.ranking, lesson.probe, lesson.input_share, lesson.cost, lesson.exploration):
        assert list(part.to_dict())[:3] == ["model", "precision", "runtime"], type(part).__name__


def test_the_label_is_spelled_one_way_on_the_cli_in_the_json_and_on_the_web(minilm_onnx: ContextualModel) -> None:
    from contextlens.web.app import create_app

    label = Backend("fp32", "onnx").label
    args = ("eval", "similarity", "--quick", "-m", "minilm", "--runtime", "onnx")
    table = run_cli(*args)
    assert table.returncode == 0, table.stderr
    assert f"minilm ({label})" in table.stdout  # the table title
    assert f"{label} vs torch fp32 (minilm" in table.stderr  # the export check printed with the result
    meta = json.loads(run_cli(*args, "--json").stdout)["meta"]
    assert Backend(meta["precision"], meta["runtime"]).label == label
    client = TestClient(create_app("minilm", runtime="onnx"), base_url="http://127.0.0.1")
    assert f"minilm ({label})" in client.get("/compare").text
    for wrong in ("fp32 (onnx)", "int8 (onnx)", "onnx, fp32"):
        assert wrong not in table.stdout + table.stderr + client.get("/compare").text
