"""Determinism, replay, and what a failure report looks like."""

from __future__ import annotations

import pytest

from kraftd.core.config import BugFlags
from kraftd.sim.__main__ import main
from kraftd.sim.runner import pick, run_seed
from kraftd.sim.scenarios import SCENARIOS


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_each_scenario_passes_and_replays_identically(scenario: str) -> None:
    a = run_seed(scenario, 11)
    b = run_seed(scenario, 11)
    assert a.ok, a.report()
    assert (a.events, a.virtual_ms) == (b.events, b.virtual_ms)
    assert a.events > 50


def test_failure_report_names_seed_scenario_and_trace() -> None:
    r = run_seed("zombie_leader", 1, BugFlags(no_check_quorum=True))
    assert not r.ok
    text = r.report()
    assert "zombie_leader seed=1" in text
    assert "python -m kraftd.sim --scenario zombie_leader --seed 1 --bug no_check_quorum" in text
    assert len(r.trace) > 20 and "leader" in text


def test_cli_replays_one_seed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--scenario", "initial_election", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "ok   initial_election seed=3" in out
    lines = out.splitlines()  # a replay prints its trace without --verbose
    assert lines[1].startswith("  last ") and len(lines) > 50 and " leader e" in out
    assert main(["--scenario", "initial_election", "--seed", "3", "--trace-lines", "10"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 12
    assert main(["--scenario", "zombie_leader", "--seed", "1", "--bug", "no_check_quorum"]) == 1
    assert "FAIL zombie_leader seed=1" in capsys.readouterr().out


def test_cli_sweep(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seeds", "0-11"]) == 0
    assert "12 seeds, 0 failed" in capsys.readouterr().out


def test_sweep_order_is_round_robin() -> None:
    names = sorted(SCENARIOS)
    assert [pick(s, names) for s in range(len(names))] == names
