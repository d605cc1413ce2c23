"""kraftd.shell.apis.observer_fetches contract 7a: while the listener holds its bound of waiting answers (contract 7),
an observer's queued Fetch is stepped anyway once its long poll is spent (a FetchSnapshot after ``DUE_MS``), asking
for at most ``DUE_BYTES`` and no further long poll, so no broker's Fetch waits in the leader's queue until it times
out (issue 24: ~200 observer timeouts a second at 1,000 x 1M, docs/SWARM.md, session 16). Before: never stepped
while the bound held. The clock is the test's (no timed test)."""

from __future__ import annotations

import asyncio
from typing import Any

from kraftd.core import messages as m
from kraftd.core.log import OffsetAndEpoch
from kraftd.core.types import ReplicaKey
from kraftd.shell.apis.observer_fetches import DUE_BYTES, DUE_MS, PENDING, ObserverFetches

MIB = 1024 * 1024


def _fetch(broker: int) -> Any:
    return m.fetch_request("c", ReplicaKey(broker, None), 1, 0, 0, 500, 8 * MIB, -1)


def _snapshot_fetch(broker: int) -> Any:
    return m.fetch_snapshot_request("c", ReplicaKey(broker, None), 1, OffsetAndEpoch(100, 1), 0, 8 * MIB)


def _run(bodies: list[Any], times: list[float]) -> list[list[Any]]:
    """``bodies`` offered at time 0 with the listener's outboxes full for good; for each of ``times``, the clock
    set to it and the loop run a while: the bodies stepped by then."""
    now = [0.0]
    stepped: list[Any] = []
    seen: list[list[Any]] = []

    async def main() -> None:
        def step(body: Any, answer: Any) -> bool:
            stepped.append(body)
            answer(None)
            return True

        of = ObserverFetches(step, waiting=lambda: PENDING, clock=lambda: now[0])
        for body in bodies:
            of.offer(body, lambda resp: None)
        for t in times:
            now[0] = t
            for _ in range(20):  # a few of contract 7's retries
                await asyncio.sleep(0.005)
            seen.append(list(stepped))
        assert of.due == len(stepped)

    asyncio.run(main())
    return seen


def test_a_queued_observer_fetch_is_answered_shaped_once_its_long_poll_is_spent() -> None:
    bodies = [_fetch(100 + i) for i in range(3)]
    before, at_due = _run(bodies, [0.499, 0.5])
    assert before == []  # within its long poll it waits for the bound (contract 7)
    assert at_due == bodies  # before 7a: [] for as long as the bound holds
    assert all(b.max_bytes == DUE_BYTES and b.max_wait_ms == 0 for b in bodies)


def test_a_queued_fetch_snapshot_is_stepped_shaped_after_due_ms() -> None:
    bodies = [_snapshot_fetch(100), _fetch(101)]
    before, at_due = _run(bodies, [DUE_MS / 1000 - 0.001, DUE_MS / 1000])
    assert before == []  # the Fetch behind the snapshot fetch waits for it: no one waits past DUE_MS
    assert at_due == bodies
    assert bodies[0].max_bytes == DUE_BYTES and bodies[1].max_bytes == DUE_BYTES
