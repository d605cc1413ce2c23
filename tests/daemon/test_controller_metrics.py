"""kraftd.shell.observe.controller_metrics without sockets: the last applied record's timestamp is read from a real v2 batch
header, leader changes are counted as Kafka counts them, heartbeats over Kafka's deadline are counted, and the
event-queue histograms are cumulative with Prometheus' ``le`` buckets."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kraftd.controller.machine import MetadataController
from kraftd.core.log import LogBatch
from kraftd.core.types import LeaderAndEpoch
from kraftd.shell.observe.controller_metrics import HEARTBEAT_DEADLINE_MS, ControllerMetrics, MsHistogram
from kwire.record_codec import Record
from kwire.records import build_batch


def _metrics() -> ControllerMetrics:
    node: Any = SimpleNamespace(controller=SimpleNamespace(machine=MetadataController(1, [])))
    return ControllerMetrics(node)


def test_commit_offsets_and_timestamp_come_from_the_batch() -> None:
    m = _metrics()
    recs = [Record(offset_delta=i, timestamp_delta=i * 7, key=None, value=b"x") for i in range(3)]
    data = build_batch(recs, base_offset=40, base_timestamp=1_700_000_000_000)
    m.handle_commit((LogBatch(40, 42, 3, data),), 43)
    assert m.committed_offset == 42
    assert m.committed_timestamp == 1_700_000_000_014


def test_leader_changes_and_heartbeats() -> None:
    m = _metrics()
    m.handle_leader_change(LeaderAndEpoch(-1, 3))  # no leader: not counted (Kafka: leaderId().isPresent())
    m.handle_leader_change(LeaderAndEpoch(2, 3))
    m.handle_leader_change(LeaderAndEpoch(2, 4))  # the same leader again still counts
    assert m.new_active_controllers == 2
    m.heartbeat_done(HEARTBEAT_DEADLINE_MS - 1)
    m.heartbeat_done(HEARTBEAT_DEADLINE_MS + 1)
    assert m.timed_out_heartbeats == 1


def test_histogram_buckets_are_cumulative() -> None:
    h = MsHistogram()
    for ms in (0.1, 0.5, 3, 3, 20000):
        h.observe(ms)
    fam = h.family("x", "doc")
    buckets = {s.labels["le"]: s.value for s in fam.samples if s.name == "x_bucket"}
    assert buckets["0.5"] == 2 and buckets["5.0"] == 4 and buckets["10000.0"] == 4 and buckets["+Inf"] == 5
    count = next(s.value for s in fam.samples if s.name == "x_count")
    total = next(s.value for s in fam.samples if s.name == "x_sum")
    assert count == 5 and total == 20006.6
