"""kraftd/core is pure: every module's imports are parsed and checked against the allowed set.

1. Standard library only, minus IO/clock/concurrency modules (asyncio, socket, os, time, threading, ...).
2. Ours: kraftd.core itself, generated, and kwire's pure modules (errors, codec, records, control).
3. ``random`` may be imported only to name ``random.Random`` (passed in); no module-level random calls.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "kraftd" / "core"
FORBIDDEN = {
    "asyncio",
    "socket",
    "os",
    "time",
    "threading",
    "selectors",
    "subprocess",
    "multiprocessing",
    "signal",
    "shutil",
    "tempfile",
    "io",
    "pathlib",
    "datetime",
    "concurrent",
    "logging",
}
KWIRE_PURE = {"kwire", "kwire.errors", "kwire.codec", "kwire.records", "kwire.control"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.append("kraftd.core")
            else:
                found.append(node.module or "")
    return found


def _allowed(name: str) -> bool:
    top = name.split(".")[0]
    if top in FORBIDDEN:
        return False
    if name.startswith("kraftd.core") or top == "generated" or name in KWIRE_PURE:
        return True
    if top in ("kraftd", "kwire", "tools", "codegen"):
        return False
    return top in sys.stdlib_module_names or top == "__future__"


MODULES = sorted(CORE.glob("*.py"))


def test_core_has_modules() -> None:
    assert len(MODULES) >= 10


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_imports_are_pure(path: Path) -> None:
    bad = [n for n in _imports(path) if not _allowed(n)]
    assert not bad, f"{path.name} imports {bad}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_global_random_use(path: Path) -> None:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "random":
            assert node.attr == "Random", f"{path.name}:{node.lineno} uses random.{node.attr}"
        if isinstance(node, ast.ImportFrom) and node.module == "random":
            assert [a.name for a in node.names] == ["Random"], f"{path.name} imports from random"


def test_checker_catches_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import time\nfrom kraftd.sim import cluster\nimport json\n")
    assert [n for n in _imports(bad) if not _allowed(n)] == ["time", "kraftd.sim"]
