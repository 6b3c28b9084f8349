"""Shared fixtures: the real shipped models, loaded once per test session, fully offline.

Tests never read or write the user's cache (``~/.cache/contextlens`` or ``$CONTEXTLENS_CACHE``):
they use a test cache folder of their own, ``$CONTEXTLENS_TEST_CACHE`` or else
``<repo>/.pytest_cache/contextlens`` (git-ignored with pytest's own cache). It is kept between
runs because filling it costs the mpnet extraction, the GloVe conversion, the WordNet example
scan and the encoded benchmark sentences; ``pytest --cache-clear`` or deleting it starts cold.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
TEST_CACHE = Path(
    os.environ.get("CONTEXTLENS_TEST_CACHE") or Path(__file__).resolve().parent.parent / ".pytest_cache" / "contextlens"
)
os.environ["CONTEXTLENS_CACHE"] = str(TEST_CACHE)

import pytest  # noqa: E402

from contextlens.core.contextual_models import ContextualModel, load_contextual  # noqa: E402
from contextlens.core.static_models import StaticModel, load_static  # noqa: E402


@pytest.fixture(scope="session")
def minilm() -> ContextualModel:
    return load_contextual("minilm")


@pytest.fixture(scope="session")
def minilm_onnx() -> ContextualModel:
    """minilm on ONNX Runtime at fp32, its graph exported and checked now (once per test cache, ~5-20 s),
    so that no test pays the export inside a cache folder of its own."""
    model = load_contextual("minilm", "fp32", "onnx")
    model.onnx_forward()
    return model


@pytest.fixture(scope="session")
def mpnet() -> ContextualModel:
    return load_contextual("mpnet")


@pytest.fixture(scope="session")
def glove() -> StaticModel:
    return load_static("glove-50d")


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory):
    """`contextlens demo -m minilm` run once per test session (in-process): ``(result, folder)``;
    every test of the demo and its report reads this one run."""
    from tests.helpers import run_cli

    folder = tmp_path_factory.mktemp("demo") / "out"
    return run_cli("demo", "--model", "minilm", "--out", str(folder)), folder
