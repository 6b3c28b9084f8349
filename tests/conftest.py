"""Shared fixtures: the real shipped models, loaded once per test session, fully offline."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

from contextlens.core.contextual_models import ContextualModel, load_contextual  # noqa: E402
from contextlens.core.static_models import StaticModel, load_static  # noqa: E402


@pytest.fixture(scope="session")
def minilm() -> ContextualModel:
    return load_contextual("minilm")


@pytest.fixture(scope="session")
def mpnet() -> ContextualModel:
    return load_contextual("mpnet")


@pytest.fixture(scope="session")
def glove() -> StaticModel:
    return load_static("glove-50d")
