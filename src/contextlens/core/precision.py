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

The drift is not assumed small, it is measured: :func:`contextlens.core.drift.drift` runs a fixed set of sentences (64
WordNet usage examples, evenly spaced) through both precisions and reports, per layer, the mean
and the minimum cosine between the two hidden states of every token. Every int8 result is
printed with it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Protocol

import torch

from contextlens.core.choices import PRECISIONS, check_precision  # noqa: F401 (the names callers import from here)


class Batches(Protocol):
    """What :func:`drift_batch` needs of a model: its tokenizer, its length limit and its padding."""

    tokenizer: Any
    max_length: int

    def pad(self, sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]: ...


DRIFT_SENTENCES = 64


def cpu_flags(cpuinfo: str) -> set[str]:
    """The CPU's feature flags from the text of Linux's /proc/cpuinfo (empty where it has none)."""
    line = next((ln for ln in cpuinfo.splitlines() if ln.startswith("flags")), "")
    return set(line.split(":", 1)[1].split()) if ":" in line else set()


def has_vnni(flags: set[str]) -> bool:
    """Whether an x86 CPU with these flags multiplies int8 with VNNI (AVX-512 or AVX)."""
    return bool(flags & {"avx512_vnni", "avx_vnni"})


def _cpu_has_vnni() -> bool:
    """Whether this machine's CPU has an int8 dot-product instruction."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            return has_vnni(cpu_flags(fh.read()))
    except OSError:
        return False


ACTIVATION_BITS = 8 if _cpu_has_vnni() else 7
QUANT_RULE = f"dynamic-qint8-linear-except-ffn-down-a{ACTIVATION_BITS}-v2"  # part of the drift cache key


class FullRangeDynamicLinear(torch.ao.nn.quantized.dynamic.Linear):
    """torch's dynamic int8 linear layer with 8-bit activations instead of 7 (see the module docstring)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        packed = self._packed_params._packed_params
        return torch.ops.quantized.linear_dynamic(x, packed, reduce_range=False).to(x.dtype)


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


def drift_sentences(n: int = DRIFT_SENTENCES) -> list[str]:
    """The fixed set: ``n`` WordNet usage examples evenly spaced over all of them."""
    from contextlens.core.wordnet import usage_examples

    examples = usage_examples()
    step = len(examples) / n
    return [examples[int(k * step)].text for k in range(n)]


def compare_states(reference: list[Any], other: list[Any], mask: torch.Tensor) -> dict:
    """Per layer, over the real (unpadded) tokens: mean and minimum cosine and the largest
    absolute difference between two runs' hidden states (torch tensors on any device, at any
    precision, or ONNX Runtime's numpy arrays), compared on the host in float64; and the token
    count."""
    real = torch.as_tensor(mask).cpu().bool()
    means, mins, diffs = [], [], []
    for x, y in zip(reference, other, strict=True):
        a, b = torch.as_tensor(x).cpu()[real].double(), torch.as_tensor(y).cpu()[real].double()
        cos = torch.nn.functional.cosine_similarity(a, b, dim=-1)
        means.append(float(cos.mean()))
        mins.append(float(cos.min()))
        diffs.append(float((a - b).abs().max()))
    return {"mean_cosine": means, "min_cosine": mins, "max_abs_diff": diffs, "tokens": int(real.sum())}


def drift_batch(model: Batches, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """``texts`` as one padded batch ``(ids, mask)``, each cut to what one forward pass reads."""
    encoded = model.tokenizer(texts, truncation=True, max_length=model.max_length, verbose=False)["input_ids"]
    return model.pad(encoded)


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
