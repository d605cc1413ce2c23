"""kraftd.shell.controller.broker_rpcs contract 2a: a session check that lists two expired brokers fences them one
after the other; one that heartbeats while the first is being fenced is not fenced. A real one-node quorum
in-process; the fencing of the first broker is where the second one's heartbeat arrives (as at 1,000 brokers x 1M
partitions, where fencing one broker took seconds and the log said "last one -70303 ms ago")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftd.shell.controller import fencing
from kwire.client import KafkaClient
from tests.daemon.one_node import one_node, register

SESSION_MS = 1500


async def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[int, bool]:
    async with one_node(tmp_path, {"broker.session.timeout.ms": str(SESSION_MS)}) as (node, port):
        async with KafkaClient("127.0.0.1", port) as client:
            for bid in (7, 8):
                epoch = await register(client, bid)
                beat = BrokerHeartbeatRequest(
                    broker_id=bid, broker_epoch=epoch, current_metadata_offset=10**9
                )
                assert not (await client.send(beat)).is_fenced
            rpcs = node.rpcs
            # Stop the periodic check from fencing on its own: the test runs the check itself, once.
            rpcs.heartbeats.session_timeout_ms = 10**9
            await asyncio.sleep(0.1)
            real = fencing.fence_in_chunks

            async def fence_in_chunks(latest: Any, write: Any, bid: int, append: Any) -> bool:
                if bid == 7:  # broker 8 heartbeats while broker 7 is being fenced
                    rpcs.heartbeats.touch(8, rpcs.now_ms())
                return bool(await real(latest, write, bid, append))

            monkeypatch.setattr(fencing, "fence_in_chunks", fence_in_chunks)
            rpcs.heartbeats.session_timeout_ms = 50  # both sessions have timed out now
            await rpcs._fence_expired()
            image = node.controller.machine.latest()
            return {bid: image.brokers[bid].fenced for bid in (7, 8)}


def test_a_broker_that_heartbeats_during_a_session_check_is_not_fenced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert asyncio.run(_run(tmp_path, monkeypatch)) == {7: True, 8: False}
