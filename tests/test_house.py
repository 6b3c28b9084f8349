"""The import contracts cover the house (issue 31): every module of core, cli, web and reports and
every analyses package is named in a layer, so a new module cannot sit outside the rules
`lint-imports` checks."""

from __future__ import annotations

import ast
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


# --- size limits (issue 31 item 5) -------------------------------------------------------------
# A function's length runs from its `def` line to its last line (decorators excluded: a click
# command's options are declarations, not body); a module's is its line count. Every exception sits
# here, in this one place, with a one-line reason; ruff's C901/PLR0913/PLR0915 (pyproject.toml) hold
# complexity, arguments and statements.
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 500
LONG_FUNCTIONS: dict[str, str] = {}
LONG_MODULES: dict[str, str] = {}


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    functions, modules = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        text = path.read_text()
        modules[name] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                key = f"{name}:{node.name}"
                functions[key] = max(functions.get(key, 0), node.end_lineno - node.lineno + 1)
    return functions, modules


def test_no_function_or_module_over_the_limits_outside_the_allow_list():
    functions, modules = _sizes()
    long_functions = {k: n for k, n in functions.items() if n > MAX_FUNCTION_LINES and k not in LONG_FUNCTIONS}
    long_modules = {k: n for k, n in modules.items() if n > MAX_MODULE_LINES and k not in LONG_MODULES}
    assert long_functions == {} and long_modules == {}, (
        f"split these, or add each to LONG_FUNCTIONS / LONG_MODULES with a one-line reason: "
        f"{long_functions} {long_modules}"
    )


def test_the_allow_list_names_only_real_offenders_with_a_reason():
    """A stale entry would let a function regrow unseen: once it is split, its entry goes."""
    functions, modules = _sizes()
    stale = [k for k in LONG_FUNCTIONS if functions.get(k, 0) <= MAX_FUNCTION_LINES]
    stale += [k for k in LONG_MODULES if modules.get(k, 0) <= MAX_MODULE_LINES]
    assert stale == []
    assert all(reason.strip() and "\n" not in reason for reason in {**LONG_FUNCTIONS, **LONG_MODULES}.values())
