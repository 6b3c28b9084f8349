"""One backend value (precision, runtime): checked once, one label, one JSON pair at the head of
every result, and the same spelling on the CLI, in the JSON and on the web page."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest
from fastapi.testclient import TestClient

from contextlens.core import backend as backend_module
from contextlens.core import onnx_runtime, precision
from contextlens.core.backend import PRECISIONS, REFERENCE, RUNTIMES, Backend
from contextlens.core.contextual_models import ContextualModel
from contextlens.errors import InputError
from tests.helpers import run_cli

BANK = ["I sat on the river [bank].", "I opened a [bank] account."]
HALF_ON_ONNX = {("fp16", "onnx"), ("bf16", "onnx")}


@pytest.mark.parametrize(
    ("precision_", "runtime", "parameter"), [("fp99", "torch", "precision"), ("fp32", "tensorflow", "runtime")]
)
def test_an_unknown_backend_is_refused_naming_the_parameter(precision_: str, runtime: str, parameter: str) -> None:
    with pytest.raises(InputError, match=rf"unknown {parameter} "):
        Backend(precision_, runtime)


def test_one_label_one_dict_one_reference() -> None:
    labels = {(p, r): Backend(p, r).label for p in PRECISIONS for r in RUNTIMES if (p, r) not in HALF_ON_ONNX}
    assert labels == {
        ("fp32", "torch"): "fp32",
        ("int8", "torch"): "int8",
        ("fp32", "onnx"): "onnx fp32",
        ("int8", "onnx"): "onnx int8",
        ("fp16", "torch"): "fp16",
        ("bf16", "torch"): "bf16",
    }
    for p, r in HALF_ON_ONNX:  # fp16/bf16 cast the torch network: there is no ONNX export at them
        with pytest.raises(InputError, match="runs on the torch runtime"):
            Backend(p, r)
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


def _calls_during(work) -> Counter:  # noqa: ANN001 - a callable run under a call counter
    """How often each contextlens function ran while ``work()`` did (by function name)."""
    counts: Counter = Counter()

    def count(frame, event, _arg):  # noqa: ANN001, ANN202 - sys.setprofile's signature
        if event == "call" and "contextlens" in frame.f_code.co_filename:
            counts[frame.f_code.co_name] += 1

    sys.setprofile(count)
    try:
        work()
    finally:
        sys.setprofile(None)
    return counts


@pytest.mark.parametrize("runtime", ["torch", "onnx"])
def test_a_faces_request_is_checked_and_resolved_once_then_passed_down(
    runtime: str, minilm: ContextualModel, minilm_onnx: ContextualModel
) -> None:
    """One request, one check of each option and one resolution: the load below the boundary
    (the backbone, the drift line) checks nothing again (issue 31: it was checked five times)."""
    from contextlens.cli.common import load_model, model_choice
    from contextlens.core.contextual_models import load_contextual

    # the fixture's instance may have left the six-model cache in a long session (a worker that
    # loaded mpnet, int8, ... since): the API's load now is the instance the face must get
    expected = load_contextual("minilm", "fp32", runtime)
    fixture = {"torch": minilm, "onnx": minilm_onnx}[runtime]
    assert (expected.name, expected.backend) == (fixture.name, fixture.backend)
    loaded = []
    counts = _calls_during(lambda: loaded.append(load_model(model_choice("minilm", "fp32", runtime))))
    assert loaded[0] is expected  # the one instance per name and backend
    assert counts["check_runtime_choice"] == counts["auto_runtime"] == counts["model_facts"] == 1, counts
    # the request's precision, then the resolved Backend's invariant (made once, never again below)
    assert (counts["check_precision"], counts["check_runtime"], counts["__post_init__"]) == (2, 1, 1), counts
    assert counts["resolve_runtime"] == counts["check_model"] == 0, counts


def test_the_face_and_the_api_resolve_auto_alike_and_refuse_alike() -> None:
    from contextlens.core.runtime_choice import ModelBackend, resolve_runtime

    for asked in PRECISIONS:
        for attention in (False, True):
            face = ModelBackend.checked("minilm", asked, "auto", weights=attention)
            assert face.backend.runtime == resolve_runtime("minilm", asked, "auto", attention=attention)
            assert face.backend.precision == asked and face.model == "minilm"
    assert ModelBackend.resolve("minilm", "int8", "auto") == ModelBackend.checked("minilm", "int8", "auto")
    with pytest.raises(InputError, match="layer 99 is out of range"):
        ModelBackend.checked("minilm", layers=[99])
    with pytest.raises(InputError, match="ONNX int8 has no attention graph"):
        ModelBackend.checked("minilm", "int8", "onnx", attention=(1, 0))


def test_the_backbone_asks_its_net_not_which_runtime_it_runs_on() -> None:
    """The forward strategy is the net object's (TorchNet, LeanNet), not string tests in the backbone."""
    import inspect

    from contextlens.core import backbone

    code = inspect.getsource(backbone)
    for test in ('runtime == "', 'runtime != "', "self.runtime"):
        assert test not in code.replace("def runtime(self)", ""), test


def test_eval_contextuality_on_a_corpus_hands_the_analysis_the_resolved_runtime(tmp_path, monkeypatch) -> None:
    """`eval contextuality --corpus C --runtime auto` resolved auto for the load, then handed the
    analysis "auto", which refused it after the model had loaded ("unknown runtime 'auto'")."""
    import contextlens.analyses.corpus.contextuality as corpus_contextuality
    import contextlens.cli.eval.contextuality as face
    from contextlens.cli.common import model_choice

    seen = []

    class Stop(InputError):
        pass

    def record(_source, _model, *_args, runtime="torch", **_kwargs):
        seen.append(runtime)
        raise Stop("stop before the work")

    monkeypatch.setattr(corpus_contextuality, "contextuality_of_corpus", record)
    monkeypatch.setattr(face, "load_model", lambda chosen, threads=None: None)  # the load is not what is tested
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The river bank flooded.\n\nShe went to the bank.\n", encoding="utf-8")
    done = run_cli("eval", "contextuality", "--corpus", str(corpus), "-m", "minilm", "--runtime", "auto")
    assert "stop before the work" in done.stderr, done.stderr
    assert seen == [model_choice("minilm", "fp32", "auto").backend.runtime] and "auto" not in seen


def test_whether_a_model_gives_attention_weights_is_the_models_to_say(
    minilm: ContextualModel, minilm_onnx: ContextualModel, monkeypatch
) -> None:
    """The faces ask the model (``gives_attention``), never which runtime it runs on: torch always
    gives them, ONNX Runtime only from a checked attention graph (int8 has none)."""
    from contextlens.core.backbone import Backbone

    assert minilm.gives_attention and minilm_onnx.gives_attention == minilm_onnx.lean_attention
    monkeypatch.setattr(Backbone, "lean_attention", property(lambda self: False))  # as int8 on ONNX Runtime
    assert minilm.gives_attention and not minilm_onnx.gives_attention
