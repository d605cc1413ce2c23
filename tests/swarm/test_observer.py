"""tools.swarm.observer: a swarm broker's observer takes one Fetch answer and keeps nothing of it."""

from __future__ import annotations

import asyncio
import random
import uuid
import weakref
from typing import Any

import pytest

import tools.swarm.broker as broker_mod
from generated.fetch_response import FetchableTopicResponse, FetchResponse, PartitionData
from generated.fetch_snapshot_response import FetchSnapshotResponse, PartitionSnapshot, TopicSnapshot
from generated.topic_record import TopicRecord
from kraftd.core.batches import data_batch
from kraftd.core.log import OffsetAndEpoch
from kwire.errors import ErrorCode, NetworkError, RequestTimeoutError
from kwire.metadata_frame import encode_record
from tools.swarm.broker import SwarmBroker
from tools.swarm.decoding import SharedDecodes
from tools.swarm.lifecycle import STOPPED, SwarmConfig
from tools.swarm.replay import SharedReplay
from tools.swarm.snapshot_fetch import SnapshotTransfer


class Hooks:
    def __init__(self) -> None:
        self.config = SwarmConfig("c", {1: ("127.0.0.1", 1)})
        self.replay = SharedReplay()
        self.decodes = SharedDecodes()
        self.progressed = 0

    def heartbeat(self, broker: SwarmBroker, sent: float, rtt: float, error: int, node: int) -> None:
        pass

    def progress(self, broker: SwarmBroker) -> None:
        self.progressed += 1

    def fenced_while_running(self, broker: SwarmBroker) -> None:
        pass

    def disconnected(self, channel: str, reason: str) -> None:
        pass


class Answer(FetchResponse):
    """A Fetch answer that can be watched with a weak reference."""


def test_a_broker_holds_no_fetch_answer_while_it_waits_for_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """Contract 2: once a Fetch answer is taken (position advanced, records replayed), the broker's next Fetch is
    in flight with no reference to the answer left (before: the observer's loop held the last answer, up to 8 MiB
    of records per broker, across its next long poll: 1,000 brokers x 8 MiB)."""
    hooks = Hooks()
    broker = SwarmBroker(hooks, 100, 19100, random.Random(0))  # type: ignore[arg-type]
    broker.leader_id, broker.leader_epoch = 1, 1
    records = data_batch(0, 1, [encode_record(TopicRecord(name="t", topic_id=uuid.uuid4()), 0)], 0).data
    answers: list[weakref.ref[Answer]] = []
    alive_during_next: list[bool] = []

    async def send(client: Any, request: Any, timeout: float) -> Any:
        if not answers:
            part = PartitionData(partition_index=0, high_watermark=1, records=records)
            answer = Answer(responses=[FetchableTopicResponse(partitions=[part])])
            answers.append(weakref.ref(answer))
            return answer
        alive_during_next.append(answers[0]() is not None)
        broker.state = STOPPED
        raise NetworkError("stop")

    monkeypatch.setattr(broker_mod, "send_request", send)
    monkeypatch.setattr(broker, "_client", lambda channel, node: _Node(node))
    asyncio.run(broker._observe())
    assert broker.fetch_end == 1 and hooks.replay.topic_offset == {"t": 0} and hooks.progressed == 1
    assert alive_during_next == [False]


class ChunkAnswer(FetchSnapshotResponse):
    """A FetchSnapshot answer that can be watched with a weak reference."""


def test_brokers_sent_to_a_snapshot_gather_it_once_and_hold_no_chunk_between_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """tools.swarm.broker contract 3a: three brokers fetch every chunk of one snapshot, but one of them gathers its
    bytes for the shared replay, and no broker holds an answer while it asks for the next chunk (before: each of
    1,000 brokers gathered the 107 MB snapshot of 1M partitions in memory, and held its last 8 MiB chunk)."""
    hooks = Hooks()
    topic = TopicRecord(name="t", topic_id=uuid.uuid4())
    snapshot = data_batch(0, 1, [encode_record(topic, 0)], 0).data
    chunk = len(snapshot) // 3 + 1
    loaded: list[int] = []
    load = hooks.replay.load_snapshot
    monkeypatch.setattr(
        hooks.replay, "load_snapshot", lambda data, end: (loaded.append(len(data)), load(data, end))
    )
    answers: list[weakref.ref[ChunkAnswer]] = []
    alive_at_next: list[bool] = []
    fetched: dict[int, int] = {}

    async def send(client: Any, request: Any, timeout: float) -> Any:
        alive_at_next.extend(a() is not None for a in answers)
        answers.clear()
        await asyncio.sleep(0)  # the three brokers interleave
        broker_id = request.replica_id
        position = request.topics[0].partitions[0].position
        fetched[broker_id] = fetched.get(broker_id, 0) + 1
        part = PartitionSnapshot(size=len(snapshot), position=position)
        part.unaligned_records = snapshot[position : position + chunk]
        answer = ChunkAnswer(topics=[TopicSnapshot(partitions=[part])])
        answers.append(weakref.ref(answer))
        return answer

    brokers = [SwarmBroker(hooks, 100 + i, 19100 + i, random.Random(i)) for i in range(3)]  # type: ignore[arg-type]
    monkeypatch.setattr(broker_mod, "send_request", send)
    for b in brokers:
        b.leader_id, b.leader_epoch = 1, 1
        monkeypatch.setattr(b, "_client", lambda channel, node: None)

    async def fetch_all() -> None:
        for b in brokers:
            b.transfer = SnapshotTransfer(b.id, OffsetAndEpoch(1, 1), hooks.replay)
        await asyncio.gather(*(b._fetch_snapshot(1) for b in brokers))

    asyncio.run(fetch_all())
    assert fetched == {100: 3, 101: 3, 102: 3}  # every broker fetched every chunk
    assert loaded == [len(snapshot)]  # one broker gathered the bytes
    assert hooks.replay.topic_offset == {"t": 0} and hooks.replay.snapshot_taker is None
    assert [b.fetch_end for b in brokers] == [1, 1, 1] and [b.transfer for b in brokers] == [None] * 3
    assert alive_at_next and not any(alive_at_next)


def test_a_fetch_to_the_leader_that_times_out_keeps_the_leader_for_heartbeats(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """tools.swarm.broker contract 3 (KafkaRaftClient.pollFollowerAsObserver): after a Fetch to the leader timed out
    the next Fetch goes to a voter, and the broker still knows the leader, so its heartbeats go on (before: it forgot
    the leader and sent no heartbeat until a Fetch named it again; the leader fenced 579 brokers at 1,000 x 1M)."""
    hooks = Hooks()
    hooks.config = SwarmConfig("c", {1: ("127.0.0.1", 1), 2: ("127.0.0.1", 2), 3: ("127.0.0.1", 3)})
    broker = SwarmBroker(hooks, 100, 19100, random.Random(0))  # type: ignore[arg-type]
    broker.leader_id, broker.leader_epoch = 1, 1
    targets: list[int] = []
    known_after_timeout: list[int] = []
    monkeypatch.setattr(broker, "_client", lambda channel, node: _Node(node))
    voter_in_turn = broker._voter_ids[(broker._next_voter + 1) % 3]

    async def send(client: Any, request: Any, timeout: float) -> Any:
        targets.append(client)
        if len(targets) == 1:
            raise RequestTimeoutError("Fetch got no response")
        known_after_timeout.append(broker.leader_id)
        broker.state = STOPPED
        raise NetworkError("stop")

    monkeypatch.setattr(broker_mod, "send_request", send)
    asyncio.run(broker._observe())
    assert targets == [1, voter_in_turn]
    assert known_after_timeout == [1]  # the heartbeats' controller (controller_send) is still the leader


def _snapshot_run(
    monkeypatch: pytest.MonkeyPatch, voter_after_timeout: int
) -> tuple[list[tuple[str, int, int]], SharedReplay, SwarmBroker, bytes]:
    """A broker behind the log start of leader 1 (voters 1-3): its first Fetch is answered with a snapshot of
    three chunks; the second chunk's first FetchSnapshot times out; the voter in turn after it is
    ``voter_after_timeout``; the broker is stopped at its Fetch from the snapshot's end. Returns the requests
    (kind, node, position or fetch offset)."""
    hooks = Hooks()
    hooks.config = SwarmConfig("c", {1: ("127.0.0.1", 1), 2: ("127.0.0.1", 2), 3: ("127.0.0.1", 3)})
    broker = SwarmBroker(hooks, 100, 19100, random.Random(0))  # type: ignore[arg-type]
    broker.leader_id, broker.leader_epoch = 1, 1
    broker._next_voter = broker._voter_ids.index(voter_after_timeout) - 1
    snapshot = data_batch(0, 1, [encode_record(TopicRecord(name="t", topic_id=uuid.uuid4()), 0)], 0).data
    chunk = len(snapshot) // 3 + 1
    sent: list[tuple[str, int, int]] = []
    monkeypatch.setattr(broker, "_client", lambda channel, node: _Node(node))

    async def send(node: Any, request: Any, timeout: float) -> Any:
        if hasattr(request.topics[0].partitions[0], "position"):  # FetchSnapshot
            position = request.topics[0].partitions[0].position
            sent.append(("snapshot", node, position))
            if position == chunk and ("snapshot", 1, chunk) not in sent[:-1]:
                raise RequestTimeoutError("FetchSnapshot got no response")
            part = PartitionSnapshot(size=len(snapshot), position=position)
            part.unaligned_records = snapshot[position : position + chunk]
            return FetchSnapshotResponse(topics=[TopicSnapshot(partitions=[part])])
        offset = request.topics[0].partitions[0].fetch_offset
        sent.append(("fetch", node, offset))
        if offset >= 1:
            broker.state = STOPPED
            raise NetworkError("stop")
        part = PartitionData(partition_index=0, high_watermark=1)
        part.current_leader.leader_id, part.current_leader.leader_epoch = 1, 1
        if node != 1:  # a voter that is not the leader names it
            return FetchResponse(
                error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                responses=[FetchableTopicResponse(partitions=[part])],
            )
        part.snapshot_id.end_offset, part.snapshot_id.epoch = 1, 1
        return FetchResponse(responses=[FetchableTopicResponse(partitions=[part])])

    monkeypatch.setattr(broker_mod, "send_request", send)
    monkeypatch.setattr(broker_mod.asyncio, "sleep", _no_sleep)
    asyncio.run(broker._observe())
    return sent, hooks.replay, broker, snapshot


async def _no_sleep(seconds: float) -> None:
    return None


def test_a_snapshot_chunk_that_times_out_is_fetched_again_from_its_position(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """tools.swarm.snapshot_fetch contract 3 (KafkaRaftClient 4.3.1: FollowerState.fetchingSnapshot survives a
    timed-out FetchSnapshot; the next request is a Fetch to any voter, and a voter that is not the leader names the
    leader): the transfer resumes at the position reached (before: every timeout started the snapshot again at
    chunk 0, 1,602 times at 1,000 x 1M)."""
    sent, replay, broker, snapshot = _snapshot_run(monkeypatch, voter_after_timeout=2)
    chunk = len(snapshot) // 3 + 1
    assert sent == [
        ("fetch", 1, 0),
        ("snapshot", 1, 0),
        ("snapshot", 1, chunk),  # no answer
        ("fetch", 2, 0),  # a voter in turn: not the leader
        ("snapshot", 1, chunk),  # resumed
        ("snapshot", 1, 2 * chunk),
        ("fetch", 1, 1),  # from the snapshot's end
    ]
    assert replay.topic_offset == {"t": 0} and replay.snapshot_taker is None and broker.transfer is None


def test_a_snapshot_transfer_starts_again_when_the_leader_names_the_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """tools.swarm.snapshot_fetch contract 1: after the timeout the voter in turn is the leader, whose answer names
    the snapshot again: a new transfer from position 0 (Kafka's createNewSnapshotUnchecked), gathered whole."""
    sent, replay, broker, snapshot = _snapshot_run(monkeypatch, voter_after_timeout=1)
    chunk = len(snapshot) // 3 + 1
    assert sent == [
        ("fetch", 1, 0),
        ("snapshot", 1, 0),
        ("snapshot", 1, chunk),  # no answer
        ("fetch", 1, 0),  # the voter in turn is the leader: the snapshot again
        ("snapshot", 1, 0),
        ("snapshot", 1, chunk),
        ("snapshot", 1, 2 * chunk),
        ("fetch", 1, 1),
    ]
    assert replay.topic_offset == {"t": 0} and replay.snapshot_taker is None and broker.transfer is None


class _Node(int):
    """A voter's id standing for its connection (always ready)."""

    def reconnect_wait(self) -> float:
        return 0.0


def test_the_observer_keeps_a_connection_per_voter_and_skips_one_in_backoff(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """tools.swarm.broker contract 3b (Kafka's NetworkClient, one connection per node): after a kill -9 the observer
    turns between the dead leader and the survivors; each turn opened a new connection (ApiVersions first), and a
    Fetch went to the dead leader again at every turn. Now a survivor's connection is kept, and the dead leader is
    not asked while its connection backs off."""
    hooks = Hooks()
    hooks.config = SwarmConfig("c", {1: ("127.0.0.1", 1), 2: ("127.0.0.1", 2), 3: ("127.0.0.1", 3)})
    broker = SwarmBroker(hooks, 100, 19100, random.Random(0))  # type: ignore[arg-type]
    first = broker._client("raft", 2)
    broker._client("raft", 1)
    assert broker._client("raft", 2) is first  # kept, not a new connection
    assert not first._closed  # type: ignore[attr-defined]

    class Dead(_Node):
        def reconnect_wait(self) -> float:
            return 1.0

    broker.leader_id, broker.leader_epoch = 1, 1
    monkeypatch.setattr(broker, "_client", lambda channel, node: Dead(node) if node == 1 else _Node(node))
    targets: list[int] = []

    async def send(client: Any, request: Any, timeout: float) -> Any:
        targets.append(int(client))
        if len(targets) == 3:
            broker.state = STOPPED
        raise NetworkError("not the leader")

    monkeypatch.setattr(broker_mod, "send_request", send)
    monkeypatch.setattr(broker_mod.asyncio, "sleep", _no_sleep)
    asyncio.run(broker._observe())
    assert targets and 1 not in targets  # never handed to the dead leader's connection in its backoff

    async def close() -> None:
        await first.close()

    asyncio.run(close())
