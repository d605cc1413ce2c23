"""tools.swarm.broker contract 2: a broker in controlled shutdown heartbeats again 50 ms after the first answer
that did not say ShouldShutDown, then every interval, as Kafka 4.3.1's BrokerLifecycleManager does."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from generated.broker_heartbeat_response import BrokerHeartbeatResponse
from tests.helpers.swarm import Hooks
from tools.swarm.broker import SwarmBroker
from tools.swarm.lifecycle import PENDING_SHUTDOWN, RUNNING, STOPPED


def test_the_second_shutdown_heartbeat_follows_the_first_answer_after_50_ms() -> None:
    hooks = Hooks()
    broker = SwarmBroker(hooks, 100, 19100, random.Random(0))
    broker.state, broker.epoch, broker.leader_id = RUNNING, 5, 1
    answers = [
        BrokerHeartbeatResponse(error_code=0, is_caught_up=True, is_fenced=False, should_shut_down=False),
        BrokerHeartbeatResponse(error_code=0, is_caught_up=True, is_fenced=False, should_shut_down=False),
        BrokerHeartbeatResponse(error_code=0, is_caught_up=True, is_fenced=True, should_shut_down=True),
    ]
    states: list[str] = []
    pauses: list[float] = []

    async def controller_send(request: Any) -> Any:
        states.append(broker.state)
        return answers.pop(0)

    async def pause(seconds: float) -> None:
        pauses.append(seconds)
        await asyncio.sleep(0)

    async def run() -> None:
        broker.controller_send = controller_send  # type: ignore[method-assign]
        broker._pause = pause  # type: ignore[method-assign]
        broker.begin_shutdown()
        await asyncio.wait_for(broker._lifecycle(), 5)
        await broker.close()

    asyncio.run(run())
    assert states == [PENDING_SHUTDOWN] * 3 and broker.state == STOPPED
    interval = hooks.config.heartbeat_interval_ms / 1000
    assert pauses == [0.05, interval]  # then told to shut down: no more heartbeats
