"""Prometheus metrics (``metrics.port``): Kafka's raft-metrics under the names a JMX exporter gives them,
process metrics, and per-api-key request, byte and connection metrics.

Contracts:
1. Raft gauges are read on the node's event loop at scrape time (the HTTP server runs in its own thread and
   never touches the core directly); a scrape that cannot reach the loop within 2 s omits them.
2. Names: ``kafka_server_raft_metrics_<kafka metric name with '-' as '_'>`` for Kafka's ``raft-metrics``
   group (KafkaRaftMetrics): current_leader, current_epoch, current_vote, high_watermark, log_end_offset,
   log_end_epoch, number_of_voters, number_of_observers, uncommitted_voter_change, commit_latency_avg/max,
   election_latency_avg/max, fetch_records_rate, append_records_rate, poll_idle_ratio_avg; current_state is
   one gauge per Kafka state name (label ``state``) that is 1 for the current state.
3. Request metrics are per api key name (label ``request``, Kafka's RequestMetrics naming): a counter of
   requests and a latency histogram; ApiVersions is answered inside kwire's server and is not counted.
   Socket-server metrics count bytes in and out and open connections of the controller listener.
4. Every registry is per node (two nodes in one process do not mix), plus the process collector.
5. Kafka's controller metrics: kraftd.shell.observe.controller_metrics, kept only while the endpoint serves.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from generated.messages import API_SPECS
from kraftd.config import Endpoint
from kraftd.core.states import Leader, Unattached
from kraftd.core.types import Role
from kraftd.shell.net.transport import ListenError
from kraftd.shell.observe.controller_metrics import (
    ControllerCollector,
    ControllerMetrics,
    ControllerMetricsPort,
)
from kraftd.shell.observe.looplag import LoopLagCollector, LoopLagProbe
from kraftd.shell.observe.loopmetrics import LoopCounters, LoopHistograms
from kraftd.shell.raft.clock import now_ms as node_clock
from kwire.server import KafkaServer


class MetricsPort(ControllerMetricsPort, Protocol):
    """What the metrics read of the node (everything an operator's dashboard shows)."""

    server: KafkaServer
    lag: LoopLagProbe
    metrics: NodeMetrics
    metrics_port: int | None


log = logging.getLogger("kraftd.node")
RAFT = "kafka_server_raft_metrics_"
SOCKET = "kafka_server_socket_server_metrics_"
STATES = ("leader", "candidate", "prospective", "voted", "follower", "unattached", "observer", "resigned")

Handler = Callable[[Any, Any, Any], Awaitable[Any]]


def current_state(node: MetricsPort) -> str:
    """Kafka's QuorumState names: a non-voter following is an observer; an unattached voter that voted is
    'voted'."""
    core = node.core
    if not core.is_voter and core.role in (Role.FOLLOWER, Role.UNATTACHED):
        return "observer"
    if core.role is Role.UNATTACHED and isinstance(core.data, Unattached) and core.election.voted_key:
        return "voted"
    return core.role.value


def raft_values(node: MetricsPort) -> dict[str, float]:
    core, m = node.core, node.observer.measures
    d = core.data
    observers = sum(1 for rid in d.replicas if not core.voters.has_id(rid)) if isinstance(d, Leader) else 0
    vote = core.election.voted_key
    return {
        "current_leader": float(core.leader_id()),
        "current_epoch": float(core.epoch),
        "current_vote": float(vote.id if vote is not None else -1),
        "high_watermark": float(core.high_watermark),
        "log_end_offset": float(core.log.end_offset),
        "log_end_epoch": float(core.log.last_epoch),
        "number_of_voters": float(len(core.voters.voters)),
        "number_of_observers": float(observers),
        # As Kafka's: 1 while the leader has an AddRaftVoter/RemoveRaftVoter in progress (probing or uncommitted).
        "uncommitted_voter_change": float(isinstance(d, Leader) and d.voter_change is not None),
        "commit_latency_avg": m.commit_latency_ms.avg(),
        "commit_latency_max": m.commit_latency_ms.max(),
        "election_latency_avg": m.election_latency_ms.avg(),
        "election_latency_max": m.election_latency_ms.max(),
        "fetch_records_rate": m.fetch_records.rate(),
        "append_records_rate": m.append_records.rate(),
        "poll_idle_ratio_avg": m.poll_idle_ratio(),
    }


class RaftCollector(Collector):
    """Contracts 1-2 (and the socket-server totals, read the same way)."""

    def __init__(self, node: MetricsPort, loop: asyncio.AbstractEventLoop) -> None:
        self.node = node
        self.loop = loop

    async def _read(self) -> tuple[dict[str, float], str, tuple[int, int, int]]:
        s = self.node.server.stats
        return raft_values(self.node), current_state(self.node), (s.bytes_in, s.bytes_out, s.connections_open)

    def collect(self) -> Iterator[Any]:
        try:
            values, state, (b_in, b_out, conns) = asyncio.run_coroutine_threadsafe(
                self._read(), self.loop
            ).result(2)
        except Exception:  # noqa: BLE001 - contract 1: the loop is gone or busy; omit the raft gauges
            return
        for name, value in values.items():
            yield GaugeMetricFamily(RAFT + name, f"Kafka raft-metrics {name.replace('_', '-')}", value=value)
        g = GaugeMetricFamily(
            RAFT + "current_state", "Kafka raft-metrics current-state (1 = current)", labels=["state"]
        )
        for s in STATES:
            g.add_metric([s], 1.0 if s == state else 0.0)
        yield g
        yield CounterMetricFamily(
            SOCKET + "incoming_byte", "Bytes read by the controller listener", value=b_in
        )
        yield CounterMetricFamily(
            SOCKET + "outgoing_byte", "Bytes written by the controller listener", value=b_out
        )
        yield GaugeMetricFamily(
            SOCKET + "connection_count", "Open connections to the controller listener", value=conns
        )


class NodeMetrics:
    """One node's registry, request instrumentation and HTTP endpoint (contracts 3-4)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        # Written on the loop only, without a lock (kraftd.shell.observe.loopmetrics; issue 25).
        self.requests = LoopCounters(
            "kafka_network_request_metrics_requests",
            "Requests received, by api",
            "request",
            self.registry,
        )
        self.latency = LoopHistograms(
            "kafka_network_request_metrics_total_time_seconds",
            "Time from receiving a request to having its response, by api",
            "request",
            self.registry,
            buckets=(0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
        )
        self._http: Any = None
        self._children: dict[str, tuple[Any, Any]] = {}  # api name -> (count, latency) children
        self.controller: ControllerMetrics | None = None

    def event_done(self, created_ms: int, busy_s: float) -> None:
        """The driver processed an event created at ``created_ms`` in ``busy_s`` (contract 5)."""
        if self.controller is not None:
            now = node_clock()
            self.controller.event_done(created_ms, now - int(busy_s * 1000), busy_s)

    def heartbeat_done(self, took_ms: float) -> None:
        if self.controller is not None:
            self.controller.heartbeat_done(took_ms)

    def children(self, name: str) -> tuple[Any, Any]:
        """The request count and latency children of API ``name``, looked up once (for the fast paths)."""
        if (pair := self._children.get(name)) is None:
            pair = self._children[name] = (self.requests.labels(name), self.latency.labels(name))
        return pair

    def instrument(self, handler: Handler) -> Handler:
        per_key: dict[int, tuple[Any, Any]] = {}  # api key -> its (count, latency) children, looked up once

        async def timed(header: Any, body: Any, info: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await handler(header, body, info)
            finally:
                key = header.request_api_key
                if (children := per_key.get(key)) is None:
                    spec = API_SPECS.get(key)
                    name = spec.name if spec is not None else str(key)
                    children = per_key[key] = (self.requests.labels(name), self.latency.labels(name))
                children[0].inc()
                children[1].observe(time.perf_counter() - t0)

        return timed

    def serve(self, node: MetricsPort, host: str, port: int) -> int:
        """Start the HTTP endpoint; returns the bound port (``port`` 0 picks a free one)."""
        loop = asyncio.get_running_loop()
        self.registry.register(RaftCollector(node, loop))
        self.registry.register(LoopLagCollector(node.lag))
        self.controller = ControllerMetrics(node)
        node.client.register(self.controller)
        self.registry.register(ControllerCollector(self.controller, loop))
        server, _thread = start_http_server(port, host, registry=self.registry)
        self._http = server
        bound: int = server.server_address[1]
        return bound

    def close(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None


async def start_listening(node: MetricsPort, bind: Endpoint) -> None:
    """Open the controller listener, then the metrics endpoint when ``metrics.port`` >= 0; a port that cannot
    be bound is a :class:`ListenError` (one line for the operator, no traceback)."""
    try:
        await node.server.start()
    except OSError as exc:
        raise ListenError(f"cannot listen on {bind}: {exc.strerror or exc}") from None
    port = node.config.metrics_port
    if port >= 0:
        try:
            node.metrics_port = node.metrics.serve(node, bind.host or "0.0.0.0", port)
        except OSError as exc:
            raise ListenError(f"metrics.port: cannot listen on port {port}: {exc.strerror or exc}") from None
        log.info("node %d: Prometheus metrics on port %d", node.config.node_id, node.metrics_port)
