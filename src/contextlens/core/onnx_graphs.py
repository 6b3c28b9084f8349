"""A model's checked ONNX graphs on disk and the ONNX Runtime sessions that run them: no torch.

Why apart from :mod:`contextlens.core.onnx_runtime` (the export, which needs torch): once a
graph has been exported and checked on this machine, running it needs only onnxruntime and numpy,
so the lean path (:mod:`contextlens.core.lean_backbone`) starts in a fraction of a second. What
the lean path needs besides the graphs is written beside them at export (:data:`LEAN_FILE`): the
input embedding table (the "input rows", memory-mapped) and the learned position table, if any.

The export folder's key holds the weights' path, size and mtime and the torch, transformers and
onnxruntime versions, read from the installed packages' metadata (not by importing them), so the
lean path finds the same folder the export wrote.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from contextlens.core import atomic_files
from contextlens.core.atomic_files import atomic_path
from contextlens.core.cache_folders import build_lock, clean_leftovers
from contextlens.core.devices import CUDA_PROVIDER, cuda_index
from contextlens.core.disk_cache import cache_key
from contextlens.core.resources import cache_dir
from contextlens.core.threads import current_threads
from contextlens.errors import DeviceError, ModelNotInstalledError

EXACT = 1e-4  # the largest difference from torch an fp32 graph may show on the drift set
ATTENTION_EXACT = 1e-5  # ... and the attention graph's probabilities, from torch's eager attention
ATTENTION = "fp32-attention"  # the graph with attention probabilities as outputs (fp32 only)
EXPORT_RULE = "torchscript-opset17-bert-fusion-prepared-mask-v1"  # part of the export folder's key
ORT_QUANT_RULE = "ort-dynamic-qint8-matmul-except-ffn-down-v1"  # part of an onnx int8 model's identity
SESSIONS_KEPT = 3  # pruned graphs' sessions held at once (one per highest layer in use)
INSTALL_HINT = "pip install 'contextlens[runtimes]' (onnxruntime, onnx), or use `runtime` torch"
SOURCE_FILE = "source.json"  # the model folder and weights an export was made from (pruning)
LEAN_FILE = "lean.json"  # written last: the input and position tables beside it are complete
INPUT_ROWS = "input_rows.npy"
POSITION_ROWS = "position_rows.npy"
ALLOW_SPINNING = "0"  # ONNX Runtime's idle intra-op threads sleep (benchmarks/ort_spinning.py sets "1")


def require_onnxruntime() -> None:
    """A typed error, not an ImportError, when the optional extra is missing (asked of the
    installed packages' metadata: importing onnx to ask would cost the lean path 50 ms)."""
    if not onnxruntime_installed():
        raise ModelNotInstalledError(f"ONNX Runtime is not installed: {INSTALL_HINT}")


def onnxruntime_installed() -> bool:
    """Whether onnxruntime and onnx can be imported, found without importing them."""
    for name in ("onnxruntime", "onnx"):
        if name in sys.modules:
            if sys.modules[name] is None:  # an import that is known to fail
                return False
        elif importlib.util.find_spec(name) is None:
            return False
    return True


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _weights_fingerprint(source: str) -> list[tuple[str, int, int]]:
    """Name, size and mtime of a model folder's weight files: a changed file is a new export."""
    folder = Path(source)
    if not folder.is_dir():
        return []
    return sorted(
        (p.name, p.stat().st_size, int(p.stat().st_mtime))
        for p in folder.iterdir()
        if p.suffix in {".safetensors", ".bin"}
    )


def export_folder(name: str, source: str) -> Path:
    """Where this model's graphs live (keyed on its weights and the tool versions)."""
    key = cache_key(
        EXPORT_RULE,
        str(source),
        _weights_fingerprint(str(source)),
        _version("torch"),
        _version("transformers"),
        _version("onnxruntime"),
    )
    return cache_dir() / "onnx" / f"{name}-{key}"


def source_record(source: str) -> str:
    """What an export records of the model folder it was made from: its path and its weights."""
    return json.dumps({"source": str(source), "weights": _weights_fingerprint(str(source))})


def prune_stale_exports(source: str, keep: Path) -> list[Path]:
    """Remove the exports nothing can read again: those of a model folder that is gone, and those
    of this folder's earlier weights (`tune --force` re-tunes in place). Each holds the graphs and
    the lean tables (hundreds of MB for a minilm-sized model), and their keys never come back: the
    test suite, which re-tunes its model in place every run, had left 42 of them. An export made
    by other tool versions from the same weights is kept (another environment may share the
    cache), and so is one made before exports recorded their source. The removed folders."""
    removed = []
    weights = json.loads(json.dumps(_weights_fingerprint(str(source))))  # as a record holds it
    for folder in sorted(keep.parent.iterdir()):
        record = folder / SOURCE_FILE
        if folder == keep or folder.name.startswith(".") or not record.is_file():  # "." : another's temporary
            continue
        try:
            made = json.loads(record.read_text())
            made_from, made_of = Path(made["source"]), made["weights"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if made_from.is_dir() and (made_from != Path(source) or made_of == weights):
            continue
        gone = folder.with_name(f".{folder.name}.stale-{os.getpid()}")
        try:
            os.replace(folder, gone)  # at once: a reader finds the whole export or none
        except OSError:
            continue
        shutil.rmtree(gone, ignore_errors=True)
        removed.append(folder)
    return removed


def check_file(folder: Path, precision: str) -> Path:
    return folder / f"{precision}-check.json"


def lean_ready(name: str, source: str, precision: str) -> bool:
    """Whether this model's graph at ``precision`` has been exported and checked on this machine,
    with the tables the lean path reads: then nothing needs torch."""
    folder = export_folder(name, source)
    made = check_file(folder, precision).is_file() and (folder / LEAN_FILE).is_file()
    # fp32 also has its attention graph tried (kept or refused), so one export makes both
    return made and (precision != "fp32" or check_file(folder, ATTENTION).is_file())


def export_lock(name: str, source: str) -> contextlib.AbstractContextManager[None]:
    """Held while this model's graphs are exported, checked and completed (lean tables, attention
    graph): one process at a time on this machine (:func:`~contextlens.core.cache_folders.build_lock`).
    Without it, a process that found the exported folder before another had finished it opened it
    half-made; the caller checks :func:`lean_ready` again once it holds the lock."""
    return build_lock(export_folder(name, source))


def attention_check(name: str, source: str) -> dict | None:
    """The check of this model's attention graph against torch's eager attention, where the graph
    was exported and passed it on this machine; else None."""
    path = check_file(export_folder(name, source), ATTENTION)
    try:
        check = json.loads(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None
    return check if isinstance(check, dict) and check.get("ok") else None


def export_summary(name: str, source: str) -> dict[str, dict[str, float] | None]:
    """What this machine holds of a model's ONNX exports, as ``contextlens models`` shows it: per
    graph (fp32, int8, the fp32 attention graph) its check against torch's eager model (the largest
    difference in hidden states or attention weights, the least cosine) where it was made and
    checked, else None (the first ONNX use exports it)."""
    folder = export_folder(name, source)
    out: dict[str, dict[str, float] | None] = {}
    for precision in ("fp32", "int8"):
        check = _read_check(check_file(folder, precision)) if lean_ready(name, source, precision) else None
        out[precision] = None if check is None else {
            "max_abs_diff": max(check["max_abs_diff"]), "min_cosine": min(check["min_cosine"]),
        }  # fmt: skip
    attention = attention_check(name, source)
    out["attention"] = None if attention is None else {"max_abs_diff": max(attention["attention_max_abs_diff"])}
    return out


def _read_check(path: Path) -> dict | None:
    try:
        check = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return check if isinstance(check, dict) and check.get("max_abs_diff") and check.get("min_cosine") else None


def fp32_check_diff(name: str, source: str) -> float | None:
    """The largest difference from torch of this model's fp32 graph on the drift set, where the
    graph was exported on this machine and its check is recorded as passing (within
    :data:`EXACT`); else None. What lets fp32 on ONNX Runtime share torch fp32's calibrations."""
    if not lean_ready(name, source, "fp32"):
        return None
    check = _read_check(check_file(export_folder(name, source), "fp32"))
    diff = None if check is None else float(max(check["max_abs_diff"]))
    return diff if diff is not None and diff <= EXACT else None


def attention_ready(name: str, source: str) -> bool:
    """Whether this model's attention graph was exported and passed its check on this machine."""
    return attention_check(name, source) is not None


def cuda_session(ort: Any, path: Path, options: Any, device: str) -> Any:
    """A session on the CUDA execution provider at ``device`` (``cuda:N``). ONNX Runtime falls back
    to the CPU, with a log line, when the provider cannot start (no driver, a CUDA library
    missing): that would be a CPU result labelled cuda, so it is refused instead."""
    index = cuda_index(device)
    try:
        session = ort.InferenceSession(
            str(path), options, providers=[(CUDA_PROVIDER, {"device_id": index}), "CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own Fail/RuntimeException types
        raise DeviceError(f"ONNX Runtime could not open {device}: {str(exc).splitlines()[0]}") from None
    if session.get_providers()[0] != CUDA_PROVIDER:
        raise DeviceError(
            f"ONNX Runtime's CUDA provider did not start on {device} (it fell back to the CPU); "
            "check the CUDA and cuDNN libraries onnxruntime-gpu needs, or use device cpu"
        )
    return session


class OnnxGraphs:
    """A model's exported graphs at one precision and their sessions: ``run_layers`` on numpy."""

    def __init__(self, name: str, source: str, precision: str, num_layers: int, device: str = "cpu"):
        require_onnxruntime()
        self.name = name
        self.source = source
        self.precision = precision
        self.num_layers = num_layers
        self.device = device  # cpu, or cuda:N through the CUDA execution provider
        self.folder = export_folder(name, source)
        self.threads = current_threads()
        self._sessions: OrderedDict[tuple[str, int], Any] = OrderedDict()
        self._sessions_lock = threading.Lock()  # sessions are made once; running one is thread-safe

    @property
    def full_graph(self) -> Path:
        return self.folder / f"{self.precision}.onnx"

    @property
    def check(self) -> dict:
        """The comparison with torch made when this precision's graph was built."""
        return json.loads(check_file(self.folder, self.precision).read_text())

    def _session_for(self, path: Path) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        # idle threads sleep instead of spinning: on shared cores a spinning thread takes the core
        # that the work it waits for needs (docs/speed.md, "Idle threads")
        options.add_session_config_entry("session.intra_op.allow_spinning", ALLOW_SPINNING)
        if self.device == "cpu":
            return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return cuda_session(ort, path, options, self.device)

    def session(self, highest: int, attention: bool = False) -> Any:
        """The session of the graph pruned to layers 0..``highest`` (the full graph at the top);
        with ``attention``, of the attention graph (states and probabilities). Sessions follow
        the thread count (``--threads``, or torch's where torch is loaded): a change since they
        were made makes them anew."""
        stem = ATTENTION if attention else self.precision
        key = (stem, highest)
        with self._sessions_lock:
            threads = current_threads()
            if threads != self.threads:
                self.threads = threads
                self._sessions.clear()
            found = self._sessions.get(key)
            if found is not None:
                self._sessions.move_to_end(key)
                return found
            full = self.folder / f"{stem}.onnx"
            if highest >= self.num_layers:
                path = full
            else:
                path = self.folder / f"{stem}-top{highest}.onnx"
                if not path.exists():
                    outputs = [f"hidden_{k}" for k in range(highest + 1)]
                    outputs += [f"attn_{k}" for k in range(1, highest + 1)] if attention else []
                    prune_to(full, outputs, path)
            made = self._session_for(path)
            self._sessions[key] = made
            if len(self._sessions) > SESSIONS_KEPT:
                self._sessions.popitem(last=False)
            return made

    def run_layers(
        self, ids: np.ndarray, mask: np.ndarray, layers: Sequence[int], keep: Callable[[np.ndarray], Any]
    ) -> list[Any]:
        """``keep(state)`` at each of ``layers``; only the nodes up to the highest one run."""
        feeds = {"input_ids": np.asarray(ids, dtype=np.int64), "attention_mask": np.asarray(mask, dtype=np.int64)}
        states = self.session(max(layers)).run([f"hidden_{k}" for k in layers], feeds)
        return [keep(state) for state in states]

    def run_with_attentions(self, ids: np.ndarray, mask: np.ndarray, top: int) -> tuple[list[Any], list[Any]]:
        """Hidden states 0..``top`` and attention probabilities of blocks 1..``top`` from the
        attention graph (checked against torch's eager attention at export)."""
        feeds = {"input_ids": np.asarray(ids, dtype=np.int64), "attention_mask": np.asarray(mask, dtype=np.int64)}
        names = [f"hidden_{k}" for k in range(top + 1)] + [f"attn_{k}" for k in range(1, top + 1)]
        out = self.session(top, attention=True).run(names, feeds)
        return out[: top + 1], out[top + 1 :]

    def weight_bytes(self) -> int:
        """Bytes of this precision's graph and weights file as stored."""
        return sum(p.stat().st_size for p in (self.full_graph, Path(f"{self.full_graph}.data")) if p.exists())


class LeanTables:
    """The input embedding table (memory-mapped) and the learned position rows the lean path
    reads instead of the torch model's; written at export by :func:`write_lean_tables`."""

    def __init__(self, folder: Path):
        meta = json.loads((folder / LEAN_FILE).read_text())
        self.input_rows = np.load(folder / INPUT_ROWS, mmap_mode="r")
        self.position_offset = int(meta["position_offset"])
        self.positions = np.load(folder / POSITION_ROWS, mmap_mode="r") if meta["positions"] else None

    def rows(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        return np.asarray(self.input_rows[np.asarray(ids, dtype=np.int64)], dtype=np.float32)

    def position_rows(self, n: int) -> np.ndarray | None:
        if self.positions is None:
            return None
        return np.array(self.positions[self.position_offset : self.position_offset + n], dtype=np.float32)


def write_lean_tables(folder: Path, input_rows: np.ndarray, positions: np.ndarray | None, offset: int) -> None:
    """Save what :class:`LeanTables` reads, the marker last (a killed write leaves no marker)."""
    for name, table in ((INPUT_ROWS, input_rows), (POSITION_ROWS, positions)):
        if table is None:
            continue
        clean_leftovers(folder / name)
        with atomic_path(folder / name) as tmp, open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(table, dtype=np.float32))
    meta = {"positions": positions is not None, "position_offset": int(offset)}
    atomic_files.write_text(folder / LEAN_FILE, json.dumps(meta))


def prune_to(graph_path: Path, outputs: Sequence[str], out: Path) -> None:
    """Save the graph that computes only ``outputs``: the nodes they depend on, the initializers
    those nodes read (still in the original's weights file, beside it), the graph's inputs."""
    import onnx

    model = onnx.load(str(graph_path), load_external_data=False)
    graph = model.graph
    producer = {name: node for node in graph.node for name in node.output}
    needed: set[str] = set()
    stack = list(outputs)
    kept: set[int] = set()
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        node = producer.get(name)
        if node is not None and id(node) not in kept:
            kept.add(id(node))
            stack.extend(i for i in node.input if i)
            stack.extend(_subgraph_inputs(node))
    nodes = [n for n in graph.node if id(n) in kept]
    del graph.node[:]
    graph.node.extend(nodes)
    initializers = [t for t in graph.initializer if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    wanted = [o for o in graph.output if o.name in set(outputs)]
    del graph.output[:]
    graph.output.extend(wanted)
    clean_leftovers(out)
    with atomic_path(out) as tmp:
        onnx.save_model(model, str(tmp))  # no raw data loaded: the weights stay in the shared file


def _subgraph_inputs(node: Any) -> list[str]:
    """Names a control-flow node's subgraphs read from the outer graph (none in these encoders)."""
    names = []
    for attr in node.attribute:
        for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
            for inner in sub.node:
                names.extend(i for i in inner.input if i)
                for inner_attr in inner.attribute:
                    if inner_attr.HasField("g") or len(inner_attr.graphs):
                        names.extend(_subgraph_inputs(inner))
    return names
