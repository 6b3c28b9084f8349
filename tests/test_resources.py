import hashlib
import zipfile

import pytest

from contextlens import ModelNotInstalledError, UnknownModelError, WeightsMismatchError
from contextlens.core import resources
from contextlens.core.contextual_models import load_contextual


def test_shipped_models_are_pinned_and_verified():
    for name, sha in (
        ("mpnet", "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"),
        ("minilm", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
    ):
        spec = resources.REGISTRY[name]
        assert spec.sha256 == sha and spec.revision
        path = spec.require()
        assert resources.sha256_file(path / "model.safetensors") == sha


def test_weights_that_do_not_match_are_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTLENS_CACHE", str(tmp_path / "cache"))
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"not the real weights")
    with pytest.raises(WeightsMismatchError, match="reinstall"):
        resources.verify_weights(weights, "0" * 64, "minilm")
    good = hashlib.sha256(b"not the real weights").hexdigest()
    resources.verify_weights(weights, good, "x")  # passes, and is remembered
    assert list((tmp_path / "cache" / "verified").iterdir())


def test_split_zip_is_assembled_in_order(tmp_path):
    src = tmp_path / "whole.zip"
    with zipfile.ZipFile(src, "w") as zf:
        zf.writestr("model/config.json", '{"a": 1}')
        zf.writestr("model/desktop.ini", "junk")
        zf.writestr("model/model.safetensors", b"x" * 5000)
    blob = src.read_bytes()
    parts = []
    for i, start in enumerate(range(0, len(blob), 1000)):
        part = tmp_path / f"whole.zip.{i:03d}"
        part.write_bytes(blob[start : start + 1000])
        parts.append(part)
    target = tmp_path / "out" / "model"
    resources._assemble_split_zip(parts, target)
    assert (target / "config.json").read_text() == '{"a": 1}'
    assert (target / "model.safetensors").stat().st_size == 5000
    assert not (target / "desktop.ini").exists()


def test_unknown_and_missing_models(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UnknownModelError, match="unknown model 'no-such-model'"):
        resources.resolve_contextual("no-such-model")
    with pytest.raises(UnknownModelError, match="static model"):
        resources.resolve_contextual("glove-50d")
    monkeypatch.setitem(
        resources.REGISTRY,
        "ghost",
        resources.ModelSpec("ghost", "contextual", "org/ghost", "abc", None, "d", "pip install ghost", lambda: None),
    )
    with pytest.raises(ModelNotInstalledError, match="pip install ghost"):
        resources.resolve_contextual("ghost")


def test_local_folder_is_accepted(minilm):
    model = load_contextual(str(minilm.source))
    assert model.num_layers == 6


def test_model_status_lists_installed_defaults():
    rows = {r["name"]: r for r in resources.model_status()}
    assert rows["mpnet"]["installed"] and rows["minilm"]["installed"] and rows["glove-50d"]["installed"]
    assert rows["smollm2"]["optional"]


def test_registered_name_resolves_to_the_pinned_hub_revision_when_online(monkeypatch):
    """Only the resolution is tested: nothing is fetched (tests never touch the network)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    spec = resources.REGISTRY["minilm"]
    monkeypatch.setitem(resources.REGISTRY, "minilm", resources.ModelSpec(**{**spec.__dict__, "locator": lambda: None}))
    assert resources.resolve_contextual("minilm") == ("minilm", spec.hf_id, spec.revision)
