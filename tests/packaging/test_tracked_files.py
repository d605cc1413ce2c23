"""The repository tracks no machine-local state. Session 18 committed a worktree's ``.cache`` symlink (``.gitignore``
said ``.cache/``, which matches a directory, not a link); checking the commit out replaced the Kafka jar cache of
the main worktree with a link to itself, so ``git check-ignore`` must cover every form of these names."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCAL = (".cache", ".venv", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis")

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout"
)


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)


def test_no_local_state_is_tracked() -> None:
    tracked = _git("ls-files").stdout.splitlines()
    assert not [p for p in tracked if p.split("/")[0] in LOCAL]


def test_local_state_is_ignored_as_a_link_too() -> None:
    """``git check-ignore --no-index`` on the bare name (a symlink is a file to git, not a directory)."""
    out = _git("check-ignore", "--no-index", *LOCAL)
    assert sorted(out.stdout.split()) == sorted(LOCAL), out
