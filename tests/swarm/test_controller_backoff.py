"""tools.swarm.broker contract 1a: a heartbeat waiting for a dead controller's reconnect backoff goes to the new
controller as soon as the broker's observer names it, as Kafka's NodeToControllerRequestThread does."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from generated.broker_heartbeat_response import BrokerHeartbeatResponse
from kwire.errors import NetworkError
from tests.helpers.swarm import Hooks
from tools.swarm.broker import SwarmBroker
from tools.swarm.lifecycle import RUNNING


class FakeClient:
    """A controller connection: node 1 is dead and in its reconnect backoff, node 2 answers."""

    def __init__(self, node: int) -> None:
        self.node, self.sent = node, 0

    def reconnect_wait(self) -> float:
        return 1.0 if self.node == 1 else 0.0

    def start(self, request: Any, timeout: float) -> None:
        return None

    async def send(self, request: Any, timeout: float) -> Any:
        self.sent += 1
        if self.node == 1:
            await asyncio.sleep(0.2)  # waiting out the backoff, then refused (shortened)
            raise NetworkError("connection refused")
        return BrokerHeartbeatResponse(error_code=0, is_caught_up=True, is_fenced=False)


def test_a_heartbeat_does_not_wait_out_a_dead_controllers_backoff() -> None:
    hooks = Hooks()
    broker = SwarmBroker(hooks, 100, 19100, random.Random(0))
    broker.state, broker.epoch, broker.leader_id = RUNNING, 5, 1
    clients = {1: FakeClient(1), 2: FakeClient(2)}
    broker._client = lambda channel, node: clients[node]  # type: ignore[method-assign]

    async def run() -> Any:
        task = asyncio.ensure_future(broker.controller_send(object()))
        await asyncio.sleep(0.01)
        broker.leader_id, broker.leader_epoch = 2, 6  # the observer learned the new leader
        return await asyncio.wait_for(task, 5)

    resp = asyncio.run(run())
    assert resp.error_code == 0 and broker.last_target == 2
    assert (
        clients[1].sent == 0 and clients[2].sent == 1
    )  # nothing was handed to the dead controller's connection
