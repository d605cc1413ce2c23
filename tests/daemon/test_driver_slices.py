"""kraftd.shell.node contract 4b: the driver steps queued events for at most ``DRIVE_SLICE_S`` of one loop callback,
then gives the loop a turn. Counted work (core steps before a callback scheduled meanwhile runs), a real one-node
quorum; the slice is set to 0 so the count does not depend on the machine's speed."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from kraftd.core.events import RequestReceived
from kraftd.shell.raft import driver as driver_mod
from kraftd.shell.raft.clock import now_ms
from tests.daemon.cluster import CLUSTER_ID
from tests.helpers.daemon import leading_single_node
from tools.swarm import frames

WAVE = 200


async def _run(tmp_path: Path) -> dict[str, Any]:
    async with leading_single_node(tmp_path) as node:
        core, drv = node.core, node.driver
        answers: list[Any] = []
        yields = getattr(drv, "yields", 0)
        for i in range(WAVE):  # observers' Fetches queued behind a step (contract 4a), as at 1M partitions
            body = frames.observer_fetch(CLUSTER_ID, 100 + i, uuid.uuid4(), core.epoch, 0, 0, -1)
            token = drv.next_token
            drv.next_token += 1
            drv.pending[token] = answers.append
            drv.events.put_nowait(RequestReceived(now_ms(), token, body))
        before = core.steps
        waited: list[int] = []
        # A callback that became ready in this turn (a heartbeat read, the lag probe): steps run before it.
        asyncio.get_running_loop().call_soon(lambda: waited.append(core.steps - before))
        for _ in range(300):
            await asyncio.sleep(0.01)
            if len(answers) == WAVE and waited:
                break
        return {"answers": len(answers), "waited": waited[0], "yields": getattr(drv, "yields", 0) - yields}


def test_a_queued_wave_is_stepped_over_many_turns_of_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver_mod, "DRIVE_SLICE_S", 0.0, raising=False)
    out = asyncio.run(_run(tmp_path))
    assert out["answers"] == WAVE
    # before contract 4b the driver stepped all WAVE queued events in one callback first
    assert out["waited"] <= 8, out
    assert out["yields"] >= WAVE - 8, out


class _StepClock:
    """``perf_counter`` for the driver module: advances 1 ms per core step, so the slice is counted in steps."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_a_driver_slice_is_no_longer_than_the_controllers_turn_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Contract 4b (session 21): the driver yields after ``SLICE_S`` of stepping (glue contract 9's 10 ms), not 20
    ms; each step here costs 1 ms of a fake clock. Before, the callback ready meanwhile waited for 20 steps."""
    clock = _StepClock()
    monkeypatch.setattr(driver_mod, "time", clock)
    real_step = driver_mod.RaftDriver.step

    def step(self: Any, event: Any) -> None:
        clock.now += 0.001
        real_step(self, event)

    monkeypatch.setattr(driver_mod.RaftDriver, "step", step)
    out = asyncio.run(_run(tmp_path))
    assert out["answers"] == WAVE
    assert 5 <= out["waited"] <= 11, out
    assert out["yields"] >= WAVE // 11, out
