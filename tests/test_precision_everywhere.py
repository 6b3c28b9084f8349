"""--precision and --threads wherever a contextual model runs, and the precision in every result.

int8 (core/precision.py) is opt-in and not exact: its numbers must say so (``precision`` in the
JSON, the drift line on stderr), its vectors must never be served from an fp32 cache entry, and
an index must not mix the two.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from contextlens.analyses.measures.span_encoding import encode_spans
from contextlens.analyses.search.encoders import TextEncoder, provenance_from_dict
from contextlens.analyses.search.index import Document, VectorIndex, search_index
from contextlens.analyses.search.index_files import current_folder
from contextlens.core.contextual_models import ContextualModel, load_contextual
from contextlens.core.occurrences import locate
from contextlens.core.vectors import Provenance
from tests.helpers import run_cli

DOCS = ["The river bank flooded after the storm.", "She opened an account at the bank.", "A cake with cherries."]


@pytest.fixture(scope="module")
def minilm_int8() -> ContextualModel:
    return load_contextual("minilm", "int8")


def one_line_error(r, text: str) -> None:
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and text in lines[0], r.stderr


def test_eval_int8_json_says_int8_and_stays_close_to_fp32() -> None:
    args = ("eval", "similarity", "--quick", "-m", "minilm", "--json")
    fp32 = run_cli(*args)
    int8 = run_cli(*args, "--precision", "int8", "--threads", "1")
    assert fp32.returncode == 0 and int8.returncode == 0, int8.stderr
    a, b = json.loads(fp32.stdout), json.loads(int8.stdout)
    assert a["meta"]["precision"] == "fp32" and b["meta"]["precision"] == "int8"
    assert "int8 drift vs fp32 (minilm" in int8.stderr and "drift" not in fp32.stderr
    ours = [(r, s) for r, s in zip(a["rows"], b["rows"], strict=True) if r["system"].startswith("minilm:")]
    assert ours and all((r["layer"], r["split"], r["metric"]) == (s["layer"], s["split"], s["metric"]) for r, s in ours)
    diffs = [abs(r["value"] - s["value"]) for r, s in ours if r["metric"] == "spearman"]
    assert all(abs(r["value"] - s["value"]) == 0 for r, s in ours if r["layer"] == 0)  # embeddings stay fp32
    assert max(diffs) > 1e-4  # int8 is not exact ...
    assert max(diffs) < 0.15  # ... but close (the drift line says how close, per layer)
    table = run_cli(*args[:-1], "--precision", "int8")  # the encoding is cached now
    assert table.returncode == 0 and "minilm (int8)" in table.stdout
    static = [(r["value"], s["value"]) for r, s in zip(a["rows"], b["rows"], strict=True) if r["system"] == "glove-50d"]
    assert static and all(x == y for x, y in static)  # the static baseline does not run the model


@pytest.mark.parametrize("command", [("eval", "wic"), ("eval", "retrieval"), ("eval", "layers"), ("cka",), ("cost",)])
def test_bad_precision_and_threads_are_one_line(command: tuple[str, ...]) -> None:
    before = torch.get_num_threads()
    try:
        one_line_error(run_cli(*command, "-m", "minilm", "--precision", "fp99"), "unknown precision 'fp99'")
        zero = run_cli(*command, "-m", "minilm", "--threads", "0")
        one_line_error(zero, "--threads")
    finally:
        torch.set_num_threads(before)


def test_every_eval_subcommand_and_model_command_takes_the_options() -> None:
    commands = [
        ("eval", name) for name in ("wic", "wsd", "wsi", "similarity", "contextuality", "layers", "retrieval")
    ] + [("index", "build"), ("index", "search"), ("cka",), ("cost",), ("serve",)]
    for command in commands:
        r = run_cli(*command, "--help")
        assert r.returncode == 0 and "--precision" in r.stdout and "--threads" in r.stdout, command


def test_fp32_cache_is_not_reused_for_int8(
    minilm: ContextualModel, minilm_int8: ContextualModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTEXTLENS_CACHE", str(tmp_path))
    texts, spans = DOCS, [(0, 4, 9), (1, 30, 34)]
    a = encode_spans(minilm, texts, spans)
    b = encode_spans(minilm_int8, texts, spans)
    assert minilm.identity != minilm_int8.identity and "int8" in minilm_int8.identity
    assert not np.array_equal(a.hidden, b.hidden)  # recomputed at int8, not read from the fp32 entry
    np.testing.assert_array_equal(a.hidden[:, 0], b.hidden[:, 0])  # layer 0 (embeddings) is not quantized
    assert len(list((tmp_path / "arrays").rglob("*.npz"))) == 2
    np.testing.assert_array_equal(encode_spans(minilm_int8, texts, spans).hidden, b.hidden)  # its own entry, reused
    x = TextEncoder(minilm, "hidden-mean", 3).encode_cached(DOCS)
    y = TextEncoder(minilm_int8, "hidden-mean", 3).encode_cached(DOCS)
    assert not np.array_equal(x, y) and len(list((tmp_path / "arrays").rglob("*.npz"))) == 4


def test_int8_vectors_say_so(minilm_int8: ContextualModel) -> None:
    enc = minilm_int8.encode(locate("The [bank] lent money."), layers=[2])
    p = enc.hidden_state(2).provenance
    assert p.precision == "int8" and p.to_dict()["precision"] == "int8" and "(int8)" in p.describe()
    assert Provenance("minilm", "hidden-state", 2).precision == "fp32"  # the default
    assert TextEncoder(minilm_int8, "sentence").provenance.precision == "int8"


def test_old_manifest_without_precision_loads_as_fp32(minilm: ContextualModel, tmp_path: Path) -> None:
    encoder = TextEncoder(minilm, "sentence")
    folder = VectorIndex.build([Document(str(i), t) for i, t in enumerate(DOCS)], encoder).save(tmp_path / "ix")
    path = current_folder(folder) / "manifest.json"
    manifest = json.loads(path.read_text())
    assert manifest["encoder"]["precision"] == "fp32"
    del manifest["encoder"]["precision"]  # as written before the field existed
    path.write_text(json.dumps(manifest))
    assert VectorIndex.load(folder).provenance == encoder.provenance
    assert provenance_from_dict(manifest["encoder"]).precision == "fp32"
    assert search_index(folder, "money", k=1).hits[0].text == DOCS[1]
    refused = run_cli("index", "search", str(folder), "money", "--precision", "int8")
    one_line_error(refused, "precision 'int8'")


def test_int8_index_records_and_enforces_its_precision(tmp_path: Path) -> None:
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(DOCS) + "\n")
    out = tmp_path / "ix"
    build = run_cli(
        "index", "build", str(docs), "--out", str(out), "-m", "minilm", "--kind", "hidden-mean", "--layer", "3",
        "--precision", "int8", "--json",
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    assert json.loads(build.stdout)["encoder"]["precision"] == "int8" and "int8 drift" in build.stderr
    found = run_cli("index", "search", str(out), "flooding river", "-k", "1", "--json")  # the index's precision
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["encoder"]["precision"] == "int8" and result["hits"][0]["text"] == DOCS[0]
    assert "int8 drift" in found.stderr
    one_line_error(run_cli("index", "search", str(out), "river", "--precision", "fp32"), "precision 'fp32'")
    one_line_error(run_cli("index", "search", str(out), "river", "--precision", "fp99"), "unknown precision")


def test_cost_counts_int8_weights_and_cka_records_both_precisions(
    minilm: ContextualModel, minilm_int8: ContextualModel, glove
) -> None:
    from contextlens.analyses.representations.cka import compare_layers
    from contextlens.analyses.search.cost import measure_cost
    from contextlens.data.text_sets import corpus_texts

    texts = corpus_texts("builtin", 12)
    report = measure_cost(minilm_int8, glove, texts, count=1000, repeats=1)
    fp32_bytes = 4 * sum(p.numel() for p in minilm.model.parameters())
    assert report.to_dict()["precision"] == "int8"
    assert 0.5 * fp32_bytes < report.model_weight_bytes < 0.9 * fp32_bytes  # int8 linears, fp32 embeddings
    cka = compare_layers(minilm, minilm_int8, corpus="builtin", limit=40).to_dict()
    assert (cka["precision_a"], cka["precision_b"]) == ("fp32", "int8")
    diagonal = np.diag(np.asarray(cka["matrix"]))
    assert diagonal[0] > 0.999 and diagonal.min() > 0.9  # int8 keeps each layer's geometry


def test_lesson_json_and_the_web_face_carry_the_precision(minilm_int8: ContextualModel) -> None:
    from contextlens.web.app import create_app

    bank = ["I sat on the river [bank].", "I opened a [bank] account."]
    r = run_cli("compare", *bank, "-m", "minilm", "--precision", "int8", "--runtime", "torch", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["precision"] == "int8"
    assert json.loads(run_cli("compare", *bank, "-m", "minilm", "--json").stdout)["precision"] == "fp32"
    client = TestClient(create_app("minilm", precision="int8"), base_url="http://127.0.0.1")
    assert client.get("/health").json()["precision"] == "int8"
    api = client.post("/api/compare", json={"sentences": bank}).json()
    assert api == json.loads(r.stdout)  # the same document as the CLI's at int8
    assert "minilm (int8)" in client.get("/compare").text


def test_int8_picks_the_activation_bits_that_drift_less_on_this_cpu(minilm) -> None:
    """With VNNI the eighth activation bit is used (less drift); without it torch's 7-bit layer stays,
    because there the AVX2 kernel's 16-bit pairwise sums saturate and 8 bits drift more (9x on an
    EPYC without VNNI). Whatever this CPU is, the bits chosen are the ones that drift less here."""
    import torch

    from contextlens.core import precision
    from contextlens.core.contextual_models import load_contextual

    quantized = load_contextual("minilm", "int8").model
    layers = [m for m in quantized.modules() if isinstance(m, torch.ao.nn.quantized.dynamic.Linear)]
    assert layers
    full = all(isinstance(m, precision.FullRangeDynamicLinear) for m in layers)
    assert full == (precision.ACTIVATION_BITS == 8)
    assert f"a{precision.ACTIVATION_BITS}" in precision.QUANT_RULE
    assert precision.QUANT_RULE in load_contextual("minilm", "int8").identity  # caches key on the rule
    # the layer itself, on the same weights: the chosen bits land closer to fp32 than the others
    torch.manual_seed(0)
    linear = torch.nn.Linear(384, 384)
    x = torch.randn(64, 384)
    seven = torch.ao.nn.quantized.dynamic.Linear.from_float(_with_qconfig(linear))
    eight = precision.FullRangeDynamicLinear.from_float(_with_qconfig(linear))
    exact = linear(x)
    error = {7: float((seven(x) - exact).abs().mean()), 8: float((eight(x) - exact).abs().mean())}
    chosen, other = precision.ACTIVATION_BITS, 15 - precision.ACTIVATION_BITS
    assert error[chosen] <= error[other], f"{chosen} bits chosen, but on this CPU they drift more: {error}"


def test_the_activation_bits_follow_the_cpus_vnni_flag() -> None:
    """Both branches of the choice, whatever this machine has: /proc/cpuinfo's flags line read."""
    from contextlens.core.precision import cpu_flags, has_vnni

    epyc_without = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw\n"
    with_avx512 = epyc_without.replace("avx512bw", "avx512bw avx512_vnni")
    with_avx = epyc_without.replace("avx512bw", "avx_vnni")
    assert cpu_flags(epyc_without) >= {"avx2", "avx512f"} and not has_vnni(cpu_flags(epyc_without))
    assert has_vnni(cpu_flags(with_avx512)) and has_vnni(cpu_flags(with_avx))
    assert cpu_flags("processor\t: 0\nBogoMIPS\t: 50.00\n") == set()  # an ARM cpuinfo has no flags line


def _with_qconfig(linear):
    import torch

    linear.qconfig = torch.ao.quantization.default_dynamic_qconfig
    return linear
