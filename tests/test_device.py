"""--device: the CPU or one CUDA GPU, chosen once at the boundary and recorded in every result.

This machine has no GPU, so what runs here is everything but a GPU forward: the spelling of a
device, the one-line refusal of a GPU that is not there (torch is a CPU build here), the selection
rule with CUDA *mocked* as present (``torch.cuda.is_available``/``device_count`` patched; no
forward runs on the mock), the labels and JSON, the manifests that say ``cuda``, ONNX Runtime
falling back to the CPU, fp16/bf16 on the CPU with their drift, and the token-budget batches.
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from contextlens.core import devices
from contextlens.core.backend import Backend
from contextlens.core.runtime_choice import ModelBackend
from contextlens.core.vectors import Provenance
from contextlens.errors import DeviceError, InputError

CPU_TORCH = devices.torch_cuda_build() is None  # this machine: torch 2.x+cpu
needs_cpu_torch = pytest.mark.skipif(not CPU_TORCH, reason="checks the refusal on a CPU-only torch build")


@pytest.mark.parametrize(
    ("asked", "normal"), [("cpu", "cpu"), ("AUTO", "auto"), ("cuda", "cuda:0"), ("cuda:3", "cuda:3")]
)
def test_a_device_is_spelled_one_way(asked: str, normal: str) -> None:
    assert devices.check_device_choice(asked) == normal


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "cuda:-1", "mps", ""])
def test_an_unknown_device_is_refused_as_an_input_error(bad: str) -> None:
    with pytest.raises(DeviceError, match="unknown device") as caught:
        devices.check_device_choice(bad)
    assert isinstance(caught.value, InputError)


@needs_cpu_torch
def test_a_gpu_that_is_not_there_is_refused_in_one_line_without_importing_torch() -> None:
    code = (
        "import sys\n"
        "from contextlens.core.runtime_choice import ModelBackend\n"
        "from contextlens.errors import DeviceError\n"
        "for runtime in ('torch', 'auto'):\n"
        "    try:\n"
        "        ModelBackend.resolve('minilm', 'fp32', runtime, 'cuda')\n"
        "    except DeviceError as exc:\n"
        "        print(exc)\n"
        "print('torch' in sys.modules)\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *refusals, torch_loaded = shown.stdout.strip().splitlines()
    assert len(refusals) == 2 and torch_loaded == "False", shown.stdout
    assert "device cuda:0 asked for" in refusals[0] and "CPU-only build" in refusals[0]
    assert "use `device` cpu" in refusals[0] and refusals[1] == refusals[0]  # auto: torch is the GPU's runtime


@needs_cpu_torch
def test_auto_is_the_cpu_here_and_the_cpu_backend_is_the_reference() -> None:
    for runtime in ("torch", "onnx"):
        chosen = ModelBackend.resolve("minilm", "fp32", runtime, "auto")
        assert chosen.backend.device == "cpu"
    assert ModelBackend.resolve("minilm", "fp32", "torch", "auto").backend.is_reference


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch as if built with CUDA and seeing two GPUs, ONNX Runtime without its CUDA provider.
    Only the selection runs on this: no model is moved or run."""
    import torch

    monkeypatch.setattr(devices, "torch_cuda_build", lambda: "12.4")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(devices, "onnx_cuda_provider", lambda: False)


def test_the_selection_with_two_gpus_visible(two_gpus: None) -> None:
    resolve = ModelBackend.resolve
    assert resolve("minilm", "fp32", "torch", "auto").backend == Backend("fp32", "torch", "cuda:0")
    assert resolve("minilm", "fp16", "torch", "cuda:1").backend.device == "cuda:1"
    with pytest.raises(DeviceError, match=r"2 CUDA devices visible \(cuda:0\.\.cuda:1\)"):
        resolve("minilm", "fp32", "torch", "cuda:2")
    # int8 is a CPU quantizer: auto keeps it there, and asking for it on a GPU is refused
    assert resolve("minilm", "int8", "torch", "auto").backend.device == "cpu"
    for runtime in ("torch", "auto"):
        with pytest.raises(DeviceError, match="CPU only"):
            resolve("minilm", "int8", runtime, "cuda")
    # runtime auto, ONNX Runtime without its CUDA provider: torch on the GPU, not ONNX on the CPU
    assert resolve("minilm", "fp32", "auto", "auto").backend == Backend("fp32", "torch", "cuda:0")
    assert resolve("minilm", "bf16", "auto", "auto").backend == Backend("bf16", "torch", "cuda:0")
    assert resolve("minilm", "fp32", "auto", "cpu").backend.device == "cpu"
    # ONNX asked for by name on a GPU it cannot use: refused, naming the missing package
    with pytest.raises(DeviceError, match="no CUDA execution provider .*onnxruntime-gpu"):
        resolve("minilm", "fp32", "onnx", "cuda")


def test_onnx_runtime_counts_the_gpus_its_provider_sees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices, "onnx_cuda_provider", lambda: True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert devices.resolve_device("auto", "onnx") == "cuda:0"
    with pytest.raises(DeviceError, match="1 CUDA device visible"):
        devices.resolve_device("cuda:1", "onnx")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert devices.resolve_device("auto", "onnx") == "cpu"


def test_onnx_runtime_falling_back_to_the_cpu_is_refused_not_labelled_cuda(tmp_path) -> None:
    """ONNX Runtime opens a session on the CPU, with a log line, when its CUDA provider cannot
    start: that result would be a CPU one labelled cuda."""
    from contextlens.core.onnx_graphs import cuda_session

    asked = []

    class Session:
        def __init__(self, path, options, providers):  # noqa: ANN001 - onnxruntime's signature
            asked.append(providers)

        def get_providers(self) -> list[str]:
            return ["CPUExecutionProvider"]

    fake_ort = SimpleNamespace(InferenceSession=Session)
    with pytest.raises(DeviceError, match="fell back to the CPU"):
        cuda_session(fake_ort, tmp_path / "graph.onnx", None, "cuda:1")
    assert asked == [[("CUDAExecutionProvider", {"device_id": 1}), "CPUExecutionProvider"]]


def test_the_cpu_label_and_json_are_unchanged_and_a_gpu_is_named() -> None:
    assert Backend().to_dict() == {"precision": "fp32", "runtime": "torch"} and Backend().label == "fp32"
    gpu = Backend("fp16", "torch", "cuda")
    assert (gpu.device, gpu.label, gpu.name_with("minilm")) == ("cuda:0", "cuda:0 fp16", "minilm (cuda:0 fp16)")
    assert gpu.to_dict() == {"precision": "fp16", "runtime": "torch", "device": "cuda:0"}
    assert Backend.from_dict(gpu.to_dict()) == gpu and Backend.from_dict({"precision": "int8"}) == Backend("int8")
    assert Backend("fp32", "onnx", "cuda:1").label == "onnx cuda:1 fp32"
    assert not Backend("fp32", "torch", "cuda:0").is_reference
    with pytest.raises(InputError, match="no ONNX export at fp16"):
        Backend("fp16", "onnx")
    cpu_vector = Provenance("minilm", "hidden-state", 3)
    gpu_vector = Provenance("minilm", "hidden-state", 3, precision="bf16", device="cuda:0")
    assert "device" not in cpu_vector.to_dict()
    assert gpu_vector.to_dict()["device"] == "cuda:0" and gpu_vector.backend == Backend("bf16", "torch", "cuda:0")
    assert gpu_vector.describe().endswith("(cuda:0 bf16)")
    with pytest.raises(InputError, match="unknown device"):
        Provenance("minilm", "hidden-state", 3, device="tpu")


def _tiny_index(minilm, folder):  # noqa: ANN001, ANN202
    from contextlens.analyses.search.encoders import TextEncoder
    from contextlens.analyses.search.index import Document, IndexConfig, VectorIndex, build_faiss_index

    docs = [Document(f"d{i}", t) for i, t in enumerate(["the river bank", "a bank loan", "a cricket match"])]
    encoder = TextEncoder(minilm, "hidden-mean", 3)
    x = encoder.encode([d.text for d in docs])
    spec = IndexConfig("flat").resolved(len(docs), x.shape[1])
    VectorIndex(encoder.provenance, spec, build_faiss_index(x, spec), docs).save(folder)


def _say_made_on(folder, **encoder) -> None:  # noqa: ANN001
    from contextlens.analyses.search.index_files import current_folder

    path = current_folder(folder) / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["encoder"].update(encoder)
    path.write_text(json.dumps(manifest))


def test_an_index_made_on_a_gpu_is_queried_here_at_fp32_and_refused_at_fp16(minilm, tmp_path) -> None:
    from contextlens.analyses.search.index import IndexMismatchError, index_encoder, search_index

    _tiny_index(minilm, tmp_path / "index")
    here = search_index(tmp_path / "index", "money", k=1, model=minilm)
    _say_made_on(tmp_path / "index", device="cuda:0")
    assert index_encoder(tmp_path / "index").device == "cuda:0"  # read back from the manifest
    # fp32: a GPU's vectors agree with the CPU's within the printed check, so the query runs here
    there = search_index(tmp_path / "index", "money", k=1, model=minilm)
    assert [h.id for h in there.hits] == [h.id for h in here.hits]
    _say_made_on(tmp_path / "index", device="cuda:0", precision="fp16")
    with pytest.raises(IndexMismatchError, match="made on cuda:0 but the query runs on cpu"):
        search_index(tmp_path / "index", "money", k=1, model="minilm", precision="fp16", device="cpu")


def test_a_corpus_folder_continues_on_another_device_only_where_its_vectors_agree(tmp_path) -> None:
    """fp32 continues across devices (within the printed check), the first run's device kept and the
    others recorded; fp16/bf16 never cross from a GPU to the CPU."""
    from contextlens.analyses.corpus.manifest import Manifest, read_manifest

    settings = dict(corpus="c.txt", targets=["bank"], model="minilm", revision=None, weights_sha256=None,
                    layers=[3], pooling="mean", dtype="float16", chunk_chars=32_000, hidden_size=384)  # fmt: skip
    cpu = Manifest(**settings)
    assert "device" not in cpu.to_dict() and "continued_on" not in cpu.to_dict()  # a CPU folder's is as before
    Manifest(**settings, device="cuda:0").write(tmp_path)
    gpu = read_manifest(tmp_path)
    assert gpu.device == "cuda:0" and gpu.backend == Backend("fp32", "torch", "cuda:0")
    cpu.check_same_job(gpu, tmp_path)  # fp32: agrees within the check, continues
    cpu.continue_from(gpu)
    assert (cpu.device, cpu.continued_on) == ("cuda:0", ["cpu"])
    cpu.write(tmp_path)
    assert read_manifest(tmp_path).continued_on == ["cpu"]
    half = {**settings, "precision": "fp16"}
    Manifest(**half, device="cuda:1").check_same_job(Manifest(**half, device="cuda:0"), tmp_path)  # same kind
    with pytest.raises(InputError, match="device='cuda:0', not 'cpu': fp16 vectors of a GPU and of the CPU"):
        Manifest(**half).check_same_job(Manifest(**half, device="cuda:0"), tmp_path)


def test_a_corpus_job_on_gpus_hands_its_actors_the_device_and_loads_no_model(tmp_path, monkeypatch) -> None:
    """A Ray job on GPUs (the cluster's, faked: no Ray starts): the driver loads no model, even at
    fp16 (a head node often has no GPU), each actor is handed cuda:0 (its own GPU), and the
    manifest says cuda:0."""
    from contextlens.analyses.corpus import engines, extract

    corpus = tmp_path / "c.txt"
    corpus.write_text("The bank of the river.\n")
    handed: dict = {}
    monkeypatch.setattr(engines, "prepare", lambda *a: 1)
    monkeypatch.setattr(engines, "job_device", lambda engine, address, actors, device, precision: "cuda:0")
    monkeypatch.setattr(engines, "run", lambda engine, spec, *a, **k: handed.update(spec=spec))

    def loader(*args):  # noqa: ANN002, ANN202
        raise AssertionError(f"the driver loaded {args}")

    with pytest.raises(InputError):  # the stand-in engine read nothing: an empty corpus, said after
        extract.extract_corpus(str(corpus), ["bank"], tmp_path / "out", model="minilm", engine="ray",
                               address="10.0.0.1:6379", precision="fp16", device="cuda", layers=[6],
                               loader=loader)  # fmt: skip
    assert (handed["spec"].device, handed["spec"].precision) == ("cuda:0", "fp16")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert (manifest["device"], manifest["precision"]) == ("cuda:0", "fp16")


def test_a_folder_made_on_a_gpu_is_continued_here_at_fp32_and_says_so(minilm, tmp_path) -> None:
    from contextlens.analyses.corpus.extract import extract_corpus

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n\n".join(["The river bank flooded.", "She paid the bank back."] * 20) + "\n")
    out = tmp_path / "out"
    job = dict(model="minilm", layers=[6], chunk_chars=200, loader=lambda *a: minilm)
    whole = extract_corpus(str(corpus), ["bank"], out, **job)
    shards = sorted(out.glob("part-*.parquet"))
    assert len(shards) > 2
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps(manifest | {"device": "cuda:0", "complete": False}))
    shards[-1].unlink()  # a job killed on the GPU box, finished here
    done = extract_corpus(str(corpus), ["bank"], out, **job)
    assert done.stats.chunks_skipped == len(shards) - 1 and done.manifest.counts == whole.manifest.counts
    written = json.loads((out / "manifest.json").read_text())
    assert (written["device"], written["continued_on"]) == ("cuda:0", ["cpu"])


def test_a_corpus_searchs_example_runs_where_the_folders_vectors_agree(tmp_path) -> None:
    from contextlens.analyses.corpus.manifest import Manifest
    from contextlens.analyses.corpus.occurrence_search import example_device

    settings = dict(corpus="c.txt", targets=["bank"], model="minilm", revision=None, weights_sha256=None,
                    layers=[3], pooling="mean", dtype="float16", chunk_chars=32_000, hidden_size=384)  # fmt: skip
    assert example_device(Manifest(**settings, device="cuda:0"), None, tmp_path) == "cpu"  # fp32: here
    half = Manifest(**settings, precision="bf16", device="cuda:0")
    assert example_device(half, None, tmp_path) == "cuda:0" and example_device(half, "cuda:1", tmp_path) == "cuda:1"
    with pytest.raises(InputError, match="bf16 vectors made on cuda:0, but the example would run on cpu"):
        example_device(half, "cpu", tmp_path)


def test_the_cpu_vectors_are_the_same_whatever_the_device_plumbing(minilm) -> None:
    """The CPU path after devices: the same calls on the same tensors (to("cpu") and .cpu() return
    the tensor itself), so the vectors equal a plain transformers forward bit for bit."""
    import torch

    from contextlens.core.occurrences import parse_marked

    texts = ["I sat on the river [bank].", "She paid the [bank] back."]
    got = minilm.encode_occurrences([parse_marked(t) for t in texts], layers=[6], batch_size=1, as_array=True)
    for n, text in enumerate(texts):
        tok = minilm.tokenize(parse_marked(text))
        with torch.inference_mode():
            out = minilm.model(input_ids=torch.tensor([tok.input_ids]), output_hidden_states=True)
        want = out.hidden_states[6][0, list(tok.target_positions)].mean(0).numpy()
        np.testing.assert_array_equal(got[n, 0], want)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_half_precision_runs_on_the_cpu_with_its_drift_measured_like_int8s(precision: str, minilm) -> None:
    """fp16 and bf16 cast the whole network (a GPU's fast path); on the CPU they run too, slower
    than fp32, and their drift from fp32 is measured on the fixed sentences and printed as int8's."""
    from contextlens.core.contextual_models import load_contextual
    from contextlens.core.drift import drift

    measured = drift("minilm", precision)
    assert measured.backend == Backend(precision) and len(measured.mean_cosine) == minilm.num_layers + 1
    assert measured.tokens > 500 and min(measured.mean_cosine) > 0.999  # close ...
    assert max(measured.max_abs_diff) > 1e-4  # ... and not exact
    assert measured.line().startswith(f"{precision} drift vs fp32 (minilm, cosine per layer mean/min over")
    half = load_contextual("minilm", precision)
    assert half.identity != minilm.identity  # its results never come from an fp32 cache entry
    texts = ["I sat on the river bank.", "She paid the bank back."]
    ours, reference = half.embed_texts(texts), minilm.embed_texts(texts)
    assert ours.dtype == np.float32 and not np.array_equal(ours, reference)
    cosines = (ours * reference).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosines.min() > 0.999


def test_a_half_precision_result_says_so_and_prints_its_drift() -> None:
    from tests.helpers import run_cli

    args = ("compare", "The [bank] lent money.", "The river [bank] flooded.", "-m", "minilm")
    r = run_cli(*args, "--precision", "bf16", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["precision"] == "bf16"
    assert "bf16 drift vs fp32 (minilm" in r.stderr


def _one_line_error(r, text: str) -> None:  # noqa: ANN001
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and text in lines[0], r.stderr


@needs_cpu_torch
@pytest.mark.parametrize(
    "command",
    [
        ("compare", "The [bank] lent money.", "The river [bank] flooded."),
        ("trace", "The river [bank] flooded."),
        ("eval", "wic", "--quick"),
        ("cost",),
    ],
)
def test_device_cuda_without_a_gpu_is_one_line_and_exit_2(command: tuple[str, ...]) -> None:
    from tests.helpers import run_cli

    _one_line_error(run_cli(*command, "-m", "minilm", "--device", "cuda"), "device cuda:0 asked for")
    _one_line_error(run_cli(*command, "-m", "minilm", "--device", "gpu"), "unknown device 'gpu'")


def test_every_command_with_a_precision_or_a_runtime_takes_a_device_too() -> None:
    """A --device wherever --precision or --runtime is, the corpus commands included."""
    from contextlens.cli import click_app

    def commands(group, path=()):  # noqa: ANN001, ANN202
        for name, command in getattr(group, "commands", {}).items():
            yield from commands(command, (*path, name)) if hasattr(command, "commands") else [((*path, name), command)]

    found = {path: {opt for p in cmd.params for opt in p.opts} for path, cmd in commands(click_app())}
    with_precision = [path for path, opts in found.items() if opts & {"--precision", "--runtime"}]
    assert len(with_precision) >= 18, with_precision
    assert {("corpus", "extract"), ("corpus", "plan"), ("corpus", "search")} <= set(with_precision)
    assert [path for path in with_precision if "--device" not in found[path]] == []


@needs_cpu_torch
@pytest.mark.parametrize("engine", ["local", "ray"])
def test_corpus_device_cuda_without_a_gpu_is_one_line_exit_2_and_writes_nothing(engine: str, tmp_path) -> None:
    """On Ray too: a local Ray's GPUs are this machine's, so no Ray starts to find none."""
    from tests.helpers import run_cli

    corpus = tmp_path / "c.txt"
    corpus.write_text("The river bank flooded.\n")
    job = (str(corpus), "--words", "bank", "-m", "minilm", "--layers", "6")
    out = tmp_path / "out"
    r = run_cli("corpus", "extract", *job, "--out", str(out), "--engine", engine, "--device", "cuda")
    _one_line_error(r, "device cuda:0 asked for")
    assert "--device cpu" in r.stderr and not out.exists()
    if engine == "local":
        _one_line_error(run_cli("corpus", "plan", *job, "--device", "cuda"), "device cuda:0 asked for")
        _one_line_error(run_cli("corpus", "plan", *job, "--device", "gpu"), "unknown device 'gpu'")


def test_token_batches_fill_the_budget_with_every_sequence_once() -> None:
    from contextlens.core.backbone import token_batches

    rng = np.random.default_rng(0)
    lengths = sorted(rng.integers(1, 200, size=500).tolist(), reverse=True)
    budget = 2048
    slices = token_batches(lengths, budget)
    assert [i for s in slices for i in range(s.start, s.stop)] == list(range(len(lengths)))
    for s in slices:
        rows, width = s.stop - s.start, lengths[s.start]  # the first is the longest: the padded width
        assert rows * width <= budget or rows == 1
        if s.stop < len(lengths):  # full: one more row would not have fit
            assert (rows + 1) * width > budget
    assert len(slices) < len(lengths) / 8  # short sequences many to a batch, not 32
    assert [(s.start, s.stop) for s in token_batches([5000, 10, 10], 1000)] == [(0, 1), (1, 3)]
    with pytest.raises(InputError, match="token_budget"):
        token_batches([3], 0)


def test_the_cpu_batches_by_sentence_count_and_a_token_budget_is_opt_in(minilm) -> None:
    """The CPU keeps batch_size rows a batch (its vectors bit for bit what they were); a budget set
    on a model batches by tokens, with the same vectors to float precision."""
    from contextlens.core.contextual_models import load_contextual

    assert minilm.token_budget is None
    items = [(i, list(range(n))) for i, n in enumerate([12, 3, 40, 7, 7, 25, 9])]
    assert [[k for k, _ in b] for b in minilm.batches(items, 3)] == [[2, 5, 0], [6, 3, 4], [1]]
    texts = [f"sentence number {n} about the river bank" + " and more" * n for n in range(12)]
    before = minilm.embed_texts(texts, batch_size=4)
    budgeted = load_contextual("minilm", "fp32", "torch", "cpu")
    assert budgeted is minilm  # one instance: set the budget for this test only
    try:
        minilm.token_budget = 200
        assert len(list(minilm.batches([(i, [0] * 20) for i in range(30)], 4))) == 3  # 10 rows of 20 a batch
        after = minilm.embed_texts(texts, batch_size=4)
    finally:
        minilm.token_budget = None
    np.testing.assert_allclose(after, before, atol=1e-5)
