"""Client-side bookkeeping for the real-broker fault tests: an acks=all producer that counts every record it sent
and every acknowledgement, a reader that drains topics back, and a read-only view of a metadata log on disk.

Contracts:
1. :class:`AckedProducer` (confluent-kafka, idempotent, acks=all) sends ``<seq>`` values with increasing sequence
   numbers from its own thread until :meth:`AckedProducer.stop`; ``acked`` holds every value whose delivery
   report carried no error, ``failed`` every error report. Nothing is counted twice: a delivery report arrives
   once per record.
2. :func:`read_back` reads every partition of ``topic`` from the beginning up to the high watermark it saw when
   it started (assign, no group) and returns the values per partition in log order.
3. :func:`metadata_records` decodes every complete, CRC-valid batch of a node's metadata log segments without
   opening the log for writing (the node may be running): ``(batch epoch, Decoded)`` in offset order.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, cast

from kraftd.controller.machine import Decoded, decode_batches
from kraftd.core.log import LogBatch
from kraftd.storage.batches import check, peek


class AckedProducer:
    def __init__(self, bootstrap: str, topic: str, *, per_ms: float = 1.0) -> None:
        self.bootstrap, self.topic, self.per_ms = bootstrap, topic, per_ms
        self.sent = 0
        self.acked: list[bytes] = []
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{topic}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "delivery.timeout.ms": 120000,
            }
        )

        def report(err: Any, msg: Any) -> None:
            if err is None:
                self.acked.append(msg.value())
            else:
                self.failed.append(str(err))

        started = time.monotonic()
        while not self._stop.is_set():
            # A steady rate (per_ms records per millisecond of wall time), whatever the broker's pace.
            due = int((time.monotonic() - started) * 1000 * self.per_ms)
            while self.sent < due and not self._stop.is_set():
                try:
                    producer.produce(self.topic, value=b"%d" % self.sent, on_delivery=report)
                except BufferError:
                    break  # the local queue is full (brokers slow): wait for deliveries
                self.sent += 1
            producer.poll(0.01)
        remaining = producer.flush(120)
        if remaining:
            self.failed.append(f"{remaining} record(s) still unacknowledged after the final flush")

    def wait_acked(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acked) < count:
            assert time.monotonic() < deadline, (len(self.acked), count, self.failed[:3])
            assert self._thread.is_alive(), "producer thread died"
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(150)
        assert not self._thread.is_alive(), "producer did not finish its final flush"


def read_back(bootstrap: str, topic: str, timeout: float = 60) -> dict[int, list[bytes]]:
    """Contract 2."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"read-back-{topic}", "enable.auto.commit": False}
    )
    try:
        meta = consumer.list_topics(topic, timeout=15)
        parts = sorted(meta.topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1] for p in parts}
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        got: dict[int, list[bytes]] = defaultdict(list)
        positions = dict.fromkeys(parts, 0)
        deadline = time.monotonic() + timeout
        while any(positions[p] < ends[p] for p in parts):
            assert time.monotonic() < deadline, (positions, ends)
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            part = cast(int, msg.partition())
            got[part].append(cast(bytes, msg.value()))
            positions[part] = cast(int, msg.offset()) + 1
        return dict(got)
    finally:
        consumer.close()


def check_no_loss(producer: AckedProducer, got: dict[int, list[bytes]]) -> int:
    """Every acknowledged value was read back, none twice, and each partition holds its values in send order."""
    assert not producer.failed, producer.failed[:5]
    read = [v for values in got.values() for v in values]
    assert len(read) == len(set(read)), "a record was written twice"
    missing = set(producer.acked) - set(read)
    assert not missing, f"{len(missing)} acknowledged record(s) lost, e.g. {sorted(missing)[:5]}"
    for values in got.values():
        seqs = [int(v) for v in values]
        assert seqs == sorted(seqs), "a partition holds records out of send order"
    return len(read)


def metadata_records(metadata_dir: Path) -> list[tuple[int, Decoded]]:
    """Contract 3."""
    out: list[tuple[int, Decoded]] = []
    for seg in sorted(metadata_dir.glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while (h := peek(data, pos)) is not None and pos + h.size <= len(data):
            if check(data, pos, h) is not None:
                break  # a batch still being written at the tail
            raw = bytes(data[pos : pos + h.size])
            batch = LogBatch(h.base_offset, h.last_offset, h.epoch, raw, h.is_control)
            out.extend((h.epoch, d) for d in decode_batches([batch]))
            pos += h.size
    return out
