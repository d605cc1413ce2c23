"""tools.swarm.swarm contract 7 (tools.swarm.trace): a mistaken fence carries its broker's controller-channel events
before it, and the swarm notes its own late turns: what traced session 18's 29 mistaken fences at 1,000 x 1M to the
swarm's replay (docs/SWARM.md, session 19). An expected fence (a killed broker) carries none."""

from __future__ import annotations

import time

from tools.swarm.lifecycle import KILLED, RUNNING, SwarmConfig
from tools.swarm.swarm import Swarm
from tools.swarm.trace import LATE_S, LoopLag


def test_a_mistaken_fence_carries_the_brokers_trace_and_a_kill_none() -> None:
    swarm = Swarm(SwarmConfig("c", {1: ("127.0.0.1", 1)}), 2)
    a, b = swarm.brokers[100], swarm.brokers[101]
    a.state = b.state = RUNNING
    a.trace.note("heartbeat", 1)
    a.trace.note("answer", (0, 0.002))
    a.trace.note("pause", 2.0)
    b.trace.note("heartbeat", 1)
    b.state = KILLED
    before = time.time()
    swarm._on_fence_record(100, 7)  # the replay applied a fence record
    swarm._on_fence_record(101, 8)
    mistaken, expected = swarm.fences
    assert mistaken.mistaken and mistaken.broker_id == 100 and mistaken.wall >= before
    assert [e for _, e, _ in mistaken.trace] == ["heartbeat", "answer", "pause"]
    assert all(t <= 0 for t, _, _ in mistaken.trace)  # timed from the fence
    assert mistaken.trace[1][2] == (0, 0.002)
    assert not expected.mistaken and expected.trace == []


def test_the_swarm_notes_a_turn_that_ran_its_callback_late_and_only_such() -> None:
    lag = LoopLag()
    now = time.monotonic()
    lag.ran(now + 1.0)  # not due yet: on time
    lag.ran(now - 3 * LATE_S)
    assert len(lag.late) == 1 and lag.late[0][1] >= 3 * LATE_S
    assert lag.within(now - 1, now, now) == [(round(-3 * LATE_S, 3), round(lag.late[0][1], 3))]
    assert lag.within(now + 1, now + 2, now) == []
