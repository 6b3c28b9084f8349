"""Opt-in int8: dynamic quantization of a model's linear layers, and the drift it costs.

fp32 is the default and exact. ``int8`` replaces the ``nn.Linear`` layers by torch's
dynamically quantized ones (int8 weights; activations quantized per tensor on the fly), except
the feed-forward down projection (``intermediate_size -> hidden_size``): its input, the GELU
output, has outliers (max ~24 against a mean of ~0.15 in minilm's first block), and one scale
per tensor for it turns that layer's output to cosine 0.82 with fp32 and the block output to
0.96; kept fp32, the block output stays above 0.99 (docs/speed.md has the numbers). Embeddings
and layer norms stay fp32, so layer 0 is unchanged and the drift grows with depth.

Activations are quantized to the full 8 bits where the CPU multiplies int8 with VNNI (x86
``avx512_vnni`` / ``avx_vnni``). torch's own dynamic linear layer uses 7 bits (``reduce_range``),
a guard for the AVX2 kernel, whose 16-bit pairwise sums can saturate; with VNNI they cannot, and
the eighth bit lowers the drift (minilm's lowest per-layer mean cosine 0.979 -> 0.993) at the same
speed. Without VNNI the 7-bit layer is kept. :data:`QUANT_RULE` says which one ran.

The drift is not assumed small, it is measured: :func:`drift` runs a fixed set of sentences (64
WordNet usage examples, evenly spaced) through both precisions and reports, per layer, the mean
and the minimum cosine between the two hidden states of every token. Every int8 result is
printed with it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import torch

from contextlens.core.disk_cache import cache_key, cached_arrays
from contextlens.core.vectors import PRECISIONS
from contextlens.errors import InputError

if TYPE_CHECKING:
    from contextlens.core.contextual_models import ContextualModel

DRIFT_SENTENCES = 64


def _cpu_has_vnni() -> bool:
    """Whether this x86 CPU has an int8 dot-product instruction (Linux's /proc/cpuinfo flags)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            flags = next((line.split(":", 1)[1].split() for line in fh if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


ACTIVATION_BITS = 8 if _cpu_has_vnni() else 7
QUANT_RULE = f"dynamic-qint8-linear-except-ffn-down-a{ACTIVATION_BITS}-v2"  # part of the drift cache key


class FullRangeDynamicLinear(torch.ao.nn.quantized.dynamic.Linear):
    """torch's dynamic int8 linear layer with 8-bit activations instead of 7 (see the module docstring)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        packed = self._packed_params._packed_params
        return torch.ops.quantized.linear_dynamic(x, packed, reduce_range=False).to(x.dtype)


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise InputError(f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}")
    return precision


def quantize(net: torch.nn.Module, down_projection: bool = False) -> torch.nn.Module:
    """The model with its linear layers dynamically quantized to int8 (in place); the
    feed-forward down projections stay fp32 unless ``down_projection``."""
    inner = getattr(net.config, "intermediate_size", None)
    names = {
        name
        for name, module in net.named_modules()
        if isinstance(module, torch.nn.Linear)
        and (down_projection or (module.in_features, module.out_features) != (inner, net.config.hidden_size))
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao's deprecation notice for the eager API
        from torch.ao.quantization import quantize_dynamic

        mapping = {torch.nn.Linear: FullRangeDynamicLinear} if ACTIVATION_BITS == 8 else None
        return quantize_dynamic(net, names, dtype=torch.qint8, mapping=mapping, inplace=True)


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
    precision: str = "int8"
    runtime: str = "torch"

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
        what = f"{self.precision} ({self.runtime})" if self.runtime != "torch" else self.precision
        if self.precision == "fp32":
            largest = max(self.max_abs_diff) if self.max_abs_diff else float("nan")
            return (
                f"{what} vs torch fp32 ({self.model}, {self.tokens} tokens): largest |difference| {largest:.1e}; "
                f"cosine per layer mean/min: {pairs}"
            )
        return f"{what} drift vs fp32 ({self.model}, cosine per layer mean/min over {self.tokens} tokens): {pairs}"

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "precision": self.precision,
            "runtime": self.runtime,
            "sentences": self.sentences,
            "tokens": self.tokens,
            "mean_cosine": list(self.mean_cosine),
            "min_cosine": list(self.min_cosine),
            "max_abs_diff": list(self.max_abs_diff),
        }


def drift_sentences(n: int = DRIFT_SENTENCES) -> list[str]:
    """The fixed set: ``n`` WordNet usage examples evenly spaced over all of them."""
    from contextlens.core.wordnet import usage_examples

    examples = usage_examples()
    step = len(examples) / n
    return [examples[int(k * step)].text for k in range(n)]


@lru_cache(maxsize=8)
def drift(name: str, precision: str = "int8", runtime: str = "torch") -> Drift:
    """``precision`` at ``runtime`` vs torch fp32 for a model name. torch int8: measured once per
    model, torch version and quantization rule, then read from the disk cache (both precisions
    are loaded only to measure it). ONNX Runtime: the check made when its graph was built."""
    from contextlens.core.contextual_models import load_contextual

    if runtime != "torch":
        model = load_contextual(name, precision, runtime)
        check = model.onnx_forward().check
        return Drift(
            model.name,
            int(check["sentences"]),
            int(check["tokens"]),
            tuple(check["mean_cosine"]),
            tuple(check["min_cosine"]),
            tuple(check["max_abs_diff"]),
            precision,
            runtime,
        )
    fp32 = load_contextual(name, "fp32")
    key = cache_key("int8-drift", QUANT_RULE, fp32.name, fp32.source, torch.__version__, DRIFT_SENTENCES)

    def compute() -> dict[str, np.ndarray]:
        d = measure_drift(fp32, load_contextual(name, "int8"), drift_sentences())
        counts = np.array([d.sentences, d.tokens])
        return {
            "mean": np.array(d.mean_cosine),
            "min": np.array(d.min_cosine),
            "counts": counts,
            "diff": np.array(d.max_abs_diff),
        }

    arrays = cached_arrays("int8-drift-v2", key, compute)
    sentences, tokens = (int(v) for v in arrays["counts"])
    return Drift(
        fp32.name,
        sentences,
        tokens,
        tuple(map(float, arrays["mean"])),
        tuple(map(float, arrays["min"])),
        tuple(map(float, arrays["diff"])),
    )


def compare_states(reference: list[torch.Tensor], other: list[torch.Tensor], mask: torch.Tensor) -> dict:
    """Per layer, over the real (unpadded) tokens: mean and minimum cosine and the largest
    absolute difference between two runs' hidden states; and the token count."""
    real = mask.bool()
    means, mins, diffs = [], [], []
    for x, y in zip(reference, other, strict=True):
        a, b = x[real].double(), y[real].double()
        cos = torch.nn.functional.cosine_similarity(a, b, dim=-1)
        means.append(float(cos.mean()))
        mins.append(float(cos.min()))
        diffs.append(float((a - b).abs().max()))
    return {"mean_cosine": means, "min_cosine": mins, "max_abs_diff": diffs, "tokens": int(real.sum())}


def drift_batch(model: ContextualModel, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """``texts`` as one padded batch ``(ids, mask)``, each cut to what one forward pass reads."""
    encoded = model.tokenizer(texts, truncation=True, max_length=model.max_length, verbose=False)["input_ids"]
    return model.pad(encoded)


def measure_drift(fp32: ContextualModel, int8: ContextualModel, texts: list[str]) -> Drift:
    """Cosines between the two models' states of every real token of ``texts``, per layer."""
    layers = tuple(range(fp32.num_layers + 1))
    ids, mask = drift_batch(fp32, texts)
    c = compare_states(fp32.run_layers(ids, mask, layers), int8.run_layers(ids, mask, layers), mask)
    return Drift(
        fp32.name,
        len(texts),
        c["tokens"],
        tuple(c["mean_cosine"]),
        tuple(c["min_cosine"]),
        tuple(c["max_abs_diff"]),
        int8.precision,
        int8.runtime,
    )


def weight_bytes(net: torch.nn.Module) -> int:
    """Bytes of a model's weights as they are stored: the parameters (fp32), plus each int8
    linear layer's packed weight (one byte per weight) and its fp32 bias, which a quantized
    layer keeps outside ``parameters()``."""
    from torch.ao.nn.quantized.dynamic import Linear as QuantizedLinear

    total = sum(p.numel() * p.element_size() for p in net.parameters())
    for module in net.modules():
        if isinstance(module, QuantizedLinear):
            weight, bias = module.weight(), module.bias()
            total += weight.numel() * weight.element_size()
            total += 0 if bias is None else bias.numel() * bias.element_size()
    return int(total)
