"""A few emulated brokers for process tests and benchmarks of failover (issue 22): each registers with the active
controller (BrokerRegistration) and heartbeats (BrokerHeartbeat) every ``interval`` seconds over the wire, finding
the active controller by trying the quorum's nodes in turn (NOT_CONTROLLER moves on). Each records when its
heartbeats were answered and whether it was ever fenced after its first unfence. Not a broker swarm (that is
``kraft-swarm``'s job): just enough brokers for CreateTopics to place replicas and for a failover to be seen from
the brokers' side."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from generated.broker_registration_request import BrokerRegistrationRequest, Feature, Listener
from kraftd.controller.features import supported_ranges
from kwire.client import KafkaClient
from kwire.errors import ErrorCode, KraftError

CAUGHT_UP = 1 << 62  # an emulated broker reports itself caught up with any metadata offset


@dataclass
class Heartbeater:
    broker_id: int
    cluster_id: str
    epoch: int = -1
    answered: list[float] = field(default_factory=list)  # monotonic times of answered heartbeats
    unfenced: bool = False
    fenced_again: int = 0  # heartbeats answered "fenced" after the first unfence


class Brokers:
    def __init__(self, ports: list[int], cluster_id: str, count: int, interval: float = 0.5) -> None:
        self.ports = ports
        self.interval = interval
        self.brokers = [Heartbeater(100 + i, cluster_id) for i in range(count)]
        self.clients: dict[int, KafkaClient] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._active = 0  # index into ports of the node last seen active
        self._down_until: dict[int, float] = {}  # a node that failed is skipped for a second

    async def _ask(self, request: Any) -> Any:
        """The active controller's answer (NOT_CONTROLLER and network errors try the next node)."""
        for i in range(len(self.ports)):
            idx = (self._active + i) % len(self.ports)
            if self._down_until.get(idx, 0.0) > time.monotonic():
                continue
            client = self.clients.get(idx)
            if client is None:
                client = self.clients[idx] = KafkaClient(
                    "127.0.0.1", self.ports[idx], request_timeout=2.0, connect_timeout=1.0
                )
            try:
                resp = await client.send(request)
            except (KraftError, OSError, TimeoutError):
                self._down_until[idx] = time.monotonic() + 1.0
                await client.close()
                self.clients.pop(idx, None)
                continue
            if resp.error_code == ErrorCode.NOT_CONTROLLER:
                continue
            self._active = idx
            return resp
        return None

    async def _run(self, b: Heartbeater) -> None:
        feats = [Feature(n, lo, hi) for n, (lo, hi) in supported_ranges().items()]
        while b.epoch < 0:
            resp = await self._ask(
                BrokerRegistrationRequest(
                    broker_id=b.broker_id,
                    cluster_id=b.cluster_id,
                    incarnation_id=uuid.UUID(int=b.broker_id),
                    listeners=[Listener("PLAINTEXT", "127.0.0.1", 9000 + b.broker_id, 0)],
                    features=feats,
                    rack=None,
                    log_dirs=[uuid.UUID(int=1000 + b.broker_id)],
                )
            )
            if resp is not None and resp.error_code == ErrorCode.NONE:
                b.epoch = resp.broker_epoch
            else:
                await asyncio.sleep(self.interval)
        while True:
            req = BrokerHeartbeatRequest(b.broker_id, b.epoch, CAUGHT_UP)
            resp = await self._ask(req)
            if resp is not None and resp.error_code == ErrorCode.NONE:
                b.answered.append(time.monotonic())
                if not resp.is_fenced:
                    b.unfenced = True
                elif b.unfenced:
                    b.fenced_again += 1
            await asyncio.sleep(self.interval)

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._run(b)) for b in self.brokers]

    async def wait_unfenced(self, timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while not all(b.unfenced for b in self.brokers):
                await asyncio.sleep(0.1)

    def pause(self, broker_id: int) -> None:
        """The broker stops heartbeating (its session times out at the active controller)."""
        i = next(i for i, b in enumerate(self.brokers) if b.broker_id == broker_id)
        self._tasks[i].cancel()

    def first_answers_after(self, t: float) -> list[float]:
        """Seconds from ``t`` to each broker's first heartbeat answered after it (inf: none yet)."""
        return [min((a - t for a in b.answered if a > t), default=float("inf")) for b in self.brokers]

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for c in self.clients.values():
            await c.close()
