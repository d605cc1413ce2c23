"""`python -m codegen` / `--check`: deterministic, names stale/missing/extra files, never writes on --check."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegen.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def test_check_passes_on_repo() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "codegen", "--check"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


@pytest.fixture()
def copy(tmp_path: Path) -> tuple[Path, Path]:
    specs = tmp_path / "messages"
    out = tmp_path / "generated"
    shutil.copytree(ROOT / "messages", specs)
    shutil.copytree(ROOT / "generated", out, ignore=shutil.ignore_patterns("__pycache__"))
    return specs, out


def check(specs: Path, out: Path) -> int:
    return main(["--check", "--specs", str(specs), "--out", str(out)])


def test_check_names_altered_file(copy: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    specs, out = copy
    assert check(specs, out) == 0
    target = out / "vote_request.py"
    target.write_text(target.read_text() + "# hand edit\n")
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert check(specs, out) == 1
    err = capsys.readouterr().err
    assert "stale" in err and "vote_request.py" in err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before  # --check wrote nothing


def test_check_names_missing_and_extra(copy: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    specs, out = copy
    (out / "vote_response.py").unlink()
    (out / "leftover.py").write_text("# stale module\n")
    assert check(specs, out) == 1
    err = capsys.readouterr().err
    assert "missing" in err and "vote_response.py" in err
    assert "extra" in err and "leftover.py" in err


def test_regenerate_restores_and_removes_stale(copy: tuple[Path, Path]) -> None:
    specs, out = copy
    pristine = (out / "vote_request.py").read_text()
    (out / "vote_request.py").write_text("broken\n")
    (out / "leftover.py").write_text("# stale module\n")
    assert main(["--specs", str(specs), "--out", str(out)]) == 0
    assert (out / "vote_request.py").read_text() == pristine  # deterministic output
    assert not (out / "leftover.py").exists()
    assert check(specs, out) == 0


def test_bad_spec_exits_2_naming_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(Path(__file__).parent / "fixtures" / "invalid" / "duplicate_tag.json", specs)
    assert main(["--check", "--specs", str(specs), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "duplicate_tag.json" in err and "Twin" in err
    assert not (tmp_path / "out").exists()


def test_every_generated_file_has_header() -> None:
    files = sorted((ROOT / "generated").glob("*.py"))
    assert files
    for p in files:
        first = p.read_text().splitlines()[0]
        assert "DO NOT EDIT" in first and ("messages/" in first), p
