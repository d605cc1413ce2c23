"""Generates the valid fixture specs into a temporary package (``cgfx``) importable by the tests."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from codegen.emit import generate, sync

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def cgfx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    root = tmp_path_factory.mktemp("cgfx")
    sync(root / "cgfx", generate(FIXTURES / "valid", "cgfx"))
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("cgfx")
    finally:
        sys.path.remove(str(root))


@pytest.fixture(scope="session")
def ks(cgfx: ModuleType) -> ModuleType:
    return importlib.import_module("cgfx.kitchen_sink_request")
