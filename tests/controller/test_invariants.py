"""Property tests of the state machine: random broker/topic operations against the pure controller logic.

Invariants checked after every step (the issue's simulator invariants, on the pure layer):
1. no partition has a leader outside its ISR; ISR is a non-empty subset of the replicas;
2. fenced brokers (and brokers in controlled shutdown) lead nothing;
3. partition epochs and leader epochs never decrease;
4. replaying the same committed records, cut into batches anywhere, gives the same image checksum (every node's
   image at offset N is identical, however commits were delivered).
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generated.alter_partition_request import AlterPartitionRequest, BrokerState, PartitionData, TopicData
from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from kraftd.controller import brokers, partition_index, partitions, topics
from kraftd.controller.apply import apply_record
from kraftd.controller.image import MetadataImage
from kraftd.controller.machine import MetadataController
from kraftd.core.log import LogBatch
from kwire.metadata_frame import encode_record
from kwire.records import build_data_batch
from tests.helpers.controller import CLUSTER
from tests.helpers.controller import base_image as _image
from tests.helpers.controller import heartbeat as _hb
from tests.helpers.controller import registration as _reg

OPS = st.lists(
    st.tuples(
        st.sampled_from(["register", "heartbeat", "fence", "shutdown", "create", "shrink", "expand"]),
        st.integers(1, 4),
        st.integers(0, 10**6),
    ),
    min_size=5,
    max_size=40,
)


def _apply(image: MetadataImage, log: list[Any], records: list[Any]) -> None:
    for r in records:
        apply_record(image, image.offset + 1, type(r).API_KEY, type(r).HIGHEST_VERSION, r)
        log.append(r)


def _check(image: MetadataImage, before: dict[tuple[Any, int], tuple[int, int]]) -> None:
    assert partition_index.consistent(image)  # kraftd.controller.partition_index contract 1
    for tid, t in image.topics.items():
        for pid, p in t.partitions.items():
            assert p.isr and set(p.isr) <= set(p.replicas), (p.isr, p.replicas)
            if p.leader != -1:
                assert p.leader in p.isr
                b = image.brokers[p.leader]
                assert not b.fenced and not b.in_controlled_shutdown
            old = before.get((tid, pid))
            if old is not None:
                assert p.partition_epoch >= old[0] and p.leader_epoch >= old[1]
            before[(tid, pid)] = (p.partition_epoch, p.leader_epoch)


def _step(image: MetadataImage, hb: brokers.Heartbeats, op: str, bid: int, seed: int, now: int) -> list[Any]:
    rng = random.Random(seed)
    leaders = sorted(
        {p.leader for t in image.topics.values() for p in t.partitions.values() if p.leader >= 0}
    )
    if op != "register" and leaders and seed % 4:  # mostly act on a broker that leads something
        bid = leaders[seed % len(leaders)]
    b = image.brokers.get(bid)
    if op == "register":
        return brokers.register(image, _reg(bid, inc=seed), CLUSTER, hb, now).records
    if b is None:
        return []
    if op == "heartbeat":
        return brokers.heartbeat(image, _hb(image, bid), hb, now).records
    if op == "fence":
        return [] if b.fenced else brokers.fence(image, bid)
    if op == "shutdown":
        return brokers.heartbeat(image, _hb(image, bid, want_shut_down=True), hb, now).records
    if op == "create":
        req = CreateTopicsRequest(topics=[CreatableTopic(f"t{seed}", 1 + seed % 4, 1 + seed % 3)])
        return topics.create_topics(image, req, rng)[0]
    # shrink / expand: the leader of some partition proposes an ISR
    led = [
        (tid, pid, p) for tid, t in image.topics.items() for pid, p in t.partitions.items() if p.leader == bid
    ]
    if not led:
        return []
    tid, pid, p = led[seed % len(led)]
    isr = [r for r in p.isr if r == bid or rng.random() < 0.5] if op == "shrink" else list(p.replicas)
    data = PartitionData(
        partition_index=pid,
        leader_epoch=p.leader_epoch,
        new_isr_with_epochs=[
            BrokerState(r, image.brokers[r].epoch if r in image.brokers else -1) for r in isr
        ],
        partition_epoch=p.partition_epoch,
    )
    req = AlterPartitionRequest(
        broker_id=bid, broker_epoch=b.epoch, topics=[TopicData(topic_id=tid, partitions=[data])]
    )
    return partitions.alter_partition(image, req, 3)[0]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(ops=OPS, cuts=st.lists(st.integers(1, 7), min_size=1, max_size=50))
def test_random_operations_keep_invariants_and_replay_identically(ops: list[Any], cuts: list[int]) -> None:
    image, hb, log = _image(), brokers.Heartbeats(), []
    bootstrap = image.copy()
    for bid in (1, 2, 3):  # start from three unfenced brokers and an RF 3 topic
        _apply(image, log, _step(image, hb, "register", bid, bid, 0))
        _apply(image, log, _step(image, hb, "heartbeat", bid, 0, 0))
    _apply(
        image,
        log,
        topics.create_topics(
            image, CreateTopicsRequest(topics=[CreatableTopic("base", 3, 3)]), random.Random(0)
        )[0],
    )
    before: dict[tuple[Any, int], tuple[int, int]] = {}
    for now, (op, bid, seed) in enumerate(ops):
        _apply(image, log, _step(image, hb, op, bid, seed, now * 100))
        _check(image, before)
    # Invariant 4: replay the same records as committed batches cut at arbitrary points.
    machine = MetadataController(0, [])
    machine.committed = bootstrap
    offset, i, k = bootstrap.offset + 1, 0, 0
    batches = []
    while i < len(log):
        n = cuts[k % len(cuts)]
        values = [encode_record(r) for r in log[i : i + n]]
        batches.append(
            LogBatch(
                offset,
                offset + len(values) - 1,
                1,
                build_data_batch(values, base_offset=offset, partition_leader_epoch=1, timestamp=0),
            )
        )
        offset, i, k = offset + len(values), i + n, k + 1
    for b in batches:
        machine.replay([b], b.last_offset + 1)
    machine.replay(batches, offset)  # a batch delivered twice changes nothing
    assert machine.committed.checksum() == image.checksum()
