"""kraftd.shell.controller.broker_rpcs contract 2a: a session check that lists two expired brokers fences them one
after the other; one that heartbeats while the first is being fenced is not fenced. A real one-node quorum
in-process; the fencing of the first broker is where the second one's heartbeat arrives (as at 1,000 brokers x 1M
partitions, where fencing one broker took seconds and the log said "last one -70303 ms ago")."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftd.config import load_config
from kraftd.shell.controller import broker_rpcs
from kraftd.shell.node import ControllerNode
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.daemon.conftest import write_properties
from tools.storage_cli import format_directory
from tools.swarm import frames

SESSION_MS = 1500


async def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[int, bool]:
    cfg = tmp_path / "one.properties"
    (port,) = free_ports(1)
    extra = {"broker.session.timeout.ms": str(SESSION_MS)}
    write_properties(cfg, 1, port, tmp_path / "one", voters=f"1@127.0.0.1:{port}", extra=extra)
    format_directory(load_config(cfg), CLUSTER_ID)
    node = ControllerNode(load_config(cfg), seed=1)
    await node.start()
    try:
        await node.wait_for_leader(10)
        for _ in range(200):
            if node.controller.machine.active:
                break
            await asyncio.sleep(0.05)
        async with KafkaClient("127.0.0.1", port) as client:
            epochs = {}
            for bid in (7, 8):
                reg = frames.registration(bid, CLUSTER_ID, uuid.uuid4(), 9000 + bid, uuid.UUID(int=500 + bid))
                registered = await client.send(reg)
                assert registered.error_code == ErrorCode.NONE, registered
                epochs[bid] = registered.broker_epoch
                beat = BrokerHeartbeatRequest(
                    broker_id=bid, broker_epoch=epochs[bid], current_metadata_offset=10**9
                )
                assert not (await client.send(beat)).is_fenced
            rpcs = node.rpcs
            # Stop the periodic check from fencing on its own: the test runs the check itself, once.
            rpcs.heartbeats.session_timeout_ms = 10**9
            await asyncio.sleep(0.1)
            real = broker_rpcs.fencing.fence_in_chunks

            async def fence_in_chunks(latest: Any, write: Any, bid: int, append: Any) -> bool:
                if bid == 7:  # broker 8 heartbeats while broker 7 is being fenced
                    rpcs.heartbeats.touch(8, rpcs.now_ms())
                return bool(await real(latest, write, bid, append))

            monkeypatch.setattr(broker_rpcs.fencing, "fence_in_chunks", fence_in_chunks)
            rpcs.heartbeats.session_timeout_ms = 50  # both sessions have timed out now
            await rpcs._fence_expired()
            image = node.controller.machine.latest()
            return {bid: image.brokers[bid].fenced for bid in (7, 8)}
    finally:
        await node.stop()


def test_a_broker_that_heartbeats_during_a_session_check_is_not_fenced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert asyncio.run(_run(tmp_path, monkeypatch)) == {7: True, 8: False}
