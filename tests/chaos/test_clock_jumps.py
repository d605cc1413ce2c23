"""Stepped wall clocks on real processes (tests.chaos.cluster contract 6, tests.chaos.faults contract 5).

The leader's wall clock jumps hours ahead and one follower's hours back, in a 3-node quorum under load: with
kraftd.shell.raft.clock's monotonic timers nobody elects, and after a kill -9 of the leader the follower whose clock
went back still grants the pre-vote, so a new leader is elected in time and every acknowledged record survives.
With wall-clock timers the leader resigns at once (check-quorum) and the failover stalls.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.chaos.checks import verify
from tests.chaos.cluster import ChaosCluster
from tests.chaos.faults import Schedule
from tests.interop.kafka import CI

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


def _far_stamps(log: Path, real: float) -> int:
    """Log lines whose wall-clock stamp is more than 50 minutes off the real time: the jump took effect."""
    far = 0
    for line in log.read_text(errors="replace").splitlines():
        m = STAMP.match(line)
        if m and abs(time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) - real) > 3000:
            far += 1
    return far


def test_stepped_wall_clocks_neither_elect_nor_stall_a_failover(tmp_path: Path) -> None:
    c = ChaosCluster(tmp_path, 3)
    if c.faketime is None:
        c.close()
        reason = (
            "libfaketime is not installed (Debian package faketime; scripts/setup.sh installs it as root)"
        )
        if CI:
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    try:
        c.start_all()
        sched = Schedule(c, 1, hold=(1.0, 2.0), gap=(1.0, 2.0))
        first = sched._leader()
        assert first is not None
        time.sleep(2)  # some load before the jumps
        sched.clock_jump()
        real = time.time()
        jumped = sum(_far_stamps(c.log_file(i), real) for i in c.ids)
        c.heal()
        verdict = verify(c)
    finally:
        c.close()
    events = "\n".join(sched.t.events)
    assert jumped > 0, "no node logged a stepped wall-clock time: the jump never reached a process\n" + events
    assert not sched.t.liveness_violations, events
    assert len(sched.t.failovers_s) == 1, events
    assert verdict.acked > 100 and not verdict.lost and not verdict.duplicated, verdict
    assert not verdict.divergent, verdict.divergent
