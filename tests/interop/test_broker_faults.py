"""Faults under load: 3 real Kafka 4.3.1 brokers (RF 3, min.insync.replicas 2) on 3 kraftd controllers.

One cluster serves every test of this module (JVM start-up is the cost); each test first waits until the cluster
is whole again (every broker and controller running, every partition's ISR full), so the tests do not depend on
their order. The controllers fence after ``broker.session.timeout.ms`` = 4000 and the brokers heartbeat every
500 ms.

Invariants, each observed on real processes over loopback:
1. kill -9 of a broker under acks=all load: the leaders it held move and it leaves every ISR, no sooner than the
   session timeout allows (kraftd fences it: a BrokerRegistrationChangeRecord fenced=1 for it in the log);
   acks=all producing continues on the two left in sync; restarted, it re-registers and rejoins every ISR.
2. SIGTERM of a broker (controlled shutdown): in the committed metadata log the broker is marked
   InControlledShutdown while it still leads partitions, every one of its leaderships moves, and only then is it
   fenced (the point at which kraftd answers ShouldShutDown); the broker logs that the controller told it to
   exit controlled shutdown.
3. kill -9 of the kraftd leader under load: a new leader is elected, the brokers keep acknowledging, heartbeats
   reach the new leader (it writes no fence record for anyone for more than two session timeouts), and a
   CreateTopics through a broker succeeds on it.
4. In every test every record the producer sent and got acknowledged is read back, once each, in send order per
   partition (and the producer saw no delivery error).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage
from kraftd.testing.broker_load import AckedProducer, check_no_loss, metadata_records, read_back
from kraftd.testing.brokers import broker_node as _broker
from kraftd.testing.brokers import wait_log as _wait_log
from tests.interop.kafka import MixedQuorum, Node, classpath

pytestmark = [pytest.mark.interop, pytest.mark.slow]

SESSION_MS = 4000
HEARTBEAT_MS = 500
BROKERS = (100, 101, 102)


class Cluster:
    def __init__(self, quorum: MixedQuorum, brokers: list[Node]) -> None:
        from confluent_kafka.admin import AdminClient

        self.quorum = quorum
        self.brokers = {b.node_id: b for b in brokers}
        self.bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in brokers)
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})

    def layout(self, topic: str | None = None) -> dict[tuple[str, int], tuple[int, list[int]]]:
        """(topic, partition) -> (leader, sorted ISR) as the brokers report it."""
        meta = self.admin.list_topics(topic, timeout=15)
        return {
            (name, p.id): (p.leader, sorted(p.isrs))
            for name, t in meta.topics.items()
            for p in t.partitions.values()
        }

    def until(self, what: str, pred: Any, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            try:
                if pred():
                    return
            except Exception as exc:  # noqa: BLE001 - a broker mid-restart; retried until the deadline
                last = exc
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {last}"
            time.sleep(0.2)

    def whole(self, timeout: float = 120) -> None:
        """Every controller and broker running, every partition led with its whole replica set in sync."""
        for node in self.quorum.nodes:
            if not node.alive():
                node.start()
        self.quorum.wait_leader()
        for b in self.brokers.values():
            if not b.alive():
                b.start()
        self.until(
            "every ISR full",
            lambda: all(lead in BROKERS and isr == list(BROKERS) for lead, isr in self.layout().values()),
            timeout,
        )

    def create_topic(self, name: str, partitions: int = 3) -> None:
        from confluent_kafka.admin import NewTopic

        topic = NewTopic(name, partitions, 3, config={"min.insync.replicas": "2"})

        def created() -> bool:
            fut = self.admin.create_topics([topic], operation_timeout=20)[name]
            try:
                fut.result(30)
            except Exception as exc:  # an earlier attempt that timed out may have created it
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise
            return True

        self.until(f"topic {name} created", created)
        self.until(
            f"topic {name} fully in sync",
            lambda: (
                len(lay := self.layout(name)) == partitions
                and all(isr == list(BROKERS) for _, isr in lay.values())
            ),
        )

    def metadata(self) -> list[tuple[int, Any]]:
        leader = self.quorum.wait_leader().leader_id
        return metadata_records(self.quorum.node(leader).metadata_dir)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    classpath()
    root: Path = tmp_path_factory.mktemp("faults")
    with MixedQuorum(
        root / "q", ["kraftd"] * 3, extra={"broker.session.timeout.ms": str(SESSION_MS)}
    ) as quorum:
        quorum.start_all()
        quorum.wait_leader()
        extra = {
            "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
            "broker.session.timeout.ms": str(SESSION_MS),
        }
        brokers = [_broker(quorum, quorum.root, bid, rf=3, extra=extra) for bid in BROKERS]
        try:
            for b in brokers:
                b.start()
            for b in brokers:
                _wait_log(b, r"Kafka Server started", 120)
            yield Cluster(quorum, brokers)
        finally:
            for b in brokers:
                b.stop()


def _fence_offsets(records: list[tuple[int, Any]], broker_id: int, after: int = -1) -> list[int]:
    return [
        d.offset
        for _, d in records
        if isinstance(d.record, BrokerRegistrationChangeRecord)
        and d.record.broker_id == broker_id
        and d.record.fenced == 1
        and d.offset > after
    ]


def test_kill_9_of_a_broker_fences_it_moves_leaders_and_it_rejoins(cluster: Cluster) -> None:
    cluster.whole()
    cluster.create_topic("kill9")
    before = cluster.metadata()
    last_before = before[-1][1].offset
    producer = AckedProducer(cluster.bootstrap, "kill9", per_ms=1.0)
    try:
        producer.wait_acked(500, 60)
        led = {tp: lead for tp, (lead, _) in cluster.layout().items()}
        victim = led[("kill9", 0)]
        victim_led = {tp for tp, lead in led.items() if lead == victim}
        killed_at = time.monotonic()
        cluster.brokers[victim].stop(signal.SIGKILL)

        def moved() -> bool:
            lay = cluster.layout()
            return all(lead != victim and victim not in isr and len(isr) == 2 for lead, isr in lay.values())

        cluster.until("the victim's leaderships and ISR memberships moved", moved, 60)
        moved_after = time.monotonic() - killed_at
        # Fencing waits for the session timeout counted from the last heartbeat (at most one interval before
        # the kill): nothing moves earlier. (Replica lag, the leaders' own ISR shrink, is 5000 ms, later still.)
        assert moved_after >= (SESSION_MS - HEARTBEAT_MS - 250) / 1000, moved_after
        assert _fence_offsets(cluster.metadata(), victim, after=last_before), "kraftd wrote no fence record"
        assert all(cluster.layout()[tp][0] != victim for tp in victim_led)
        acked_at_shrink = len(producer.acked)
        producer.wait_acked(acked_at_shrink + 1000, 60)  # acks=all continues with 2 of 3 in sync

        cluster.brokers[victim].start()
        _wait_log(cluster.brokers[victim], r"The broker has been unfenced", 90)
        cluster.until(
            "the victim back in every ISR",
            lambda: all(isr == list(BROKERS) for _, isr in cluster.layout().values()),
            90,
        )
        producer.wait_acked(len(producer.acked) + 500, 60)
    finally:
        producer.stop()
    read = check_no_loss(producer, read_back(cluster.bootstrap, "kill9"))
    assert len(producer.acked) > 2000 and read >= len(producer.acked)


def test_controlled_shutdown_moves_leaders_before_the_broker_stops(cluster: Cluster) -> None:
    cluster.whole()
    cluster.create_topic("graceful")
    producer = AckedProducer(cluster.bootstrap, "graceful", per_ms=1.0)
    try:
        producer.wait_acked(300, 60)
        victim = cluster.layout()[("graceful", 0)][0]
        node = cluster.brokers[victim]
        node.send_signal(signal.SIGTERM)
        assert node.proc is not None
        node.proc.wait(90)
        broker_log = node.log_text()
        assert "Beginning controlled shutdown" in broker_log
        assert "The controller has asked us to exit controlled shutdown" in broker_log
        node.stop()
        producer.wait_acked(len(producer.acked) + 500, 60)  # the two left keep acknowledging

        records = cluster.metadata()
        marks = [
            d.offset
            for _, d in records
            if isinstance(d.record, BrokerRegistrationChangeRecord)
            and d.record.broker_id == victim
            and d.record.in_controlled_shutdown == 1
        ]
        assert marks, "no InControlledShutdown mark for the broker"
        mark = marks[-1]
        fenced = _fence_offsets(records, victim, after=mark)
        assert fenced, "the broker was never fenced after its controlled shutdown"
        image = MetadataImage()

        def leads(upto: int) -> int:
            for _, d in records:
                if image.offset < d.offset < upto:
                    apply_record(image, d.offset, d.api_key, d.version, d.record)
            return sum(p.leader == victim for t in image.topics.values() for p in t.partitions.values())

        assert leads(mark) > 0  # it led partitions when it asked to shut down
        assert leads(fenced[0]) == 0  # and none by the time kraftd told it ShouldShutDown
        assert image.brokers[victim].in_controlled_shutdown

        node.start()
        cluster.until(
            "the broker back in every ISR",
            lambda: all(isr == list(BROKERS) for _, isr in cluster.layout().values()),
            90,
        )
    finally:
        producer.stop()
    check_no_loss(producer, read_back(cluster.bootstrap, "graceful"))


def test_kill_9_of_the_kraftd_leader_under_load(cluster: Cluster) -> None:
    cluster.whole()
    cluster.create_topic("failover")
    producer = AckedProducer(cluster.bootstrap, "failover", per_ms=1.0)
    quorum = cluster.quorum
    try:
        producer.wait_acked(500, 60)
        old = quorum.wait_leader()
        quorum.node(old.leader_id).stop(signal.SIGKILL)
        new = quorum.wait_for(
            "a new leader",
            lambda i: i.leader_id not in (-1, old.leader_id) and i.leader_epoch > old.leader_epoch,
        )
        elected_at = time.monotonic()
        acked_at_kill = len(producer.acked)
        producer.wait_acked(acked_at_kill + 1000, 60)  # the brokers keep serving

        cluster.create_topic("failover-after", 2)  # a metadata write on the new leader
        # Two session timeouts under the new leader: a broker whose heartbeats did not reach it would be fenced.
        while time.monotonic() - elected_at < 2 * SESSION_MS / 1000:
            time.sleep(0.2)
        records = metadata_records(quorum.node(new.leader_id).metadata_dir)
        fenced_by_new = [
            d.record
            for epoch, d in records
            if epoch >= new.leader_epoch
            and isinstance(d.record, BrokerRegistrationChangeRecord)
            and d.record.fenced == 1
        ]
        assert not fenced_by_new, fenced_by_new
        assert all(lead in BROKERS and len(isr) == 3 for lead, isr in cluster.layout().values())
        quorum.node(old.leader_id).start()  # the old leader rejoins as a follower
        producer.wait_acked(len(producer.acked) + 500, 60)
    finally:
        producer.stop()
    check_no_loss(producer, read_back(cluster.bootstrap, "failover"))
