"""ONNX Runtime as a second forward pass for encoders: exported once, cached, checked, pruned.

Why: on this project's reference machine (2 cores, AVX2, VNNI) ONNX Runtime with its transformer
fusions ran minilm at 1.42-1.51x the bare torch forward, exact to 1.2e-5, and its dynamic int8
at 2.06-2.52x against torch int8's 1.64-1.69x at equal drift (``benchmarks/runtimes.py``,
docs/speed.md). It is opt-in (``--runtime onnx``); torch stays the default and the reference.

How:

* **Export once.** The torch model is exported (TorchScript exporter, opset 17, dynamic batch and
  sequence axes, one output ``hidden_k`` per layer 0..L), fused by onnxruntime's transformer
  optimizer and saved, weights in a side file, under ``<cache>/onnx/<key>/``; the key holds the
  weights' path, size and mtime and the torch, transformers and onnxruntime versions. A BERT is
  exported with eager attention and its padding mask prepared in the pattern the attention
  fusion recognizes (:class:`PreparedMask`).
* **Checked, not assumed.** Right after the export, the graph's states are compared with the torch
  model's on the drift set (64 WordNet examples, every real token, every layer). An fp32 graph
  further than :data:`EXACT` (1e-4) from torch is refused and not kept. The comparison (max
  absolute difference, mean and minimum cosine per layer) is stored beside the graph and printed
  with every result (:func:`contextlens.core.precision.drift`).
* **Stop at the highest layer.** ONNX Runtime runs every node of a graph whatever outputs are
  asked for (measured: hidden_1 alone costs what all seven layers of minilm cost). So for a
  highest requested layer L a pruned graph is kept (``fp32-top3.onnx``: the nodes hidden_0..L
  depend on), sharing the weights file; made once, on first need.
* **int8:** ``onnxruntime.quantization.quantize_dynamic`` of the weight matrix products (and the
  fused attention's q, k, v weights), the feed-forward down projections kept fp32: the rule of
  :mod:`contextlens.core.precision`, for the same reason.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from contextlens.core import atomic_files
from contextlens.core.cache_folders import temp_dir_for
from contextlens.core.choices import RUNTIMES, check_runtime  # noqa: F401 (the names callers import from here)
from contextlens.core.model_facts import position_offset
from contextlens.core.onnx_graphs import (  # noqa: F401 (the names callers import from here)
    ATTENTION,
    ATTENTION_EXACT,
    EXACT,
    EXPORT_RULE,
    INSTALL_HINT,
    LEAN_FILE,
    ORT_QUANT_RULE,
    SESSIONS_KEPT,
    SOURCE_FILE,
    OnnxGraphs,
    check_file,
    export_folder,
    prune_stale_exports,
    prune_to,
    require_onnxruntime,
    source_record,
    write_lean_tables,
)
from contextlens.core.precision import compare_states, drift_batch, drift_sentences
from contextlens.errors import InputError, ModelLoadError


class TorchSource(Protocol):
    """What an export is made from: plain pieces of a loaded torch model, no model class."""

    name: str
    source: str
    precision: str
    tokenizer: Any
    model: torch.nn.Module  # the torch network, fp32
    config: Any
    num_layers: int
    max_length: int
    is_decoder: bool

    def pad(self, sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]: ...

    def run_torch_layers(self, ids: torch.Tensor, mask: torch.Tensor, layers: Sequence[int]) -> list[torch.Tensor]: ...


class HiddenStates(torch.nn.Module):
    """The model as a module returning its hidden states 0..L as a tuple (what the exporter sees)."""

    def __init__(self, net: torch.nn.Module):
        super().__init__()
        self.net = net
        self.eval()  # the exporter restores the wrapper's training flag afterwards: train mode = dropout on

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(self.net(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states)


class PreparedMask(HiddenStates):
    """The same forward, given the additive 4D mask transformers would build (0 on real keys, the
    float minimum on padding), written as ``Where(Cast(1 - Expand(mask)), min, 0)``: the pattern
    onnxruntime's attention fusion recognizes. transformers' own mask, added after the ``* scaling``
    Mul, is matched to that Mul and the fusion gives up. BERT-style models only (they take a
    prepared 4D mask as is); the exactness check runs anyway."""

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, s = mask.shape
        padding = (1 - mask[:, None, None, :].expand(b, 1, s, s)).bool()
        additive = torch.where(padding, torch.tensor(torch.finfo(torch.float32).min), torch.tensor(0.0))
        return tuple(self.net(input_ids=ids, attention_mask=additive, output_hidden_states=True).hidden_states)


def export_onnx(net: torch.nn.Module, num_layers: int, sample: tuple[torch.Tensor, torch.Tensor], path: str) -> None:
    """TorchScript export with dynamic batch and sequence axes, one output per layer. A BERT is
    exported with eager attention (the fusion knows its MatMul/Softmax pattern, not sdpa's)."""
    outputs = [f"hidden_{k}" for k in range(num_layers + 1)]
    axes = {name: {0: "batch", 1: "sequence"} for name in ["input_ids", "attention_mask", *outputs]}
    bert = net.config.model_type == "bert"
    before = net.config._attn_implementation
    if bert:
        net.set_attn_implementation("eager")
    try:
        _torchscript_export((PreparedMask if bert else HiddenStates)(net), sample, path, outputs, axes)
    finally:
        net.set_attn_implementation(before)
        net.eval()
    if bert:
        pin_head_count(
            path, int(net.config.num_attention_heads), net.config.hidden_size // net.config.num_attention_heads
        )


class AttentionStates(torch.nn.Module):
    """An eager model as a module returning its hidden states 0..L and its attention
    probabilities 1..L as one tuple (the attention graph the exporter sees)."""

    def __init__(self, net: torch.nn.Module):
        super().__init__()
        self.net = net
        self.eval()

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.net(input_ids=ids, attention_mask=mask, output_hidden_states=True, output_attentions=True)
        return (*out.hidden_states, *out.attentions)


def export_attention_onnx(
    eager_net: torch.nn.Module, num_layers: int, sample: tuple[torch.Tensor, torch.Tensor], path: str
) -> None:
    """The eager model exported with its attention probabilities as outputs ``attn_1..L`` beside
    ``hidden_0..L``, not fused (the fused attention never forms the probabilities)."""
    outputs = [f"hidden_{k}" for k in range(num_layers + 1)] + [f"attn_{k}" for k in range(1, num_layers + 1)]
    axes: dict[str, dict[int, str]] = {name: {0: "batch", 1: "sequence"} for name in ["input_ids", "attention_mask"]}
    axes |= {f"hidden_{k}": {0: "batch", 1: "sequence"} for k in range(num_layers + 1)}
    axes |= {f"attn_{k}": {0: "batch", 2: "sequence", 3: "keys"} for k in range(1, num_layers + 1)}
    _torchscript_export(AttentionStates(eager_net), sample, path, outputs, axes)
    eager_net.eval()


def _torchscript_export(
    module: torch.nn.Module,
    sample: tuple[torch.Tensor, torch.Tensor],
    path: str,
    outputs: list[str],
    axes: dict[str, dict[int, str]],
) -> None:
    """The TorchScript exporter at opset 17 on ``(input_ids, attention_mask)``, without gradients
    and without its deprecation and tracer warnings."""
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            sample,
            path,
            dynamo=False,
            input_names=["input_ids", "attention_mask"],
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=17,
        )


def compare_attentions(reference: list[torch.Tensor], other: list[torch.Tensor], mask: torch.Tensor) -> list[float]:
    """Per block: the largest absolute difference between two runs' attention probabilities, over
    the real (unpadded) query tokens and every key."""
    rows, queries = mask.bool().nonzero(as_tuple=True)
    pairs = zip(reference, other, strict=True)
    return [float((x[rows, :, queries] - y[rows, :, queries]).abs().max()) for x, y in pairs]


def pin_head_count(path: str, heads: int, head_size: int) -> int:
    """Rewrite the head reshapes' target ``(b, s, -1, head_size)`` to ``(b, s, heads, head_size)``
    (the same tensor): onnxruntime's fusion reads the head count from there and takes -1 for it."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path)
    graph = model.graph
    const = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in graph.node if n.op_type == "Constant"}
    reshaped = {n.input[1] for n in graph.node if n.op_type == "Reshape"}
    graph.initializer.append(numpy_helper.from_array(np.array([heads], dtype=np.int64), "contextlens_num_heads"))
    pinned = 0
    for node in graph.node:
        if node.op_type != "Concat" or len(node.input) != 4 or node.output[0] not in reshaped:
            continue
        ends = [const.get(name) for name in node.input[2:]]
        if [None if c is None or c.size != 1 else int(c.reshape(-1)[0]) for c in ends] == [-1, head_size]:
            node.input[2] = "contextlens_num_heads"
            pinned += 1
    onnx.save(model, path)
    return pinned


def optimize_onnx(path: str, out: str, config: Any, external_data: bool = False) -> dict[str, int]:
    """onnxruntime's transformer optimizer (bert fusions); returns its fused-operator counts."""
    import onnxruntime
    from onnxruntime.transformers.optimizer import optimize_model

    onnxruntime.set_default_logger_severity(3)  # not its notes on the initializers it drops
    opt = optimize_model(
        path, model_type="bert", num_heads=config.num_attention_heads, hidden_size=config.hidden_size, opt_level=1
    )
    opt.save_model_to_file(out, use_external_data_format=external_data)
    return {k: v for k, v in opt.get_fused_operator_statistics().items() if v}


def _link_or_copy(source: Path, target: Path) -> None:
    """``target`` as a hard link to ``source`` (no bytes copied), or a copy where links fail."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def quantize_onnx(
    path: str, out: str, intermediate: int, hidden: int, down_projection: bool, external_data: bool = False
) -> int:
    """Dynamic int8 of the linear layers: the MatMuls whose second input is a weight (never the
    attention's activation x activation products) and the fused Attention ops (their q, k, v
    weights), the down projections (intermediate -> hidden) only if ``down_projection``; returns
    how many nodes were quantized."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(path, load_external_data=False).graph
    weights = {w.name: tuple(w.dims) for w in graph.initializer}
    chosen = [n.name for n in graph.node if n.op_type == "Attention"]
    chosen += [
        n.name
        for n in graph.node
        if n.op_type == "MatMul"
        and n.input[1] in weights
        and (down_projection or weights[n.input[1]] != (intermediate, hidden))
    ]
    # the fused ops (SkipLayerNormalization, BiasGelu: com.microsoft) defeat ONNX shape inference
    extra = {"DefaultTensorType": onnx.TensorProto.FLOAT}
    only = {"nodes_to_quantize": chosen, "op_types_to_quantize": ["MatMul", "Attention"], "extra_options": extra}
    logger = logging.getLogger()
    level = logger.level
    logger.setLevel(logging.ERROR)  # its advice to pre-process: the graph is optimized already
    try:
        quantize_dynamic(path, out, weight_type=QuantType.QInt8, use_external_data_format=external_data, **only)
    finally:
        logger.setLevel(level)
    return len(chosen)


class OnnxForward(OnnxGraphs):
    """:class:`~contextlens.core.onnx_graphs.OnnxGraphs` made from a loaded torch model: the graph
    at its precision exported, checked and saved on first use (one export however many processes
    ask at once), with the tables the lean path reads."""

    def __init__(self, model: TorchSource):
        require_onnxruntime()
        if model.is_decoder:
            raise InputError(
                f"`runtime` onnx runs encoder models (minilm, mpnet), not the decoder {model.name!r}; "
                "use `runtime` torch"
            )
        super().__init__(model.name, str(model.source), model.precision, model.num_layers)
        self.model = model
        self._ensure_built()

    # --- building (once per machine) -------------------------------------------------------

    def _ensure_built(self) -> None:
        """The export folder, this precision's graph and the lean tables, built if missing."""
        if not check_file(self.folder, "fp32").exists():
            self._export()
        if self.precision == "int8" and not check_file(self.folder, "int8").exists():
            self._quantize()
        if not (self.folder / LEAN_FILE).exists():
            self._write_lean_tables()
        if self.precision == "fp32" and not check_file(self.folder, ATTENTION).exists():
            self._export_attention()

    def _write_lean_tables(self) -> None:
        net = self.model.model
        rows = net.get_input_embeddings().weight.detach().float().numpy()
        table = getattr(getattr(net, "embeddings", None), "position_embeddings", None)
        positions = None if table is None or not hasattr(table, "weight") else table.weight.detach().float().numpy()
        config, tokenizer = self.model.config, self.model.tokenizer
        offset = 0 if positions is None else position_offset(config.model_type, tokenizer.pad_token_id)
        write_lean_tables(self.folder, rows, positions, offset)

    def _export_attention(self) -> None:
        """The attention graph (:func:`export_attention_onnx`), kept only if its probabilities are
        within :data:`ATTENTION_EXACT` of torch's eager attention and its states within
        :data:`EXACT`; the check is kept either way, so a refused graph is not exported again."""
        tmp = temp_dir_for(self.folder / f"{ATTENTION}.onnx")
        try:
            self._try_attention_export(tmp)
        except Exception as exc:  # noqa: BLE001 - a model the exporter cannot trace: torch gives its weights
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            atomic_files.write_text(check_file(self.folder, ATTENTION), json.dumps({"ok": False, "error": reason}))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _try_attention_export(self, tmp: Path) -> None:
        import onnx

        model = self.model
        sample = model.pad([model.tokenizer(t)["input_ids"] for t in drift_sentences(2)])
        raw = tmp / "raw.onnx"
        export_attention_onnx(model.attention_tap.net, model.num_layers, sample, str(raw))
        graph = onnx.load(str(raw))  # re-saved with its weights in a side file, which pruned graphs share
        onnx.save_model(
            graph, str(tmp / f"{ATTENTION}.onnx"), save_as_external_data=True, location=f"{ATTENTION}.onnx.data"
        )
        raw.unlink()
        texts = drift_sentences()
        ids, mask = drift_batch(model, texts)
        top = model.num_layers
        states, weights = model.run_with_attentions(ids, mask, top)
        names = [f"hidden_{k}" for k in range(top + 1)] + [f"attn_{k}" for k in range(1, top + 1)]
        feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
        got = [torch.from_numpy(a) for a in self._session_for(tmp / f"{ATTENTION}.onnx").run(names, feeds)]
        check = compare_states(states, got[: top + 1], mask) | {"sentences": len(texts)}
        check["attention_max_abs_diff"] = compare_attentions(weights, got[top + 1 :], mask)
        exact = max(check["attention_max_abs_diff"]) <= ATTENTION_EXACT and max(check["max_abs_diff"]) <= EXACT
        check["ok"] = exact
        if check["ok"]:
            for name in (f"{ATTENTION}.onnx.data", f"{ATTENTION}.onnx"):  # the graph last
                os.replace(tmp / name, self.folder / name)
        atomic_files.write_text(check_file(self.folder, ATTENTION), json.dumps(check))

    def _export(self) -> None:
        model = self.model
        tmp = temp_dir_for(self.folder)
        try:
            sample = model.pad([model.tokenizer(t)["input_ids"] for t in drift_sentences(2)])
            raw = tmp / "raw.onnx"
            export_onnx(model.model, model.num_layers, sample, str(raw))
            fused = optimize_onnx(str(raw), str(tmp / "fp32.onnx"), model.config, external_data=True)
            for leftover in tmp.glob("raw.onnx*"):
                leftover.unlink()
            check = self._compare(tmp / "fp32.onnx") | {"fused": fused}
            if max(check["max_abs_diff"]) > EXACT:
                raise ModelLoadError(
                    f"the ONNX export of {model.name} differs from torch by {max(check['max_abs_diff']):.2g} "
                    f"(more than {EXACT:g}) on the drift set; use `runtime` torch"
                )
            (tmp / "fp32-check.json").write_text(json.dumps(check))
            (tmp / SOURCE_FILE).write_text(source_record(self.source))
            if self.folder.exists():  # another process built it meanwhile: keep theirs
                return
            os.replace(tmp, self.folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        prune_stale_exports(self.source, self.folder)

    def _quantize(self) -> None:
        config = self.model.config
        tmp = temp_dir_for(self.folder / "int8.onnx")  # also removes what a killed quantization left
        try:
            # quantize_dynamic writes a shape-inferred copy beside its input and deletes it after: from
            # the shared folder, two first uses at once deleted each other's copy (FileNotFoundError)
            for name in ("fp32.onnx", "fp32.onnx.data"):
                if (self.folder / name).exists():
                    _link_or_copy(self.folder / name, tmp / name)
            count = quantize_onnx(
                str(tmp / "fp32.onnx"),
                str(tmp / "int8.onnx"),
                int(config.intermediate_size),
                int(config.hidden_size),
                down_projection=False,
                external_data=True,
            )
            check = self._compare(tmp / "int8.onnx") | {"quantized_nodes": count}
            for name in ("int8.onnx.data", "int8.onnx"):  # the graph last: it marks the pair complete
                os.replace(tmp / name, self.folder / name)
            atomic_files.write_text(self.folder / "int8-check.json", json.dumps(check))  # marks int8 as built
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _compare(self, graph: Path) -> dict:
        """Per layer: max |difference|, mean and minimum cosine against the torch fp32 states of
        every real token of the drift set."""
        model = self.model
        texts = drift_sentences()
        ids, mask = drift_batch(model, texts)
        layers = tuple(range(model.num_layers + 1))
        reference = model.run_torch_layers(ids, mask, layers)  # torch's, whatever the model's runtime
        session = self._session_for(graph)
        feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
        got = [torch.from_numpy(a) for a in session.run([f"hidden_{k}" for k in layers], feeds)]
        return compare_states(reference, got, mask) | {"sentences": len(texts)}
