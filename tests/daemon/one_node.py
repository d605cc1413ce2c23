"""A real one-node kraftd quorum in process, active, for tests that talk to its controller over the wire."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from kraftd.config import load_config
from kraftd.shell.node import ControllerNode
from kwire.client import KafkaClient
from kwire.errors import ErrorCode
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.daemon.conftest import write_properties
from tools.storage_cli import format_directory
from tools.swarm import frames


@asynccontextmanager
async def one_node(
    tmp_path: Path, extra: dict[str, str] | None = None
) -> AsyncIterator[tuple[ControllerNode, int]]:
    """The node (its leader elected and its controller active) and its port; stopped on exit."""
    cfg = tmp_path / "one.properties"
    (port,) = free_ports(1)
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
        yield node, port
    finally:
        await node.stop()


async def register(client: KafkaClient, broker_id: int) -> int:
    """BrokerRegistration of a swarm-shaped broker; its broker epoch."""
    reg = frames.registration(
        broker_id, CLUSTER_ID, uuid.uuid4(), 9000 + broker_id, uuid.UUID(int=500 + broker_id)
    )
    registered = await client.send(reg)
    assert registered.error_code == ErrorCode.NONE, registered
    return int(registered.broker_epoch)
