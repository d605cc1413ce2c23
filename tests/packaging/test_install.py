"""kraftd as a user installs it: ``pip install .`` (not editable) into a fresh virtualenv.

Invariants:
1. The sdist (setuptools' PEP 517 ``build_sdist`` over the checkout's files) carries setup.py, MANIFEST.in, both
   compiled engines' Cython sources (kwire/_fastcodec.pyx, kwire/_fastrecords.pyx) and the opt-in fsync loop's
   (kraftd/shell/raft/_syncloop.pyx), the operator kit (ops/) and the docs, and no generated C.
2. pip installs the unpacked sdist into a fresh virtualenv (a wheel built once, in pip's isolated build env): the
   installed package has both engines and the fsync loop compiled, and that venv loads them (from its own
   site-packages, not from the checkout).
3. Every ``[project.scripts]`` entry point runs from that venv: ``--version`` prints ``<name>, version <the
   pyproject version>`` (the one place the version is written) and ``--help`` exits 0.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
ENGINES = ("_fastcodec", "_fastrecords")


@dataclass
class Installed:
    sdist: Path
    venv: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("install")
    files = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], ROOT).stdout
    src = root / "checkout"
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes((ROOT / name).read_bytes())
    dist = root / "dist"
    build = f"from setuptools import build_meta as b; print(b.build_sdist({str(dist)!r}))"
    name = _run([sys.executable, "-c", build], src).stdout.strip().splitlines()[-1]
    sdist = dist / name
    with tarfile.open(sdist) as tar:
        # The "data" filter where the interpreter has it (3.11.4+; Debian's python3 is 3.11.2): our own sdist.
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(root / "unpacked", **safe)
    (unpacked,) = (root / "unpacked").iterdir()
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root)
    # pip of the test environment installs into the fresh venv (its own wheel cache is reused across runs).
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "-q",
            str(unpacked),
        ],
        root,
    )
    yield Installed(sdist, venv)


def test_sdist_carries_the_engine_sources_and_the_operator_kit(installed: Installed) -> None:
    with tarfile.open(installed.sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for required in (
        "setup.py",
        "MANIFEST.in",
        "pyproject.toml",
        "kwire/_fastcodec.pyx",
        "kwire/_fastrecords.pyx",
        "kraftd/shell/raft/_syncloop.pyx",
        "ops/prometheus/kraftd-rules.yml",
        "ops/prometheus/tests/kraftd-rules.test.yml",
        "ops/grafana/kraftd.json",
        "docs/OPERATIONS.md",
    ):
        assert required in names, required
    assert not {n for n in names if n.endswith((".c", ".so"))}


def test_the_installed_package_runs_both_compiled_engines(installed: Installed) -> None:
    probe = (
        "import kwire, kwire.compiled as c; "
        f"print(kwire.__file__); print(all(c.load(n) is not None for n in {ENGINES!r}))"
    )
    out = _run([str(installed.bin / "python"), "-c", probe], installed.venv).stdout.split()
    assert Path(out[0]).is_relative_to(installed.venv), out  # the venv's copy, not the checkout
    assert out[1] == "True"
    site = next(installed.venv.glob("lib/python*/site-packages"))
    for engine in ENGINES:
        assert list((site / "kwire").glob(f"{engine}.*.so")), engine
    assert list((site / "kraftd" / "shell" / "raft").glob("_syncloop.*.so"))
    loop = "import kraftd.shell.raft._syncloop as s; print(s.__file__)"
    (path,) = _run([str(installed.bin / "python"), "-c", loop], installed.venv).stdout.split()
    assert Path(path).is_relative_to(installed.venv), path


@pytest.mark.parametrize("script", sorted(PROJECT["scripts"]))
def test_every_entry_point_prints_the_one_version(installed: Installed, script: str) -> None:
    exe = str(installed.bin / script)
    out = _run([exe, "--version"], installed.venv, 60).stdout.strip()
    assert out == f"{script}, version {PROJECT['version']}"
    assert "Usage:" in _run([exe, "--help"], installed.venv, 60).stdout
