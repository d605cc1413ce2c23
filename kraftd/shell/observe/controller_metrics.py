"""Kafka's controller metrics (QuorumControllerMetrics, ControllerMetadataMetrics) under the names the Prometheus
JMX exporter gives them with Kafka's usual rules (``kafka_<domain>_<type>_<name>``, lower case).

Contracts:
1. Names: ``kafka_controller_kafkacontroller_<name>`` gauges for the KafkaController MBeans in :data:`GAUGES`;
   ``kafka_controller_controllereventmanager_eventqueuetimems`` and ``..._eventqueueprocessingtimems`` are
   histograms in milliseconds (``_bucket``/``_sum``/``_count``; the JMX exporter renders Kafka's Yammer
   histograms as quantile gauges and ``_count``: ``histogram_quantile`` gives the quantiles here);
   ``kafka_controller_controllereventmanager_avgidleratio`` is the share of the last 30 s the queue was idle (the
   raft ``poll_idle_ratio_avg``). Kafka 4.3.1's KafkaController gauges EventQueueOperationsStartedCount,
   EventQueueOperationsTimedOutCount and IgnoredStaticVoters are not exported (kraftd has no deadline-bound
   operation queue; tests/interop/test_controller_metric_names.py compares the names with a Kafka controller's).
2. The metadata counts are those of this node's committed image (every controller reports them, as Kafka's
   ControllerMetadataMetricsPublisher does), kept by kraftd.controller.metrics_counts: a scrape costs O(1), never
   O(partitions).
3. ``newactivecontrollerscount`` grows by one each time this node learns of a leader (Kafka counts every
   LeaderAndEpoch with a leader id, its own election included); ``lastcommittedrecordoffset`` and
   ``lastappliedrecordtimestamp`` are those of the last committed batch (its max timestamp);
   ``lastappliedrecordoffset`` is the last committed offset on a standby and the log end offset - 1 on the active
   controller (which applies its records as it appends them); ``lastappliedrecordlagms`` is now minus that
   timestamp.
4. The event queue is the node's driver inbox (Raft messages, timers, requests for the core): queue time is from
   an event's creation to its step, processing time is the step (and its effects' dispatch).
5. ``timedoutbrokerheartbeatcount`` counts broker heartbeats whose handling (its write included) took longer than
   Kafka's heartbeat deadline, half of ``broker.heartbeat.interval.ms`` at its default (2000 ms).
6. Values are read on the node's loop, like the raft gauges (kraftd.shell.observe.metrics contract 1).
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Iterator
from typing import Any, Protocol

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from kraftd.controller.metrics_counts import MetadataCounts
from kraftd.core.log import LogBatch
from kraftd.core.snapshots import Snapshot
from kraftd.core.types import LeaderAndEpoch
from kraftd.shell.controller.glue import ControllerPort
from kraftd.shell.observe.observer import NodeObserver
from kraftd.shell.raft.clock import now_ms


class ControllerMetricsPort(ControllerPort, Protocol):
    observer: NodeObserver


CONTROLLER = "kafka_controller_kafkacontroller_"
EVENTS = "kafka_controller_controllereventmanager_"
HEARTBEAT_DEADLINE_MS = 1000  # contract 5
BUCKETS_MS = (0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0)
MAX_TIMESTAMP_AT = 35  # v2 batch header: maxTimestamp's byte offset (KIP-98 record batch layout)

GAUGES = {
    "activecontrollercount": "1 on the active controller, else 0",
    "activebrokercount": "registered brokers not fenced",
    "fencedbrokercount": "registered brokers fenced",
    "controlledshutdownbrokercount": "registered brokers in controlled shutdown",
    "globaltopiccount": "topics",
    "globalpartitioncount": "partitions",
    "offlinepartitionscount": "partitions without a leader",
    "preferredreplicaimbalancecount": "partitions whose leader is not their first replica",
    "metadataerrorcount": "records replay ignored (they refer to a partition or broker not in the image)",
    "lastappliedrecordoffset": "offset of the last record applied",
    "lastcommittedrecordoffset": "offset of the last record committed",
    "lastappliedrecordtimestamp": "max timestamp (ms) of the last committed batch",
    "lastappliedrecordlagms": "now minus lastappliedrecordtimestamp (ms)",
    "newactivecontrollerscount": "times this node learned of a new leader",
    "timedoutbrokerheartbeatcount": "broker heartbeats handled after Kafka's heartbeat deadline",
}


class MsHistogram:
    """A histogram (ms) written on the loop without locks; read on the loop at scrape (contract 6)."""

    __slots__ = ("counts", "total", "n")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS_MS) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, ms: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS_MS, ms)] += 1
        self.total += ms
        self.n += 1

    def family(self, name: str, doc: str) -> HistogramMetricFamily:
        cumulative: list[tuple[str, float]] = []
        acc = 0
        for bound, c in zip((*BUCKETS_MS, float("inf")), self.counts, strict=True):
            acc += c
            cumulative.append(("+Inf" if bound == float("inf") else repr(bound), float(acc)))
        return HistogramMetricFamily(name, doc, buckets=cumulative, sum_value=self.total)


class ControllerMetrics:
    """A RaftListener (registered after the controller glue, so it sees batches already applied) holding the
    values behind contract 1's names."""

    def __init__(self, node: ControllerMetricsPort) -> None:
        self.node = node
        self.counts = MetadataCounts()
        machine = node.controller.machine
        machine.apply_committed = self.counts.wrap(machine.apply_committed)
        self.committed_offset = -1
        self.committed_timestamp = 0
        self.new_active_controllers = 0
        self.timed_out_heartbeats = 0
        self.queue_time = MsHistogram()
        self.processing_time = MsHistogram()

    # ---- RaftListener ------------------------------------------------------------------------------------------
    def handle_commit(self, batches: tuple[LogBatch, ...], high_watermark: int) -> None:
        if batches:
            last = batches[-1]
            self.committed_offset = max(self.committed_offset, last.last_offset)
            if len(last.data) >= MAX_TIMESTAMP_AT + 8:
                ts = int.from_bytes(last.data[MAX_TIMESTAMP_AT : MAX_TIMESTAMP_AT + 8], "big", signed=True)
                self.committed_timestamp = max(self.committed_timestamp, ts)

    def handle_load_snapshot(self, snapshot: Snapshot) -> None:
        self.committed_offset = max(self.committed_offset, snapshot.snapshot_id.offset - 1)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        if leader.leader_id >= 0:
            self.new_active_controllers += 1  # contract 3

    # ---- measurements from the shell ---------------------------------------------------------------------------
    def event_done(self, created_ms: int, started_ms: int, busy_s: float) -> None:
        """Contract 4."""
        self.queue_time.observe(max(0, started_ms - created_ms))
        self.processing_time.observe(busy_s * 1000)

    def heartbeat_done(self, took_ms: float) -> None:
        if took_ms > HEARTBEAT_DEADLINE_MS:
            self.timed_out_heartbeats += 1  # contract 5

    # ---- values (contract 6: on the loop) ----------------------------------------------------------------------
    def values(self) -> dict[str, float]:
        machine = self.node.controller.machine
        c = self.counts
        c.sync(machine.committed)
        applied = self.committed_offset
        if machine.active:
            applied = max(applied, self.node.core.log.end_offset - 1)
        return {
            "activecontrollercount": float(machine.active),
            "activebrokercount": float(c.active),
            "fencedbrokercount": float(c.fenced),
            "controlledshutdownbrokercount": float(c.controlled_shutdown),
            "globaltopiccount": float(c.topics),
            "globalpartitioncount": float(c.partitions),
            "offlinepartitionscount": float(c.offline),
            "preferredreplicaimbalancecount": float(c.imbalanced),
            "metadataerrorcount": float(c.metadata_errors),
            "lastappliedrecordoffset": float(applied),
            "lastcommittedrecordoffset": float(self.committed_offset),
            "lastappliedrecordtimestamp": float(self.committed_timestamp),
            "lastappliedrecordlagms": float(now_ms() - self.committed_timestamp),
            "newactivecontrollerscount": float(self.new_active_controllers),
            "timedoutbrokerheartbeatcount": float(self.timed_out_heartbeats),
        }


class ControllerCollector(Collector):
    """Contract 1, read as kraftd.shell.observe.metrics' RaftCollector reads (a scrape that cannot reach the loop within
    2 s omits these)."""

    def __init__(self, metrics: ControllerMetrics, loop: asyncio.AbstractEventLoop) -> None:
        self.metrics = metrics
        self.loop = loop

    async def _read(self) -> list[Any]:
        m = self.metrics
        families: list[Any] = [
            GaugeMetricFamily(CONTROLLER + name, f"Kafka KafkaController {name}: {GAUGES[name]}", value=v)
            for name, v in m.values().items()
        ]
        idle = m.node.observer.measures.poll_idle_ratio()
        families.append(
            GaugeMetricFamily(EVENTS + "avgidleratio", "share of time the event queue was idle", idle)
        )
        families.append(
            m.queue_time.family(EVENTS + "eventqueuetimems", "ms an event waited in the node's event queue")
        )
        families.append(
            m.processing_time.family(
                EVENTS + "eventqueueprocessingtimems", "ms the node took to process an event"
            )
        )
        return families

    def collect(self) -> Iterator[Any]:
        try:
            families = asyncio.run_coroutine_threadsafe(self._read(), self.loop).result(2)
        except Exception:  # noqa: BLE001 - the loop is gone or busy; omit the controller metrics
            return
        yield from families
