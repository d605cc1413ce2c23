"""The controller listener's fast path (kraftd.shell.apis.routing contracts 6a-6c; kwire.server contract 11).

Contracts:
1. A Fetch, FetchSnapshot, ReadOffset or BeginQuorumEpoch is stepped at once and answered from inside the step that
   produces its answer, with what the coroutine path adds (the leader's endpoints, the network log) and the request
   metrics; an observer's Fetch or FetchSnapshot is queued first and stepped in chunks
   (kraftd.shell.apis.observer_fetches).
1a. A voter's ReadOffset that the leader's state confirms on arrival (kraftd.core.reads invariant 7a: the
   follower's reads, issue 25) is answered between steps, without stepping the core: the answer the step would
   send, without the driver's step around it; any other ReadOffset is stepped as in contract 1.
1b. The connection a voter's Fetch arrives on is marked urgent in the listener's pacing of large writes
   (kwire.large_frames contract 11k): its answers (the commit path) never wait behind observers' catch-up answers.
2. A BrokerHeartbeat that changes nothing (kraftd.shell.controller.broker_rpcs contract 4) and a DescribeConfigs
   (kraftd.shell.raft.reads contract 7) are answered without a task; False from :meth:`FastPath.offer` hands any
   request to the coroutine path, which answers it (and reports what it finds).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from generated.messages import ApiKey
from generated.request_header import RequestHeader
from kraftd.core.messages import fetch_replica_id
from kraftd.shell.apis.observer_fetches import ObserverFetches
from kraftd.shell.net import membership
from kraftd.shell.net.transport import ConnectionInfo

# Contract 1: the Raft RPCs stepped on the fast path, by the name their request metrics carry.
FAST_CORE: dict[int, str] = {
    ApiKey.FETCH: "Fetch",
    ApiKey.FETCH_SNAPSHOT: "FetchSnapshot",
    ApiKey.READ_OFFSET: "ReadOffset",
    ApiKey.BEGIN_QUORUM_EPOCH: "BeginQuorumEpoch",
}
# Contract 1: the requests an observer's are queued of, with their replica id.
OBSERVED: dict[int, Callable[[Any], int]] = {
    ApiKey.FETCH: fetch_replica_id,
    ApiKey.FETCH_SNAPSHOT: lambda body: int(body.replica_id),
}
log = logging.getLogger("kraftd.routing")


class FastPath:
    def __init__(self, node: Any) -> None:
        """``node``: the router's port (kraftd.shell.apis.routing.RouterPort)."""
        self.node = node
        self.observer_fetches = ObserverFetches(
            # queued behind the Raft traffic while the driver is busy (kraftd.shell.raft.inbox contract 5)
            lambda body, answer: bool(self.node.ask_core_now(body, answer, later=True)),
            waiting=lambda: self.node.server.waiting.bytes,  # observer_fetches contract 7
        )

    def offer(
        self, header: RequestHeader, body: Any, info: ConnectionInfo, reply: Callable[[Any], None]
    ) -> bool:
        """Contracts 1 and 2; False: the coroutine path takes it."""
        key = header.request_api_key
        if key == ApiKey.BROKER_HEARTBEAT:
            return self._heartbeat_now(body, reply)
        if key == ApiKey.DESCRIBE_CONFIGS:
            return bool(self.node.reads.describe_now(body, reply))
        if (name := FAST_CORE.get(key)) is None:
            return False
        node = self.node
        version = header.request_api_version if key == ApiKey.FETCH else -1
        started = time.perf_counter()

        def answer(resp: Any) -> None:
            try:
                membership.advertise_leader(node, version, resp)
                node.netlog.answered(info.peer, body, resp)
                reply(resp)
            except Exception:  # noqa: BLE001 - one request's failure never stops the driver
                log.exception("node %d: answering %s failed", node.config.node_id, type(body).__name__)
            count, latency = node.metrics.children(name)
            count.inc()
            latency.observe(time.perf_counter() - started)

        if key == ApiKey.READ_OFFSET and node.answer_read_offset(body, answer):
            return True  # contract 1a
        if key in OBSERVED:
            if not node.core.voters.has_id(OBSERVED[key](body)):
                self.observer_fetches.offer(body, answer)  # kraftd.shell.apis.observer_fetches contracts 1, 8
                return True
            node.server.waiting.urgent.add(info.connection_id)  # contract 1b
        return bool(node.ask_core_now(body, answer))

    def _heartbeat_now(self, body: Any, reply: Callable[[Any], None]) -> bool:
        """Contract 2, with the request metrics the coroutine path's instrument counts."""
        started = time.perf_counter()
        try:
            answer = self.node.rpcs.heartbeat_now(body)
        except Exception:  # noqa: BLE001 - the coroutine path answers it (and reports what it finds)
            log.exception("node %d: the heartbeat short path failed", self.node.config.node_id)
            return False
        if answer is None:
            return False
        reply(answer)
        count, latency = self.node.metrics.children("BrokerHeartbeat")
        count.inc()
        latency.observe(time.perf_counter() - started)
        return True
