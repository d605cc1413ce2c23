"""Helpers shared by the Spark pipeline tests: Kafka metadata record frames, bounded waits, the streaming sink's
offset, the report page's three-controller log set."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from generated.broker_registration_change_record import BrokerRegistrationChangeRecord as Change
from generated.kraft_version_record import KRaftVersionRecord
from generated.leader_change_message import LeaderChangeMessage, Voter
from generated.no_op_record import NoOpRecord
from generated.partition_record import PartitionRecord
from generated.register_broker_record import RegisterBrokerRecord
from generated.remove_topic_record import RemoveTopicRecord
from generated.topic_record import TopicRecord
from kraftd.storage.log import MetadataLog
from kwire.control import ControlRecordType, control_key
from kwire.records import Record, build_batch, build_data_batch


def frame(api_key: int, version: int, body: bytes) -> bytes:
    # Kafka's metadata record frame: unsigned varints frame version 1, api key, version, then the body.
    return bytes([1, api_key, version]) + body


NO_OP = frame(20, 0, b"\x00")


def wait_until(what: str, predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def max_offset(spark: Any, out: Path) -> int:
    """The highest offset the streaming sink committed under ``out`` (-1 before the first batch)."""
    if not (out / "_spark_metadata").exists():
        return -1
    try:  # the sink's metadata log names the committed files only
        row = spark.read.parquet(str(out)).agg({"offset": "max"}).collect()[0]
    except Exception:  # noqa: BLE001 - no batch committed yet
        return -1
    return -1 if row[0] is None else int(row[0])


# ---- first written for tests/spark/test_report_page.py -----------------------------------------------------
T0 = 1_795_000_000_000  # 2026-11-18T...Z
ORDERS, PAYMENTS = uuid.UUID(int=11), uuid.UUID(int=12)


class Log:
    """A replicated log written in timestamp order: LeaderChange control batches and metadata record batches."""

    def __init__(self) -> None:
        self.events: list[tuple[int, int, list[int] | None, list[Any]]] = []  # (ts, leader, voters, records)

    def leader(self, ts: int, leader: int, voters: list[int]) -> None:
        self.events.append((ts, leader, voters, []))

    def write(self, ts: int, *records: Any) -> None:
        self.events.append((ts, -1, None, list(records)))

    def noops(self, start: int, stop: int, every: int = 500) -> None:
        for ts in range(start, stop, every):
            self.write(ts, NoOpRecord())

    def batches(self, epochs: dict[int, int]) -> list[tuple[int, bytes]]:
        """``epochs``: LeaderChange timestamp → epoch."""
        out, offset, epoch = [], 0, 0
        for ts, leader, voters, records in sorted(self.events, key=lambda e: e[0]):
            if voters is not None:
                epoch = epochs[ts]
                lc = LeaderChangeMessage(0, leader, [Voter(v) for v in voters], [Voter(v) for v in voters])
                rec = Record(0, 0, control_key(ControlRecordType.LEADER_CHANGE), lc.encode(0))
                batch = build_batch(
                    [rec],
                    base_offset=offset,
                    partition_leader_epoch=epoch,
                    base_timestamp=ts,
                    is_control=True,
                )
                offset += 1
            else:
                version = {RegisterBrokerRecord: 2, Change: 1}.get(type(records[0]), 0)
                values = [bytes([1, r.API_KEY, version]) + r.encode(version) for r in records]
                batch = build_data_batch(
                    values, base_offset=offset, partition_leader_epoch=epoch, timestamp=ts
                )
                offset += len(values)
            out.append((ts, batch))
        return out


def save(root: Path, node: int, batches: list[tuple[int, bytes]]) -> None:
    part = root / f"n{node}" / "__cluster_metadata-0"
    part.mkdir(parents=True)
    (root / f"n{node}" / "meta.properties").write_text(f"version=1\nnode.id={node}\ncluster.id=c\n")
    log = MetadataLog(part, 1 << 20, fsync=False)
    for _, b in batches:
        log.append(b)
    log.flush()
    log.close()


def report_topic(log: Log, ts: int, name: str, tid: uuid.UUID, partitions: int) -> None:
    parts = [
        PartitionRecord(partition_id=p, topic_id=tid, replicas=[4], isr=[4], leader=4)
        for p in range(partitions)
    ]
    log.write(ts, TopicRecord(name, tid), *parts)


def three_controllers(root: Path) -> Path:
    """Controllers 1-3, brokers 4-6. Leader 1 (epoch 1) stops writing at +10 s; epoch 2's election fails; 2 leads
    epoch 3 from +12.2 s (first write +12.3 s). Broker 5 is fenced +14 s..+20 s; broker 6 shuts down (controlled)
    at +22 s, is fenced at +23 s, registers again at +30 s and is unfenced at +31 s; payments is removed at +25 s.
    Leader 2 stops at +34 s; 3 leads epoch 4 from +35 s. Node 1's log ends at +10 s, node 3's two batches short."""
    log = Log()
    log.leader(T0, 1, [1, 2, 3])
    for b in (4, 5, 6):
        log.write(T0 + 1000 + b, RegisterBrokerRecord(broker_id=b, broker_epoch=10 + b, fenced=True))
        log.write(T0 + 1500 + b, Change(broker_id=b, broker_epoch=10 + b, fenced=-1))
    report_topic(log, T0 + 3000, "orders", ORDERS, 6)
    report_topic(log, T0 + 3100, "payments", PAYMENTS, 3)
    log.noops(T0 + 500, T0 + 10_001)
    log.leader(T0 + 12_200, 2, [1, 2, 3])
    log.noops(T0 + 12_300, T0 + 34_001)
    log.write(T0 + 14_000, Change(broker_id=5, broker_epoch=15, fenced=1))
    log.write(T0 + 20_000, Change(broker_id=5, broker_epoch=15, fenced=-1))
    log.write(T0 + 22_000, Change(broker_id=6, broker_epoch=16, in_controlled_shutdown=1))
    log.write(T0 + 23_000, Change(broker_id=6, broker_epoch=16, fenced=1))
    log.write(T0 + 25_000, RemoveTopicRecord(PAYMENTS))
    log.write(T0 + 30_000, RegisterBrokerRecord(broker_id=6, broker_epoch=40, fenced=True))
    log.write(T0 + 31_000, Change(broker_id=6, broker_epoch=40, fenced=-1))
    log.leader(T0 + 35_000, 3, [1, 2, 3])
    log.noops(T0 + 35_200, T0 + 45_001)
    batches = log.batches({T0: 1, T0 + 12_200: 3, T0 + 35_000: 4})
    save(root, 1, [b for b in batches if b[0] <= T0 + 10_000])
    save(root, 2, batches)
    save(root, 3, batches[:-2])
    return root


META = "__cluster_metadata-0"


FEATURE_LEVEL = frame(12, 0, bytes([len("metadata.version") + 1]) + b"metadata.version" + b"\x00\x1e\x00")


def make_kraftd_log(root: Path, *, segment_bytes: int = 1 << 20) -> Path:
    part = root / "node" / META
    part.mkdir(parents=True)
    (root / "node" / "meta.properties").write_text("version=1\nnode.id=7\ncluster.id=abc\n")
    log = MetadataLog(part, segment_bytes, fsync=False)
    lc = LeaderChangeMessage(version=0, leader_id=7, voters=[Voter(7), Voter(8)], granting_voters=[Voter(7)])
    recs = [
        Record(0, 0, control_key(ControlRecordType.LEADER_CHANGE), lc.encode(0)),
        Record(1, 0, control_key(ControlRecordType.KRAFT_VERSION), KRaftVersionRecord(0, 1).encode(0)),
    ]
    log.append(
        build_batch(recs, base_offset=0, partition_leader_epoch=1, base_timestamp=1000, is_control=True)
    )
    offset = 2
    for i in range(40):
        values = [FEATURE_LEVEL] if i == 0 else [NO_OP] * (1 + i % 3)
        log.append(
            build_data_batch(
                values, base_offset=offset, partition_leader_epoch=1 + i // 20, timestamp=2000 + i
            )
        )
        offset += len(values)
    log.flush()
    log.close()
    return root
