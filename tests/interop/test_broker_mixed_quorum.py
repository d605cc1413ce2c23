"""A real Kafka 4.3.1 broker served by a mixed controller quorum: one Kafka controller and two kraftd nodes.

Both kinds lead in turn (kill -9 of the leader until the wanted kind wins; the killed node restarts as a
follower) while one producer sends acks=all records the whole time. ``broker.session.timeout.ms`` is 4000 on every
controller, and the broker heartbeats every 500 ms.

Invariants, each observed on real processes over loopback:
1. Under each kind of leader the broker (re)registers: its RegisterBrokerRecord sits in a batch of an epoch that
   kind led (the broker starts under a kraftd leader, restarts with SIGTERM under the Kafka leader, and again
   under a kraftd leader; each restart is a controlled shutdown through the leader of that moment).
2. Under each kind of leader its heartbeats are accepted: no leader fences it over more than two session
   timeouts (no BrokerRegistrationChangeRecord fenced=1 in that epoch before its restart), and a CreateTopics
   through the broker commits.
3. The producer is never told a record failed, and every acknowledged record is read back once, in send order
   per partition: the broker noticed nothing but leader changes.
4. The Kafka controller logs no protocol complaint about anything kraftd or the broker sent.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from generated.register_broker_record import RegisterBrokerRecord
from kraftd.testing.broker_load import AckedProducer, check_no_loss, metadata_records, read_back
from kraftd.testing.brokers import BROKER_ID
from kraftd.testing.brokers import broker_node as _broker
from kraftd.testing.brokers import wait_log as _wait_log
from tests.helpers.interop import lead_with
from tests.interop.kafka import MixedQuorum, Node, classpath, protocol_complaints

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(600)]

SESSION_MS = 4000
HEARTBEAT_MS = 500


def _records(q: MixedQuorum) -> list[tuple[int, Any]]:
    """The metadata log as the first live kraftd node holds it (every voter holds the same committed prefix)."""
    node = next(n for n in q.nodes if n.kind == "kraftd" and n.alive())
    return metadata_records(node.metadata_dir)


def _until(what: str, pred: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 60
    while True:
        try:
            admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=20)[name].result(30)
            break
        except Exception as exc:  # an attempt that timed out across a leader change may have created it
            if "TOPIC_ALREADY_EXISTS" in str(exc):
                break
            assert time.monotonic() < deadline, exc
            time.sleep(0.5)
    _until(f"{name} led", lambda: all(p.leader == BROKER_ID for p in _partitions(admin, name)))


def _partitions(admin: Any, topic: str) -> list[Any]:
    meta = admin.list_topics(topic, timeout=15)
    t = meta.topics.get(topic)
    return list(t.partitions.values()) if t is not None and t.error is None else []


def _registered_in(q: MixedQuorum, epoch: int, count_before: int) -> None:
    """A new RegisterBrokerRecord for the broker appears in a batch of ``epoch``."""

    def found() -> bool:
        regs = [
            e
            for e, d in _records(q)
            if isinstance(d.record, RegisterBrokerRecord) and d.record.broker_id == BROKER_ID
        ]
        return len(regs) > count_before and regs[-1] == epoch

    _until(f"the broker's registration in epoch {epoch}", found)


def _registrations(q: MixedQuorum) -> int:
    return sum(
        1
        for _, d in _records(q)
        if isinstance(d.record, RegisterBrokerRecord) and d.record.broker_id == BROKER_ID
    )


def _heartbeats_accepted(q: MixedQuorum, epoch: int, producer: AckedProducer) -> None:
    """Two session timeouts in ``epoch`` without the broker being fenced, while acks keep coming."""
    start = time.monotonic()
    acked = len(producer.acked)
    while time.monotonic() - start < 2 * SESSION_MS / 1000:
        assert q.wait_leader().leader_epoch == epoch, "the leader changed while heartbeats were being checked"
        time.sleep(0.5)
    fenced = [
        d.record
        for e, d in _records(q)
        if e == epoch
        and isinstance(d.record, BrokerRegistrationChangeRecord)
        and d.record.broker_id == BROKER_ID
        and d.record.fenced == 1
    ]
    assert not fenced, fenced
    producer.wait_acked(acked + 500, 60)


def _restart(broker: Node) -> None:
    """SIGTERM (a controlled shutdown through the current leader), then start again."""
    broker.send_signal(signal.SIGTERM)
    assert broker.proc is not None
    broker.proc.wait(90)
    assert "The controller has asked us to exit controlled shutdown" in broker.log_text()
    broker.stop()
    broker.start()


def test_broker_on_a_mixed_quorum_led_by_each_kind_in_turn(tmp_path: Path) -> None:
    classpath()
    with MixedQuorum(
        tmp_path / "q",
        ["kafka", "kraftd", "kraftd"],
        extra={"broker.session.timeout.ms": str(SESSION_MS)},
    ) as q:
        q.start_all()
        lead_with(q, "kraftd")
        kraftd_epoch = q.wait_leader().leader_epoch
        extra = {
            "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
            "broker.session.timeout.ms": str(SESSION_MS),
        }
        broker = _broker(q, q.root, extra=extra)
        try:
            broker.start()
            _wait_log(broker, r"Kafka Server started", 120)
            _registered_in(q, kraftd_epoch, 0)
            bootstrap = f"127.0.0.1:{broker.port}"
            _create_topic(bootstrap, "mixed", 3)
            producer = AckedProducer(bootstrap, "mixed", per_ms=1.0)
            try:
                producer.wait_acked(500, 60)
                _heartbeats_accepted(q, kraftd_epoch, producer)

                # The Kafka controller leads: heartbeats, a metadata write, a registration (after a restart).
                lead_with(q, "kafka")
                kafka_epoch = q.wait_leader().leader_epoch
                _heartbeats_accepted(q, kafka_epoch, producer)
                _create_topic(bootstrap, "under-kafka", 2)
                before = _registrations(q)
                _restart(broker)
                _registered_in(q, kafka_epoch, before)
                _wait_log(broker, r"(?s)==== start.*==== start.*Kafka Server started", 120)
                producer.wait_acked(len(producer.acked) + 500, 90)

                # kraftd leads again: the same for the registration the Kafka controller wrote.
                lead_with(q, "kraftd")
                kraftd_epoch = q.wait_leader().leader_epoch
                _heartbeats_accepted(q, kraftd_epoch, producer)
                _create_topic(bootstrap, "under-kraftd", 2)
                before = _registrations(q)
                _restart(broker)
                _registered_in(q, kraftd_epoch, before)
                producer.wait_acked(len(producer.acked) + 500, 90)
            finally:
                producer.stop()
            read = check_no_loss(producer, read_back(bootstrap, "mixed"))
            assert read >= len(producer.acked) > 3000
        finally:
            broker.stop()
        kafka_node = next(n for n in q.nodes if n.kind == "kafka")
        complaints = protocol_complaints(kafka_node.log_text())
        assert not complaints, "\n".join(complaints[:5])
