"""kraftd.shell.raft.clock: the cores' clock ignores a stepped wall clock (contract 1) yet reads near wall time (2)."""

from __future__ import annotations

import time

import pytest

from kraftd.shell.node import ControllerNode
from kraftd.shell.raft import clock


@pytest.mark.parametrize("step_s", [-86400.0, 3600.0])
def test_a_stepped_wall_clock_moves_no_timer(monkeypatch: pytest.MonkeyPatch, step_s: float) -> None:
    real = time.time
    before = clock.now_ms()
    assert abs(before - real() * 1000) < 5000  # contract 2: near wall time while the clock is not stepped
    monkeypatch.setattr(time, "time", lambda: real() + step_s)
    for read in (clock.now_ms, ControllerNode.now_ms):
        delta = read() - before
        assert 0 <= delta < 1000, (read, delta)
