"""The import contracts cover the house (issue 31): every module of core, cli, web and reports and
every analyses package is named in a layer, so a new module cannot sit outside the rules
`lint-imports` checks."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "contextlens"


def _layered(container: str) -> set[str]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c.get("containers") == [container])
    return {name.strip() for layer in layers for name in layer.split("|")}


@pytest.mark.parametrize("package", ["core", "cli", "web", "reports"])
def test_every_module_is_in_a_layer_of_its_packages_contract(package):
    modules = {p.stem for p in (PACKAGE / package).glob("*.py") if p.stem != "__init__"}
    modules |= {p.parent.name for p in (PACKAGE / package).glob("*/__init__.py")}
    assert modules and modules - _layered(f"contextlens.{package}") == set()


def test_every_analyses_package_is_in_a_layer_of_the_analyses_contract():
    packages = {p.parent.name for p in (PACKAGE / "analyses").glob("*/__init__.py")}
    assert packages and packages - _layered("contextlens.analyses") == set()
