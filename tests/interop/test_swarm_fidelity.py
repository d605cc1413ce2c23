"""Fidelity of the broker swarm (issue 24 §1): a real Kafka 4.3.1 broker beside 50 kraft-swarm brokers, on three
kraftd controllers and on three of Kafka's.

Invariants, on each controller kind:
1. The real broker registers, is unfenced and starts beside the swarm; both kinds of broker are in the
   controllers' image (DescribeCluster through the real broker lists all 51).
2. CreateTopics through the real broker places replicas on both kinds of broker: the real broker holds replicas
   and leads partitions of the new topic, as many as an even spread gives it (within the same bounds as the
   swarm brokers).
3. The real broker serves the partitions it leads: with its swarm followers never fetching, it shrinks their ISR
   with AlterPartition (accepted by the controllers, seen by the swarm's replay) and then every record produced
   with acks=1 is read back.
4. The controllers log no WARN or ERROR line about any request: none names a protocol or parse failure or a
   swarm broker, and every one is a start-up connection race between controllers, the first activation on an empty
   log, or about the harness's own DescribeQuorum probe.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from generated.describe_cluster_request import DescribeClusterRequest
from kraftd.testing.brokers import broker_node, wait_log
from kraftd.testing.swarm import SwarmCluster
from kwire.client import request_once
from tests.interop.kafka import Node, classpath, protocol_complaints

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(420)]

SWARM, REAL_ID, TOPIC, PARTITIONS, RF, RECORDS = 50, 1000, "fidelity", 153, 3, 200
WARN = re.compile(r"^\[[^]]+\] (WARN|ERROR) .*$", re.M)
# Start-up races between controllers, and the harness's own DescribeQuorum probe (not a swarm request).
BENIGN = re.compile(
    r"Connection to node -?\d+ \(/127\.0\.0\.1:\d+\) could not be established"
    r"|clientId=kraft-metadata-quorum"
    r"|Performing controller activation\. The metadata log appears to be empty"
)


def wait(what: str, predicate: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.1)


def real_broker(c: SwarmCluster, root: Path) -> Node:
    """A formatted, started real Kafka broker of the swarm's cluster (bootstrapping through the three voters)."""
    extra = {"offsets.topic.num.partitions": "1", "replica.lag.time.max.ms": "3000"}
    node = broker_node(c.q, root, REAL_ID, extra=extra, bootstrap=True)
    node.start()
    wait_log(node, r"Kafka Server started", 120)
    return node


@pytest.fixture(scope="module", params=["kraftd", "kafka"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[SwarmCluster, Node]]:
    classpath()
    root: Path = tmp_path_factory.mktemp(f"fidelity-{request.param}")
    c = SwarmCluster(root, request.param, SWARM)
    broker: Node | None = None
    try:
        c.run(c.swarm.wait_running(120), 130)
        broker = real_broker(c, root)
        yield c, broker
        assert not c.swarm.mistaken_fences(), c.swarm.mistaken_fences()
    finally:
        if broker is not None:
            broker.stop()
        c.close()


def test_both_kinds_of_broker_are_registered(cluster: tuple[SwarmCluster, Node]) -> None:
    c, broker = cluster
    answer = asyncio.run(request_once("127.0.0.1", broker.port, DescribeClusterRequest()))
    assert answer.error_code == 0, answer
    assert sorted(b.broker_id for b in answer.brokers) == sorted([*c.swarm.brokers, REAL_ID])
    image = c.swarm.replay.image
    assert REAL_ID in image.brokers and not image.brokers[REAL_ID].fenced


def test_placement_spans_both_kinds_and_the_real_broker_serves_what_it_leads(
    cluster: tuple[SwarmCluster, Node],
) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    c, broker = cluster
    bootstrap = f"127.0.0.1:{broker.port}"
    # Through the real broker (forwarded to the controllers); kafka-python's admin would pick the "controller"
    # a KRaft broker names at random, often a swarm broker that serves no clients.
    request = CreateTopicsRequest(
        topics=[CreatableTopic(name=TOPIC, num_partitions=PARTITIONS, replication_factor=RF)]
    )
    created = asyncio.run(request_once("127.0.0.1", broker.port, request, timeout=30))
    assert [t.error_code for t in created.topics] == [0], created
    replay = c.swarm.replay
    wait(
        "the new topic in the swarm's replay",
        lambda: sum(1 for t, _, _ in replay.partitions() if t == TOPIC) == PARTITIONS,
        30,
    )
    parts = {i: p for t, i, p in replay.partitions() if t == TOPIC}
    replicas: Counter[int] = Counter(b for p in parts.values() for b in p.replicas)
    leaders: Counter[int] = Counter(p.leader for p in parts.values())
    mean = PARTITIONS * RF / (SWARM + 1)
    print(
        f"{c.kind}: real broker holds {replicas[REAL_ID]} replicas, leads {leaders[REAL_ID]} (mean {mean:.1f})"
    )
    assert len(replicas) == SWARM + 1, "replicas on every broker, real and emulated"
    assert 0.6 * mean <= replicas[REAL_ID] <= 1.4 * mean, replicas[REAL_ID]
    led = sorted(i for i, p in parts.items() if p.leader == REAL_ID)
    assert led, "the real broker leads none of the new partitions"
    followers = {i: [b for b in parts[i].isr if b != REAL_ID] for i in led}

    # 3. Swarm followers never fetch: the real broker shrinks each ISR to itself (AlterPartition) ...
    def shrunk() -> bool:
        now = {i: p for t, i, p in replay.partitions() if t == TOPIC}
        return all(list(now[i].isr) == [REAL_ID] for i in led)

    wait("the real broker's AlterPartition to shrink its ISRs", shrunk, 60)
    assert all(followers.values()), followers
    # ... and serves every record produced to the partitions it leads.
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=5)
    for n in range(RECORDS):
        producer.send(TOPIC, value=b"%d" % n, partition=led[n % len(led)]).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    consumer.assign([TopicPartition(TOPIC, i) for i in led])
    # Polled until all arrive or 60 s pass: the client's metadata refreshes also try swarm brokers, which serve
    # no clients, and each refused connection costs it a retry.
    got: list[int] = []
    deadline = time.monotonic() + 60
    while len(got) < RECORDS and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=1000).values():
            got.extend(int(r.value) for r in batch)
    consumer.close()
    got.sort()
    assert got == list(range(RECORDS))


def test_the_controllers_log_no_warning_about_a_swarm_request(cluster: tuple[SwarmCluster, Node]) -> None:
    c, _ = cluster
    swarm_ids = re.compile(
        r"\b(?:broker|node|replica)[ =:]*(?:" + "|".join(map(str, c.swarm.brokers)) + r")\b", re.I
    )
    for node in c.q.nodes:
        text = node.log_text()
        assert not protocol_complaints(text), protocol_complaints(text)[:5]
        warned = [m.group(0) for m in WARN.finditer(text)]
        named = [line for line in warned if swarm_ids.search(line) or not BENIGN.search(line)]
        print(f"{c.kind} controller {node.node_id}: {len(warned)} WARN/ERROR lines", *warned[:5], sep="\n  ")
        assert not named, named[:5]
