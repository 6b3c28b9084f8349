"""A tuned model's folder: the base model's folder with the tuned weights, registered by name with
its provenance (:mod:`contextlens.core.tuned_store`), so that every command takes ``-m NAME``.

The folder is what the shipped ones are: ``config.json``, ``model.safetensors``, the tokenizer
and the sentence-transformers files (pooling, modules), copied from the base; the upstream model
card is not (it describes the base), a short ``README.md`` says what was done instead.
"""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path
from typing import Any

from contextlens.analyses.tuning.data import DATA_NAME, TuningData
from contextlens.core import tuned_store
from contextlens.core.cache_folders import temp_dir_for
from contextlens.core.resources import REGISTRY, cache_dir, sha256_file
from contextlens.errors import ParameterError

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "tf_model.h5", "rust_model.ot", "flax_model.msgpack")
NOT_COPIED = (*WEIGHT_FILES, "README.md", ".gitattributes", "onnx", "openvino", "data_config.json")
OBJECTIVE = "supervised contrastive loss within each lemma on the target's mean-pooled hidden state"


def check_new_name(name: Any, force: bool) -> str:
    """A tuned model's name, free unless ``force`` (said before any work)."""
    if name is None:
        raise ParameterError("name", "is required: the name to register the tuned model under (e.g. minilm-senses)")
    tuned_store.check_name(name, set(REGISTRY))
    if not force and tuned_store.read_record(cache_dir(), name) is not None:
        raise ParameterError("name", f"{name!r} is already a tuned model; choose another name or pass `force`")
    return name


def work_dir(name: str) -> Path:
    """Where an unfinished run of ``name`` keeps its checkpoint."""
    return tuned_store.tuned_root(cache_dir()) / f".work-{name}"


def write_tuned(name: str, run: Any, state: Any, stopped: str, data: TuningData, resumed: int) -> tuple[Path, str]:
    """Build the folder (base files + the kept weights), register it; ``(folder, weights sha256)``.
    ``run`` and ``state`` are the trainer's run and state (typed loosely: the trainer imports this)."""
    from transformers import AutoModel

    root = tuned_store.tuned_root(cache_dir())
    tmp = temp_dir_for(root / f"build-{name}")
    try:
        full = AutoModel.from_pretrained(str(run.base_source))
        missing, unexpected = full.load_state_dict(state.best_weights, strict=False)
        if unexpected:
            raise RuntimeError(f"tuned weights {unexpected[:3]} are not in {run.base_name}")
        full.save_pretrained(tmp, safe_serialization=True)
        _copy_base_files(run.base_source, tmp)
        digest = sha256_file(tmp / tuned_store.WEIGHTS_FILE)  # the file the folder's name and record give
        record = _provenance(run, state, stopped, data, resumed, digest)
        (tmp / "README.md").write_text(_readme(name, record), encoding="utf-8")
        path = tuned_store.register(cache_dir(), name, tmp, digest, record)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _forget_loaded(name)
    return path, digest


def _copy_base_files(base: Path, target: Path) -> None:
    for item in sorted(base.iterdir()):
        if item.name in NOT_COPIED or item.name.startswith(".") or (target / item.name).exists():
            continue
        if item.is_dir():
            shutil.copytree(item, target / item.name)
        else:
            shutil.copy2(item, target / item.name)


def _provenance(run: Any, state: Any, stopped: str, data: TuningData, resumed: int, digest: str) -> dict[str, Any]:
    import torch
    import transformers

    spec = REGISTRY.get(run.base_name)
    return {
        "kind": "contextual",
        "made_by": "contextlens tune",
        "base": run.base_name,
        "base_source": spec.hf_id + (f"@{spec.revision}" if spec.revision else "") if spec else str(run.base_source),
        "base_sha256": run.base_sha256,
        "weights_sha256": digest,
        "objective": OBJECTIVE,
        "data": DATA_NAME,
        "split_hash": data.split_hash,
        "split_check": vars(data.check),
        "counts": data.counts,
        "settings": dict(vars(run.settings)),
        "seed": run.settings.seed,
        "steps": state.step,
        "best_step": state.best_step,
        "stopped": stopped,
        "resumed_from": resumed,
        "dev_auc_base": state.base_auc,
        "dev_auc_best": state.best_auc,
        "train_seconds": round(state.seconds, 2),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "made_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def _readme(name: str, record: dict[str, Any]) -> str:
    return (
        f"# {name}\n\nFine-tuned here from {record['base']} ({record['base_source']}) by `contextlens tune`: "
        f"{record['objective']}, layer {record['settings']['layer']}, on {record['data']}; seed {record['seed']}, "
        f"{record['steps']} steps (kept: step {record['best_step']}), split hash {record['split_hash'][:12]}. "
        "The base model's card and licence apply to the weights it started from.\n"
    )


def _forget_loaded(name: str) -> None:
    """A model loaded earlier in this process under ``name`` is another model now: drop the cached
    load so the next ``load_contextual(name)`` reads the new folder."""
    from contextlens.core.contextual_models import forget_loaded

    forget_loaded(name)
