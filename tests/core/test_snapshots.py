"""Snapshots (KIP-630 as shipped) in the core: creation at a committed offset, log cleaning, FetchSnapshot
served and fetched in chunks, a follower behind the log start catching up, restart from a snapshot."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from kraftd.core import QuorumConfig, RaftNode, ReplicaKey, VoterSet, snapshotting
from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.batches import split_batches
from kraftd.core.events import RequestReceived, Tick
from kraftd.core.log import OffsetAndEpoch
from kraftd.core.snapshots import read_snapshot
from kraftd.core.snapshotting import SnapshotOffsetError
from kraftd.core.types import Listener
from kraftd.core.voters import control_entries
from kwire.control import ControlRecordType as CT
from kwire.errors import ErrorCode
from tests.core.pump import Pump

KEYS = [ReplicaKey(i, uuid.UUID(int=100 + i)) for i in (1, 2, 3)]
VOTERS = VoterSet(
    tuple(KEYS), tuple((k.id, (Listener("CONTROLLER", "127.0.0.1", 9000 + k.id),)) for k in KEYS)
)


def grown_cluster(
    retention_bytes: int = 0, fetch_max_bytes: int = 300, retention_ms: int = 7 * 24 * 3600 * 1000
) -> tuple[Pump, RaftNode]:
    """Voters 1-3 with 3 down; the leader has 40 committed records and a snapshot at its HWM."""
    cfg = QuorumConfig(
        retention_bytes=retention_bytes, fetch_max_bytes=fetch_max_bytes, retention_ms=retention_ms
    )
    p = Pump(VOTERS, cfg)
    for k in KEYS:
        p.add(k)
    p.down.add(3)
    p.run(20_000, stop=lambda: p.leader() is not None and p.leader().high_watermark > 0)  # type: ignore[union-attr]
    leader = p.leader()
    assert leader is not None
    for i in range(40):
        leader.append([f"record-{i}".encode()])
        p.run(
            p.now + 1000,
            stop=lambda: leader.high_watermark == leader.log.end_offset and not leader.data.pending,
        )  # type: ignore[union-attr]
    return p, leader


def snapshot_values(n: RaftNode) -> list[bytes]:
    """The 'state machine': every data record committed so far."""
    from kwire.records import decode_batch

    out = []
    for b in n.log.batches_between(n.log.start_offset, n.high_watermark):
        if not b.is_control:
            out += [r.value or b"" for r in decode_batch(b.data).records]
    return out


def test_follower_behind_the_log_start_fetches_the_snapshot_in_chunks_and_resumes() -> None:
    p, leader = grown_cluster()
    hwm = leader.high_watermark
    values = snapshot_values(leader)
    snap = leader.create_snapshot(hwm, values)
    out = leader.poll()
    kinds = [type(e) for e in out if isinstance(e, fx.WriteSnapshot | fx.DeleteLogBefore)]
    assert kinds == [fx.WriteSnapshot, fx.DeleteLogBefore]  # durable before the log start moves
    assert leader.log.start_offset == hwm and snap.snapshot_id == OffsetAndEpoch(hwm, leader.epoch)
    parsed = read_snapshot(snap.snapshot_id, snap.data)
    assert parsed.values() == values and parsed.kraft_version == 1 and parsed.voters == VOTERS

    p.down.discard(3)
    p.run(p.now + 20_000, stop=lambda: p.nodes[3].log.end_offset == leader.log.end_offset)
    three = p.nodes[3]
    loaded = [e.snapshot for e in p.effects[3] if isinstance(e, fx.SnapshotLoaded)]
    assert [s.snapshot_id for s in loaded] == [snap.snapshot_id]  # type: ignore[attr-defined]
    installs = [e for e in p.effects[3] if isinstance(e, fx.InstallSnapshot)]
    assert len(installs) == 1 and installs[0].snapshot.data == snap.data
    chunks = [r for s, d, r in p.sent if s == 3 and isinstance(r, m.FetchSnapshotRequest)]
    assert len(chunks) >= len(snap.data) // 300  # max bytes honoured: many chunks
    positions = [m.single_partition(r).position for r in chunks]
    assert positions == sorted(positions) and positions[0] == 0
    assert three.log.start_offset == hwm and three.log.end_offset == leader.log.end_offset
    assert three.voters == VOTERS  # voters came from the snapshot
    # It keeps replicating after the snapshot.
    leader.append([b"after"])
    p.run(p.now + 2000, stop=lambda: three.high_watermark == leader.log.end_offset)
    assert three.high_watermark == leader.log.end_offset


def test_fetch_snapshot_errors() -> None:
    p, leader = grown_cluster()
    snap = leader.create_snapshot(leader.high_watermark, snapshot_values(leader))
    leader.poll()
    sid, size = snap.snapshot_id, len(snap.data)

    def ask(epoch: int, sid: OffsetAndEpoch, pos: int, max_bytes: int = 1 << 20) -> object:
        req = m.fetch_snapshot_request("c", KEYS[1], epoch, sid, pos, max_bytes)
        (resp,) = [
            e.message
            for e in leader.step(RequestReceived(p.now, 999, req))
            if isinstance(e, fx.SendResponse) and e.token == 999
        ]
        return m.single_partition(resp)

    e = leader.epoch
    assert ask(e - 1, sid, 0).error_code == ErrorCode.FENCED_LEADER_EPOCH  # type: ignore[attr-defined]
    assert ask(e + 1, sid, 0).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH  # type: ignore[attr-defined]
    assert ask(e, OffsetAndEpoch(sid.offset - 1, sid.epoch), 0).error_code == ErrorCode.SNAPSHOT_NOT_FOUND  # type: ignore[attr-defined]
    assert ask(e, sid, size).error_code == ErrorCode.POSITION_OUT_OF_RANGE  # type: ignore[attr-defined]
    assert ask(e, sid, -1).error_code == ErrorCode.POSITION_OUT_OF_RANGE  # type: ignore[attr-defined]
    part = ask(e, sid, 10, 7)
    assert part.error_code == 0 and part.size == size and part.position == 10  # type: ignore[attr-defined]
    assert part.unaligned_records == snap.data[10:17]  # type: ignore[attr-defined]
    follower = p.nodes[3 - leader.local.id]  # the other live voter of 1 and 2
    req = m.fetch_snapshot_request("c", KEYS[0], e, sid, 0, 100)
    (resp,) = [
        x.message for x in follower.step(RequestReceived(p.now, 5, req)) if isinstance(x, fx.SendResponse)
    ]
    assert m.single_partition(resp).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER  # only the leader serves


def test_snapshot_only_at_a_committed_boundary_past_the_latest() -> None:
    _, leader = grown_cluster(retention_bytes=-1)
    hwm = leader.high_watermark
    with pytest.raises(SnapshotOffsetError):
        leader.create_snapshot(hwm + 1, [])
    leader.create_snapshot(hwm, [b"x"])
    leader.poll()
    assert leader.log.start_offset == 0  # retention not exceeded: the log is kept
    with pytest.raises(SnapshotOffsetError):
        leader.create_snapshot(hwm, [b"x"])


def test_restart_loads_the_snapshot_then_replays_the_log_after_it() -> None:
    _, leader = grown_cluster(retention_bytes=-1)
    snap = leader.create_snapshot(leader.high_watermark, [b"state"])
    again = RaftNode(
        local=KEYS[0],
        voters=VoterSet.of(9),
        config=QuorumConfig(),
        rng=random.Random(1),
        log=leader.log,
        snapshot=read_snapshot(snap.snapshot_id, snap.data),
        kraft_version=0,
    )
    out = again.poll()
    loaded = [e.snapshot.values() for e in out if isinstance(e, fx.SnapshotLoaded)]
    assert loaded == [[b"state"]]
    assert again.voters == VOTERS  # the snapshot's voters win over the constructor's
    assert again.applied == again.high_watermark == snap.snapshot_id.offset  # replay continues after it
    assert [k for _, k, _ in control_entries(split_batches(snap.data)[0])] == [
        CT.SNAPSHOT_HEADER,
        CT.KRAFT_VERSION,
        CT.KRAFT_VOTERS,
    ]


def step_once(p: Pump, held: dict[int, list[Any]] | None = None) -> None:
    """One event of the pump (run() drains the whole queue before it checks its stop condition); events for
    a node in ``held`` wait there (a slow follower) instead of being delivered."""
    if p._queue:
        nid, ev = p._queue.popleft()
        if held is not None and nid in held:
            held[nid].append((nid, ev))
            return
        p._deliver(nid, ev)
    else:
        live = [t for i, t in p._deadlines.items() if i not in p.down]
        p.now = max(p.now + 1, min(live) if live else p.now + 1)
        for nid in p.nodes:
            if nid not in p.down:
                p._queue.append((nid, Tick(p.now)))


def step_until(
    p: Pump, pred: Callable[[], bool], limit: int = 100_000, held: dict[int, list[Any]] | None = None
) -> None:
    for _ in range(limit):
        if pred():
            return
        step_once(p, held)
    raise AssertionError("condition not reached")


BIG_STATE = [bytes([i]) * 900 for i in range(60)]  # ~54 KB: about 540 chunks of 100 bytes


def test_a_transfer_survives_two_newer_snapshots_on_the_leader() -> None:
    """Kafka's leader serves every retained snapshot (KafkaRaftClient.handleFetchSnapshotRequest reads
    log.readSnapshot(id), not the latest only): a follower copying snapshot 1 in many chunks while the leader
    writes snapshots 2 and 3 completes the copy of snapshot 1 and catches up from its end."""
    p, leader = grown_cluster(retention_bytes=-1, fetch_max_bytes=100, retention_ms=5000)
    # Time-based retention of the state at log start: the log before snapshot 1 is older than 5 s.
    p.run(p.now + 6000)
    first = leader.create_snapshot(leader.high_watermark, BIG_STATE)
    p.effects[leader.local.id].extend(leader.poll())
    assert leader.log.start_offset == first.snapshot_id.offset  # node 3 can only catch up by the snapshot
    p.down.discard(3)
    three = p.nodes[3]
    step_until(p, lambda: len(getattr(getattr(three.data, "snapshot_fetch", None), "received", b"")) > 0)
    newer = []
    for _ in range(2):
        held: dict[int, list[Any]] = {3: []}  # node 3 is slow: the leader commits and snapshots meanwhile
        leader.append([b"newer"])
        committed = lambda: leader.high_watermark == leader.log.end_offset and not leader.data.pending  # type: ignore[union-attr]  # noqa: E731
        step_until(p, committed, held=held)
        newer.append(leader.create_snapshot(leader.high_watermark, BIG_STATE + [b"newer"]))
        p.effects[leader.local.id].extend(leader.poll())
        p._queue.extend(held[3])
        got = len(three.data.snapshot_fetch.received)  # type: ignore[union-attr]
        step_until(p, lambda got=got: len(three.data.snapshot_fetch.received) > got + 500)  # type: ignore[union-attr]
    fetch = three.data.snapshot_fetch  # type: ignore[union-attr]
    assert fetch is not None and fetch.snapshot_id == first.snapshot_id  # still copying the first one
    assert 0 < len(fetch.received) < len(first.data)
    assert set(leader.retained) == {first.snapshot_id, *(s.snapshot_id for s in newer)}
    step_until(
        p,
        lambda: (
            three.log.end_offset == leader.log.end_offset and three.high_watermark == leader.high_watermark
        ),
    )
    installs = [e.snapshot for e in p.effects[3] if isinstance(e, fx.InstallSnapshot)]
    assert [s.snapshot_id for s in installs] == [first.snapshot_id] and installs[0].data == first.data
    answers = [e.message for e in p.effects[leader.local.id] if isinstance(e, fx.SendResponse)]
    errors = [m.single_partition(r).error_code for r in answers if isinstance(r, m.FetchSnapshotResponse)]
    assert len(errors) > 10 and set(errors) == {ErrorCode.NONE}


def test_retention_deletes_the_oldest_snapshots_as_kafka_does() -> None:
    """Kafka's cleanSnapshotsRetentionSize: while the log and the snapshots exceed retention bytes, the oldest
    snapshot goes (the log start moves to the next one); the latest always stays; FetchSnapshot for a deleted
    snapshot is SNAPSHOT_NOT_FOUND."""
    size = len(BIG_STATE) * 900
    p, leader = grown_cluster(retention_bytes=int(size * 2.5), fetch_max_bytes=300)
    ids = []
    for i in range(4):
        leader.append([f"more-{i}".encode()])
        p.run(
            p.now + 1000,
            stop=lambda: leader.high_watermark == leader.log.end_offset and not leader.data.pending,
        )  # type: ignore[union-attr]
        ids.append(leader.create_snapshot(leader.high_watermark, BIG_STATE).snapshot_id)
        out = leader.poll()
        deleted = [e.offset for e in out if isinstance(e, fx.DeleteLogBefore)]
        if i < 2:  # the log and one or two snapshots (~54 KB each): within retention
            assert deleted == []
        elif i == 2:  # three: the state at log start goes, then the oldest snapshot
            assert deleted == [ids[0].offset, ids[1].offset]
        else:
            assert deleted == [ids[2].offset]
    assert sorted(leader.retained, key=lambda s: s.offset) == ids[2:]
    assert leader.log.start_offset == ids[2].offset and leader.log.end_offset > ids[3].offset - 1
    req = m.fetch_snapshot_request("c", KEYS[2], leader.epoch, ids[0], 0, 100)
    (resp,) = [
        e.message
        for e in leader.step(RequestReceived(p.now, 7, req))
        if isinstance(e, fx.SendResponse) and e.token == 7
    ]
    assert m.single_partition(resp).error_code == ErrorCode.SNAPSHOT_NOT_FOUND
    req = m.fetch_snapshot_request("c", KEYS[2], leader.epoch, ids[2], 0, 100)
    (resp,) = [
        e.message
        for e in leader.step(RequestReceived(p.now, 8, req))
        if isinstance(e, fx.SendResponse) and e.token == 8
    ]
    assert m.single_partition(resp).error_code == ErrorCode.NONE


def test_the_bytes_committed_while_a_snapshot_is_encoded_count_toward_the_next() -> None:
    """Invariant 5 (Kafka's SnapshotGenerator resets its counters at scheduleEmit): the record bytes committed
    between plan_snapshot and add_snapshot are not forgotten when the snapshot is added."""
    cfg = QuorumConfig(snapshot_max_record_bytes=200, snapshot_interval_ms=0)
    p = Pump(VOTERS, cfg)
    for k in KEYS:
        p.add(k)
    p.run(20_000, stop=lambda: p.leader() is not None and p.leader().high_watermark > 0)  # type: ignore[union-attr]
    leader = p.leader()
    assert leader is not None

    def commit(value: bytes) -> None:
        leader.append([value])
        p.run(
            p.now + 1000,
            stop=lambda: leader.high_watermark == leader.log.end_offset and not leader.data.pending,
        )  # type: ignore[union-attr]

    while not leader.snapshot_due():
        commit(b"x" * 50)
    plan, values = leader.plan_snapshot(leader.high_watermark), snapshot_values(leader)
    assert not leader.snapshot_due()  # counted from the plan on
    while not leader.snapshot_due():  # committed while the snapshot is encoded
        commit(b"y" * 50)
    leader.add_snapshot(plan.build(values))
    assert leader.snapshot_due()


def _commit(p: Any, leader: Any, value: bytes, held: dict[int, list[Any]] | None = None) -> None:
    leader.append([value])
    committed = lambda: leader.high_watermark == leader.log.end_offset and not leader.data.pending  # noqa: E731
    step_until(p, committed, held=held)


def test_a_newer_snapshot_does_not_delete_the_one_a_replica_is_copying() -> None:
    """Invariant 2a. Retention 0 cleans everything before the latest snapshot at each one (invariant 2); a replica copying
    snapshot 1 keeps it, and the log after it, through snapshot 2: one transfer, no SNAPSHOT_NOT_FOUND. Once it
    reads at the log end, the next snapshot cleans as before."""
    p, leader = grown_cluster(retention_bytes=0, fetch_max_bytes=100)
    first = leader.create_snapshot(leader.high_watermark, BIG_STATE)
    p.effects[leader.local.id].extend(leader.poll())
    assert leader.log.start_offset == first.snapshot_id.offset
    p.down.discard(3)
    three = p.nodes[3]
    step_until(p, lambda: len(getattr(getattr(three.data, "snapshot_fetch", None), "received", b"")) > 0)
    held: dict[int, list[Any]] = {3: []}  # node 3 is slow: the leader commits and snapshots meanwhile
    _commit(p, leader, b"newer", held)
    second = leader.create_snapshot(leader.high_watermark, BIG_STATE + [b"newer"])
    p.effects[leader.local.id].extend(leader.poll())
    assert leader.log.start_offset == first.snapshot_id.offset  # main: the second snapshot's offset
    assert set(leader.retained) == {first.snapshot_id, second.snapshot_id}
    p._queue.extend(held[3])
    step_until(
        p,
        lambda: (
            three.log.end_offset == leader.log.end_offset and three.high_watermark == leader.high_watermark
        ),
    )
    installs = [e.snapshot.snapshot_id for e in p.effects[3] if isinstance(e, fx.InstallSnapshot)]
    assert installs == [first.snapshot_id]
    answers = [e.message for e in p.effects[leader.local.id] if isinstance(e, fx.SendResponse)]
    errors = {m.single_partition(r).error_code for r in answers if isinstance(r, m.FetchSnapshotResponse)}
    assert errors == {ErrorCode.NONE}
    _commit(p, leader, b"third")
    step_until(p, lambda: leader.data.replicas[3].end_offset == leader.log.end_offset)  # type: ignore[union-attr]
    third = leader.create_snapshot(leader.high_watermark, BIG_STATE + [b"third"])
    leader.poll()
    assert leader.log.start_offset == third.snapshot_id.offset and set(leader.retained) == {third.snapshot_id}


def test_a_snapshot_does_not_move_the_log_start_past_a_replica_reading_the_log() -> None:
    """Invariant 2a. A replica reading the log behind the leader's HWM (one batch a Fetch) is not sent to a snapshot taken
    meanwhile: it reads the log to the end; a replica silent for the window holds nothing back."""
    p, leader = grown_cluster(retention_bytes=0, fetch_max_bytes=100)
    p.down.discard(3)
    three = p.nodes[3]
    step_until(p, lambda: 0 < three.log.end_offset < leader.high_watermark // 2)
    held: dict[int, list[Any]] = {3: []}
    snap = leader.create_snapshot(leader.high_watermark, snapshot_values(leader))
    p.effects[leader.local.id].extend(leader.poll())
    assert leader.log.start_offset == 0 and snap.snapshot_id in leader.retained  # main: the snapshot's offset
    p._queue.extend(held[3])
    step_until(p, lambda: three.log.end_offset == leader.log.end_offset)
    assert not [e for e in p.effects[3] if isinstance(e, fx.InstallSnapshot)]
    p.down.add(3)
    _commit(p, leader, b"more")
    p.run(p.now + 6000)  # past the window (2 x (500 + 2000) ms): node 3 is no longer reading
    later = leader.create_snapshot(leader.high_watermark, snapshot_values(leader))
    leader.poll()
    assert leader.log.start_offset == later.snapshot_id.offset


def test_a_replica_fetching_without_progress_holds_nothing_back() -> None:
    """Invariant 2a. A replica that keeps fetching one offset (stuck: its position never moves) holds the log
    back only for the window after its position last moved; then a snapshot cleans as invariant 2 says."""
    p, leader = grown_cluster(retention_bytes=0, fetch_max_bytes=100)
    progress = leader.data.replicas[3]  # type: ignore[union-attr]
    for _ in range(14):  # node 3's Fetches at offset 1, every 500 ms for 7 s (past the 5 s window)
        progress.update(leader.now, 1, leader.log.end_offset)
        p.run(p.now + 500)
    progress.update(leader.now, 1, leader.log.end_offset)
    assert snapshotting.reading_from(leader) is None
    snap = leader.create_snapshot(leader.high_watermark, snapshot_values(leader))
    leader.poll()
    assert leader.log.start_offset == snap.snapshot_id.offset
