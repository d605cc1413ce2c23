"""kraftd.shell.raft.inbox contract 5: observers' requests queued while the driver is busy are stepped after the Raft
traffic queued behind them. Ordering only (which request the core steps first), a real one-node quorum."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from kraftd.core.events import Tick
from kraftd.shell.raft.inbox import EventInbox
from tests.daemon.cluster import CLUSTER_ID
from tests.helpers.daemon import leading_single_node
from tools.swarm import frames


def test_the_first_lane_is_taken_before_the_observers_lane_each_in_order() -> None:
    inbox = EventInbox()
    a, b, c, d = Tick(1), Tick(2), Tick(3), Tick(4)
    inbox.put_later(a)
    inbox.put_nowait(b)
    inbox.put_later(c)
    inbox.put_nowait(d)
    assert inbox.qsize() == 4
    assert [inbox.pop() for _ in range(5)] == [b, d, a, c, None]

    async def waits() -> Any:
        got = asyncio.ensure_future(inbox.get(5.0))
        await asyncio.sleep(0)
        assert inbox.idle()
        inbox.put_later(a)
        return await got

    assert asyncio.run(waits()) is a


async def _order(tmp_path: Path) -> list[str]:
    async with leading_single_node(tmp_path) as node:
        core, drv = node.core, node.driver
        order: list[str] = []

        def fetch(replica: int) -> Any:
            return frames.observer_fetch(CLUSTER_ID, replica, uuid.uuid4(), core.epoch, 0, 0, -1)

        drv.stepping = True  # busy: every request below is queued (node contract 4a)
        try:
            for i in range(8):
                drv.ask_core_now(fetch(100 + i), lambda _, i=i: order.append(f"observer-{i}"), later=True)
            drv.ask_core_now(fetch(200), lambda _: order.append("raft"))
        finally:
            drv.stepping = False
        for _ in range(300):
            await asyncio.sleep(0.01)
            if len(order) == 9:
                break
        return order


def test_a_request_queued_behind_observers_fetches_is_stepped_first(tmp_path: Path) -> None:
    order = asyncio.run(_order(tmp_path))
    assert order == ["raft"] + [f"observer-{i}" for i in range(8)], order
