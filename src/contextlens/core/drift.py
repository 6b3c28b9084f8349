"""The drift of a precision or runtime against torch fp32, measured and cached.

Loading both models to compare them sits here, above :mod:`contextlens.core.contextual_models`;
what the comparison is made of (the fixed sentence set, the batch, the per-layer statistics) stays
in :mod:`contextlens.core.precision`, below the backbone, so the ONNX export can check itself with
it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from contextlens.core.backend import Backend
from contextlens.core.contextual_models import ContextualModel, load_contextual, load_resolved
from contextlens.core.disk_cache import cache_key, cached_arrays
from contextlens.core.onnx_graphs import attention_check
from contextlens.core.runtime_choice import ModelBackend


@dataclass(frozen=True)
class Drift:
    """Per layer 0..L: mean and minimum cosine, and the largest absolute difference, between the
    torch fp32 hidden states and another precision's or runtime's, over the tokens of a fixed
    sentence set."""

    model: str
    sentences: int
    tokens: int
    mean_cosine: tuple[float, ...]
    min_cosine: tuple[float, ...]
    max_abs_diff: tuple[float, ...] = ()
    backend: Backend = Backend("int8")  # what is measured against torch fp32
    attention_max_abs_diff: tuple[float, ...] = ()  # per block, an ONNX attention graph's, where one is kept

    @property
    def worst_mean(self) -> float:
        """The lowest per-layer mean cosine: the benchmark's ``int8_min_cosine``."""
        return min(self.mean_cosine)

    def line(self) -> str:
        """One line for stderr: ``layer mean/min`` pairs (and the largest difference for an fp32
        runtime, whose claim is exactness)."""
        pairs = " ".join(
            f"{k}:{m:.4f}/{lo:.4f}" for k, (m, lo) in enumerate(zip(self.mean_cosine, self.min_cosine, strict=True))
        )
        what = self.backend.label
        cpu = " on the cpu" if self.backend.on_gpu else ""  # the reference's device, said where it differs
        head = f"{what} vs torch fp32{cpu} ({self.model}, {self.tokens} tokens)"
        if self.backend.precision == "fp32":
            largest = max(self.max_abs_diff) if self.max_abs_diff else float("nan")
            lowest = min(self.min_cosine) if self.min_cosine else float("nan")
            attention = (
                f"; attention weights within {max(self.attention_max_abs_diff):.1e} of torch's eager attention"
                if self.attention_max_abs_diff
                else ""
            )
            if lowest >= 0.99999:  # every layer's pairs would print as 1.0000/1.0000: say it once
                return (
                    f"{head}: largest |difference| {largest:.1e}; "
                    f"cosine at least {lowest:.5f} at every layer{attention}"
                )
            return f"{head}: largest |difference| {largest:.1e}; cosine per layer mean/min: {pairs}{attention}"
        return f"{what} drift vs fp32{cpu} ({self.model}, cosine per layer mean/min over {self.tokens} tokens): {pairs}"

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            **self.backend.to_dict(),
            "sentences": self.sentences,
            "tokens": self.tokens,
            "mean_cosine": list(self.mean_cosine),
            "min_cosine": list(self.min_cosine),
            "max_abs_diff": list(self.max_abs_diff),
            "attention_max_abs_diff": list(self.attention_max_abs_diff),
        }


def drift(name: str, precision: str = "int8", runtime: str = "torch", device: str = "cpu") -> Drift:
    """``precision`` at ``runtime`` on ``device`` vs torch fp32 on the CPU for a model name:
    :func:`drift_on` of the request."""
    return drift_on(name, ModelBackend.resolve(name, precision, runtime, device).backend)


@lru_cache(maxsize=8)
def drift_on(name: str, backend: Backend) -> Drift:
    """A resolved backend vs torch fp32 on the CPU for a model name. ONNX Runtime on the CPU: the
    check made when its graph was built. Anything else (torch int8, fp16 or bf16; any backend on a
    GPU): measured once per model, backend, torch version and (int8) quantization rule or (GPU)
    device name, then read from the disk cache (both models are loaded only to measure it)."""
    if backend.runtime != "torch" and not backend.on_gpu:
        return _export_check(name, backend)
    import torch

    from contextlens.core.precision import DRIFT_SENTENCES, QUANT_RULE, drift_sentences

    fp32 = load_contextual(name, "fp32")
    if backend == Backend("int8"):  # the key int8's cache has always had: measured once stays measured
        namespace = "int8-drift-v2"
        key = cache_key("int8-drift", QUANT_RULE, fp32.name, fp32.source, torch.__version__, DRIFT_SENTENCES)
    else:
        namespace = "backend-drift-v1"
        where = device_name(backend)
        key = cache_key(backend.to_dict(), fp32.name, fp32.source, torch.__version__, DRIFT_SENTENCES, where)

    def compute() -> dict[str, np.ndarray]:
        d = measure_drift(fp32, load_resolved(ModelBackend(name, backend)), drift_sentences())
        counts = np.array([d.sentences, d.tokens])
        return {
            "mean": np.array(d.mean_cosine),
            "min": np.array(d.min_cosine),
            "counts": counts,
            "diff": np.array(d.max_abs_diff),
        }

    arrays = cached_arrays(namespace, key, compute)
    sentences, tokens = (int(v) for v in arrays["counts"])
    return Drift(
        fp32.name,
        sentences,
        tokens,
        tuple(map(float, arrays["mean"])),
        tuple(map(float, arrays["min"])),
        tuple(map(float, arrays["diff"])),
        backend,
    )


def _export_check(name: str, backend: Backend) -> Drift:
    """ONNX Runtime on the CPU: the comparison with torch made when its graph was exported."""
    model = load_resolved(ModelBackend(name, backend))
    check = model.onnx_forward().check
    attention = attention_check(model.name, str(model.source)) if backend.precision == "fp32" else None
    return Drift(
        model.name,
        int(check["sentences"]),
        int(check["tokens"]),
        tuple(check["mean_cosine"]),
        tuple(check["min_cosine"]),
        tuple(check["max_abs_diff"]),
        model.backend,
        tuple(attention["attention_max_abs_diff"]) if attention is not None else (),
    )


def device_name(backend: Backend) -> str:
    """What the drift of a GPU backend is keyed by besides its label: the GPU's model (two GPUs'
    kernels may differ); the CPU's results are keyed by the torch version alone, as before."""
    if not backend.on_gpu:
        return "cpu"
    import torch

    from contextlens.core.devices import cuda_index

    return str(torch.cuda.get_device_name(cuda_index(backend.device)))


def measure_drift(fp32: ContextualModel, other: ContextualModel, texts: list[str]) -> Drift:
    """Cosines between the two models' states of every real token of ``texts``, per layer (the
    same padded batch for both; the other model moves it to its device)."""
    from contextlens.core.precision import compare_states, drift_batch

    layers = tuple(range(fp32.num_layers + 1))
    ids, mask = drift_batch(fp32, texts)
    c = compare_states(fp32.run_layers(ids, mask, layers), other.run_layers(ids, mask, layers), mask)
    return Drift(
        fp32.name,
        len(texts),
        c["tokens"],
        tuple(c["mean_cosine"]),
        tuple(c["min_cosine"]),
        tuple(c["max_abs_diff"]),
        other.backend,
    )
