"""scripts/pick_python.sh: the interpreter scripts/setup.sh builds .venv with (contracts in the script)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pick_python.sh"


def pick(env: dict[str, str]) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "KRAFTD_PYTHON_CANDIDATES")}
    out = subprocess.run([str(SCRIPT)], env={**base, **env}, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def links_libpython(exe: str) -> bool | None:
    """True: libpython is a shared library of ``exe``; None: ldd cannot tell."""
    if shutil.which("ldd") is None:
        return None
    out = subprocess.run(["ldd", exe], capture_output=True, text=True)
    return None if out.returncode else "libpython" in out.stdout


def test_python_in_the_environment_wins() -> None:
    assert pick({"PYTHON": "/opt/some/python3"}) == "/opt/some/python3"


def test_a_missing_or_too_old_candidate_is_passed_over(tmp_path: Path) -> None:
    old = tmp_path / "python-old"
    old.write_text("#!/bin/sh\necho ''\n")  # what the version check prints below 3.11
    old.chmod(0o755)
    assert pick({"KRAFTD_PYTHON_CANDIDATES": f"{tmp_path / 'missing'} {old}"}) == "python3"


def test_an_interpreter_loading_a_shared_libpython_is_passed_over() -> None:
    found = [sys.executable, *map(str, sorted(Path.home().glob(".pyenv/versions/3.1*/bin/python3")))]
    on_path = subprocess.run(
        ["python3", "-c", "import sys; print(sys.executable)"], capture_output=True, text=True
    )
    found.append(on_path.stdout.strip())  # the interpreter behind a shim (pyenv's python3 is a script)
    shared = [e for e in found if e and links_libpython(e)]
    static = [
        e
        for e in ("/usr/bin/python3", "/usr/bin/python3.11")
        if Path(e).exists() and links_libpython(e) is False
    ]
    if not shared or not static:
        pytest.skip("needs one python3 that loads a shared libpython and one that links it in")
    assert pick({"KRAFTD_PYTHON_CANDIDATES": f"{shared[0]} {static[0]}"}) == static[0]
    assert pick({"KRAFTD_PYTHON_CANDIDATES": shared[0]}) == "python3"
