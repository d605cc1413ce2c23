"""The state machine inside the real asyncio shell: 3 in-process controllers on loopback.

Invariants:
1. The first leader of an empty log writes the bootstrap records once, as one transaction, from the
   bootstrap.checkpoint ``kraft-storage format --release-version`` wrote (here 4.0: metadata.version 25, no ELR,
   so no min.insync.replicas record).
2. Every node replays the committed log into an identical image (same checksum at the same offset).
3. A non-leader refuses writes with NotControllerError; the leader's write commits and reaches every image.
4. Every controller registers itself (RegisterControllerRecord through ControllerRegistration to the leader), and
   DescribeCluster for controllers answers from those registrations.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from generated.config_record import ConfigRecord
from generated.describe_cluster_request import DescribeClusterRequest
from kraftd.config import load_config
from kraftd.controller.machine import NotControllerError
from kraftd.shell.net.transport import PeerConnection
from kraftd.shell.node import ControllerNode
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.daemon.conftest import write_properties
from tools.storage_cli import format_directory


async def _until(pred: object, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not pred():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached before the deadline")
        await asyncio.sleep(0.05)


def test_three_nodes_bootstrap_once_and_agree(tmp_path: Path) -> None:
    ports = free_ports(3)
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    configs = []
    for i, port in enumerate(ports):
        cfg = write_properties(tmp_path / f"{i}.properties", i + 1, port, tmp_path / f"d{i}", voters=voters)
        format_directory(load_config(cfg), CLUSTER_ID, release_version="4.0")
        configs.append(load_config(cfg))

    async def run() -> None:
        nodes = [ControllerNode(c, seed=i) for i, c in enumerate(configs)]
        for n in nodes:
            await n.start()
        try:
            leader_id = (await nodes[0].wait_for_leader(15)).leader_id
            leader = nodes[leader_id - 1]
            await _until(lambda: all(n.controller.machine.committed.metadata_version == 25 for n in nodes))
            images = [n.controller.machine.committed for n in nodes]
            assert dict(images[0].features) == {
                "metadata.version": 25,
                "group.version": 1,
                "transaction.version": 2,
            }
            assert dict(images[0].configs) == {}  # no ELR at 4.0: no cluster-level min.insync.replicas
            follower = next(n for n in nodes if n is not leader)
            with pytest.raises(NotControllerError):
                await follower.controller.write([ConfigRecord(2, "t", "retention.ms", "1")])
            await _until(lambda: leader.controller.machine.active)
            last = await leader.controller.write([ConfigRecord(4, "", "log.retention.ms", "5")])
            await _until(lambda: all(n.controller.machine.committed.offset >= last for n in nodes))
            # Invariant 2: at the same offset (checked in one synchronous step) every image is identical.
            await _until(lambda: len({n.controller.machine.committed.offset for n in nodes}) == 1)
            sums = {n.controller.machine.committed.checksum() for n in nodes}
            assert len(sums) == 1
            assert {k: dict(v) for k, v in images[0].configs.items()} == {(4, ""): {"log.retention.ms": "5"}}
            m = leader.controller.machine
            await _until(lambda: m.uncommitted is not None and m.uncommitted.offset == m.committed.offset)
            assert (
                m.uncommitted == m.committed
            )  # nothing pending: the uncommitted view is the committed image
            await _until(
                lambda: all(set(n.controller.machine.committed.controllers) == {1, 2, 3} for n in nodes)
            )
            regs = nodes[0].controller.machine.committed.controllers
            assert {cid: c.listeners[0][2] for cid, c in regs.items()} == {
                i + 1: p for i, p in enumerate(ports)
            }
            assert {c.incarnation_id for c in regs.values()} == {n.rpcs.incarnation_id for n in nodes}
            conn = PeerConnection("127.0.0.1", follower.port, client_id="t", timeout_ms=3000)
            try:
                resp = await conn.request(DescribeClusterRequest(endpoint_type=2))
            finally:
                await conn.close()
            assert sorted((b.broker_id, b.port) for b in resp.brokers) == [
                (i + 1, p) for i, p in enumerate(ports)
            ]
            assert resp.controller_id == leader_id
        finally:
            for n in nodes:
                await n.stop()

    asyncio.run(run())
