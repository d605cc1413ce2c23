"""Datadriven scenario scripts (tests/core/scripts/*.txt): divergence truncation, the pre-vote grant
matrix, EndQuorumEpoch backoff, a stale leader fenced by epoch. KRAFTD_REWRITE=1 regenerates outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.datadriven import World, run_command, run_file

SCRIPTS = sorted((Path(__file__).parent / "scripts").glob("*.txt"))


def test_all_four_scripts_exist() -> None:
    names = {p.stem for p in SCRIPTS}
    assert {"divergence", "prevote_matrix", "endquorum_backoff", "fenced_leader"} <= names


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_script(path: Path) -> None:
    results = run_file(path)
    assert results, f"{path.name} has no commands"
    for command, expected, actual in results:
        assert actual == expected, f"{path.name}: {command}\n--- expected\n{expected}\n--- actual\n{actual}"


def test_interpreter_rejects_unknown_commands() -> None:
    with pytest.raises(ValueError):
        run_command(World(), "frobnicate node=1")
