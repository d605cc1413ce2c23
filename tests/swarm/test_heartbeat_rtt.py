"""tools.swarm.broker contract 4: a heartbeat's round trip ends when the swarm read its answer, not when the
broker's coroutine next ran behind the other brokers' work on the one loop."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from generated.broker_heartbeat_response import BrokerHeartbeatResponse
from kwire.headers import encode_response
from tests.helpers.swarm import Hooks
from tools.swarm.broker import SwarmBroker
from tools.swarm.decoding import BROKER_HEARTBEAT
from tools.swarm.lifecycle import RUNNING, SwarmConfig
from tools.swarm.swarm import Swarm

QUEUED_S = 0.2  # other brokers' continuations run between the answer's read and this broker's


def test_the_round_trip_ends_when_the_answer_was_read() -> None:
    hooks = Hooks()
    broker = SwarmBroker(hooks, 100, 19100, random.Random(0))
    broker.state, broker.epoch, broker.leader_id = RUNNING, 5, 1
    answer = encode_response(
        BROKER_HEARTBEAT, 1, 0, BrokerHeartbeatResponse(error_code=0, is_caught_up=True, is_fenced=False)
    )

    async def controller_send(request: Any) -> Any:
        client = broker._client("controller", 1)
        await asyncio.sleep(0.01)  # on the wire
        _, body = client._decode(answer, BROKER_HEARTBEAT, 1)  # the client's read loop decodes it
        time.sleep(QUEUED_S)  # the loop runs 999 other brokers' continuations first
        return body

    async def run() -> float:
        broker.controller_send = controller_send  # type: ignore[method-assign]
        started = time.monotonic()
        resp = await broker._heartbeat()
        assert resp is not None and not resp.is_fenced
        took = time.monotonic() - started
        await broker.close()
        return took

    took = asyncio.run(run())
    ((rtt, error),) = hooks.rtts
    assert error == 0 and took >= QUEUED_S
    assert 0.01 <= rtt < QUEUED_S / 2


def test_propagation_ends_when_the_fetch_answer_was_read() -> None:
    swarm = Swarm(SwarmConfig("c", {1: ("127.0.0.1", 1)}), 1)
    (broker,) = swarm.brokers.values()
    w = swarm.watch("t")
    swarm.replay.topic_offset["t"] = 5
    broker.fetch_end, broker.hwm = 10, 10
    broker.fetch_read = read = time.monotonic()  # the client's read loop decoded the answer
    time.sleep(QUEUED_S)  # the loop runs 999 other brokers' continuations first
    swarm.progress(broker)
    assert w.done and w.reached[broker.id] == read
