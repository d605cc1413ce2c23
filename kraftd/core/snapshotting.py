"""Snapshots in the running quorum (KIP-630 as shipped): the state machine's snapshot at a committed offset,
log cleaning, FetchSnapshot served by the leader and fetched by a follower or observer.

Invariants:
1. A snapshot is taken only at a committed batch boundary above the previous snapshot (its id's epoch is the
   epoch of the record before the end offset); it is durable (WriteSnapshot) before the log start moves.
2. Snapshots are retained as Kafka's KafkaRaftLog retains them (maybeClean, run when a snapshot is taken):
   the oldest retained snapshot (or the state at the log start when no snapshot is there yet, e.g. the
   bootstrap checkpoint) is deleted, by advancing the log start to the next snapshot's end offset, while
   (a) the whole log plus every retained snapshot exceeds ``retention_bytes``, then (b) while the oldest
   one's timestamp is older than ``retention_ms`` (-1 disables either); the latest snapshot is never
   deleted. Deleting one deletes every snapshot before the new log start (DeleteLogBefore); nothing else
   does, except a fetched snapshot, which replaces the whole log and every older snapshot.
2a. A leader's cleaning stops before the log start would pass what a replica is reading (kraftd's own rule;
   Kafka's leader does not look): the offset of a replica's last Fetch, or of the snapshot its last
   FetchSnapshot asked a chunk of, when that came within ``reading_window_ms`` (two of a broker's Fetch
   lifetimes, its long poll plus the request timeout) and is at or past the log start. Kafka cleans on a 60 s
   timer; kraftd cleans at each snapshot, and at 1,000 brokers x 1M partitions every snapshot taken during the
   creation moved the log start past the lagging observers and deleted the snapshot they were copying: each
   observer started up to four transfers of a ~100 MB snapshot, each restarted at 0, 125-170 GB read for
   ~110 MB of log each (docs/SWARM.md, sessions 20-21). A replica silent for the window holds nothing back, nor
   does one whose reading position (its Fetch offset; its snapshot and position in it) has not moved forward
   within the window (a reader stuck at one offset would otherwise keep the log forever), and the rule never
   keeps a snapshot or log the next cleaning after the readers catch up would not delete.
3. Only the leader serves FetchSnapshot, from any retained snapshot (invariant 2; Kafka's readSnapshot), so a
   transfer survives newer snapshots; errors as Kafka answers them: epoch
   checks (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER), SNAPSHOT_NOT_FOUND,
   POSITION_OUT_OF_RANGE; a chunk is at most min(request max bytes, fetch max bytes). A voter's
   FetchSnapshot counts for check-quorum as a Fetch does.
4. A follower fetches a snapshot only when its leader answered a Fetch with a snapshot id past its own log
   start; chunks must arrive in order for the same id; any error abandons the transfer and backs off
   (replication invariant 6). A complete, valid snapshot replaces the whole log (InstallSnapshot) and
   is loaded by the listeners; a leader never installs a snapshot (its log is the truth).
5. The triggers (``snapshot_due``) count from the snapshot's planning, as Kafka's SnapshotGenerator counts from
   ``scheduleEmit``: :func:`plan_snapshot` resets the committed record bytes and the interval's start, and
   :func:`add_snapshot` does not, so the bytes committed while a snapshot is encoded off the loop count toward
   the next (reset at the add, they were lost: a snapshot encoded by a slow child made the next one later by as
   many bytes, issue 24: two snapshots in a 1M-partition creation instead of three). A fetched snapshot resets
   them too (Kafka's publishSnapshot).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kraftd.core import messages as m
from kraftd.core.context import NodeContext
from kraftd.core.effects import DeleteLogBefore, InstallSnapshot, WriteSnapshot
from kraftd.core.log import OffsetAndEpoch
from kraftd.core.snapshots import Snapshot, build_snapshot, read_snapshot, snapshot_of
from kraftd.core.states import Follower, Leader
from kraftd.core.types import VoterSet
from kwire.errors import CorruptRecordError, ErrorCode, LocalProtocolError
from kwire.records import peek_batch


class SnapshotOffsetError(LocalProtocolError):
    """A snapshot asked for at an offset that is not a committed batch boundary past the latest snapshot."""


@dataclass(frozen=True, slots=True)
class SnapshotPlan:
    """What a snapshot at ``sid`` is built with, read from the node (:func:`plan_snapshot`); :meth:`build` is pure,
    so a shell may run it off its event loop (the O(image) encoding) and hand the result to :func:`add_snapshot`."""

    sid: OffsetAndEpoch
    kraft_version: int
    voters: VoterSet
    now_ms: int
    max_batch_bytes: int
    drop_last: bool = False  # the snapshot_missing_record bug flag

    def build(self, values: list[bytes]) -> Snapshot:
        if self.drop_last and values:
            values = values[:-1]
        return build_snapshot(
            self.sid,
            values,
            kraft_version=self.kraft_version,
            voters=self.voters,
            now_ms=self.now_ms,
            max_batch_bytes=self.max_batch_bytes,
        )

    def adopt(self, data: bytes) -> Snapshot:
        """The snapshot :meth:`build` gave, from its bytes (built and written by another process)."""
        return snapshot_of(
            self.sid, data, kraft_version=self.kraft_version, voters=self.voters, now_ms=self.now_ms
        )


def _check_end(node: NodeContext, end_offset: int) -> None:
    latest = node.snapshot.snapshot_id.offset if node.snapshot is not None else 0
    if end_offset > node.high_watermark or end_offset <= latest or not node.log.is_boundary(end_offset):
        raise SnapshotOffsetError(
            f"cannot snapshot at {end_offset}: not a committed batch boundary in ({latest}, {node.high_watermark}]"
        )
    if end_offset < node.log.start_offset:
        raise SnapshotOffsetError(
            f"cannot snapshot at {end_offset}: the log starts at {node.log.start_offset}"
        )


def plan_snapshot(node: NodeContext, end_offset: int) -> SnapshotPlan:
    """Invariant 1's checks, and what a snapshot ending at ``end_offset`` is built with; invariant 5's reset."""
    _check_end(node, end_offset)
    node.bytes_since_snapshot = 0
    node.last_snapshot_ms = node.now
    hist = node.voter_history
    return SnapshotPlan(
        OffsetAndEpoch(end_offset, node.log.epoch_at(end_offset - 1)),
        hist.committed_version(end_offset),
        hist.committed(end_offset),
        node.now,
        node.config.max_batch_size_bytes,
        node.bugs.snapshot_missing_record,
    )


def add_snapshot(node: NodeContext, snap: Snapshot) -> Snapshot:
    """A snapshot built from :func:`plan_snapshot`'s plan becomes the latest (checked again: still past the
    latest snapshot and a committed boundary of this log); WriteSnapshot and log cleaning follow."""
    sid = snap.snapshot_id
    _check_end(node, sid.offset)
    if node.log.epoch_at(sid.offset - 1) != sid.epoch:
        raise SnapshotOffsetError(f"cannot snapshot at {sid}: the log's epoch there is another")
    node.snapshot = snap
    node.retained[sid] = snap
    node.out.append(WriteSnapshot(snap))
    maybe_clean(node)
    return snap


def create_snapshot(node: NodeContext, end_offset: int, values: list[bytes]) -> Snapshot:
    """The state machine's snapshot of everything below ``end_offset`` (invariant 1)."""
    return add_snapshot(node, plan_snapshot(node, end_offset).build(values))


def snapshot_due(node: NodeContext) -> bool:
    """Kafka's snapshot triggers: enough committed record bytes, or committed data and the interval passed."""
    if node.bytes_since_snapshot >= node.config.snapshot_max_record_bytes:
        return True
    interval = node.config.snapshot_interval_ms  # 0 turns the time trigger off, as in Kafka
    return interval > 0 and node.bytes_since_snapshot > 0 and node.now - node.last_snapshot_ms >= interval


def maybe_clean(node: NodeContext) -> None:
    """Invariant 2: Kafka's cleanSnapshotsRetentionSize, then cleanSnapshotsRetentionMs (within 2a)."""
    cfg = node.config
    reading = reading_from(node)
    if cfg.retention_bytes >= 0:
        total = sum(size for _, size, _ in _oldest_first(node))
        log_size = sum(len(b.data) for b in node.log.batches)
        for _, size, _ in _oldest_first(node)[:-1]:
            if log_size + total <= cfg.retention_bytes or not _delete_oldest(node, reading):
                break
            total -= size
            log_size = sum(len(b.data) for b in node.log.batches)
    if cfg.retention_ms >= 0:
        for _, _, ts in _oldest_first(node)[:-1]:
            if node.now - ts <= cfg.retention_ms or not _delete_oldest(node, reading):
                break


def reading_window_ms(node: NodeContext) -> int:
    """Invariant 2a: how recently a replica fetched to count as reading."""
    cfg = node.config
    return 2 * (cfg.fetch_max_wait_ms + cfg.request_timeout_ms)


def reading_from(node: NodeContext) -> int | None:
    """Invariant 2a: the lowest offset at or past the log start that a replica is reading from this leader
    (None on a follower, or when no replica is)."""
    d = node.data
    if not isinstance(d, Leader):
        return None
    since = node.now - reading_window_ms(node)
    start = node.log.start_offset
    low: int | None = None
    for p in d.replicas.values():
        if p.last_snapshot_fetch_ms > p.last_fetch_ms:
            at, when = p.snapshot_offset, p.last_snapshot_fetch_ms
        else:
            at, when = p.end_offset, p.last_fetch_ms
        moving = p.advanced_ms >= since
        if when >= 0 and when >= since and moving and at >= start and (low is None or at < low):
            low = at
    return low


def _oldest_first(node: NodeContext) -> list[tuple[OffsetAndEpoch | None, int, int]]:
    """(id, size, timestamp) of the retained snapshots, oldest first; ``None`` stands for the state at the log
    start when no snapshot is there (size 0, the timestamp of the log's first batch)."""
    out: list[tuple[OffsetAndEpoch | None, int, int]] = [
        (sid, len(s.data), s.timestamp_ms)
        for sid, s in sorted(node.retained.items(), key=lambda kv: kv[0].offset)
    ]
    log = node.log
    if log.batches and (not out or log.start_offset < out[0][0].offset):  # type: ignore[union-attr]
        out.insert(0, (None, 0, peek_batch(log.batches[0].data).max_timestamp))
    return out


def _delete_oldest(node: NodeContext, reading: int | None = None) -> bool:
    """Kafka's deleteBeforeSnapshot(next oldest): advance the log start to the second-oldest snapshot and forget
    every snapshot before it; False when the log cannot move there, or past ``reading`` (invariant 2a), and
    nothing is deleted then."""
    order = _oldest_first(node)
    if len(order) < 2:
        return False
    nxt = order[1][0]
    assert nxt is not None
    log = node.log
    if not (log.start_offset < nxt.offset <= min(log.end_offset, node.high_watermark)):
        return False
    if reading is not None and nxt.offset > reading:
        return False
    log.advance_start(nxt.offset, nxt.epoch)
    node.retained = {k: v for k, v in node.retained.items() if k.offset >= nxt.offset}
    node.out.append(DeleteLogBefore(nxt.offset))
    return True


# ----- leader: FetchSnapshot server -----
def handle_fetch_snapshot_request(node: NodeContext, msg: Any) -> Any:
    build = m.fetch_snapshot_response
    if msg.cluster_id is not None and node.cluster_id is not None and msg.cluster_id != node.cluster_id:
        return build(ErrorCode.INCONSISTENT_CLUSTER_ID, ErrorCode.NONE, -1, -1)
    part = m.single_partition(msg)
    if part is None:
        return build(ErrorCode.INVALID_REQUEST, ErrorCode.NONE, -1, -1)
    epoch = part.current_leader_epoch
    leader = node.leader_id()
    if epoch < node.epoch:
        return build(ErrorCode.NONE, ErrorCode.FENCED_LEADER_EPOCH, leader, node.epoch)
    if epoch > node.epoch:
        return build(ErrorCode.NONE, ErrorCode.UNKNOWN_LEADER_EPOCH, leader, node.epoch)
    d = node.data
    if not isinstance(d, Leader) or node.shutting_down:
        return build(ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER, leader, node.epoch)
    wanted = m.snapshot_id_of(part)
    snap = node.retained.get(wanted)
    if snap is None:
        return build(ErrorCode.NONE, ErrorCode.SNAPSHOT_NOT_FOUND, leader, node.epoch)
    size = len(snap.data)
    if part.position < 0 or part.position >= size:
        return build(ErrorCode.NONE, ErrorCode.POSITION_OUT_OF_RANGE, leader, node.epoch, wanted, size)
    key = m.key_of(msg.replica_id, part.replica_directory_id)
    if node.voters.is_voter(key) and key.id != node.local.id:
        node.note_voter_fetch(d, key.id)
    progress = d.replicas.get(key.id)
    if progress is not None and progress.key == key:  # invariant 2a
        if wanted.offset != progress.snapshot_offset or part.position > progress.snapshot_position:
            progress.advanced_ms = node.now
        progress.snapshot_offset, progress.snapshot_position = wanted.offset, part.position
        progress.last_snapshot_fetch_ms = node.now
    limit = max(1, min(msg.max_bytes, node.config.fetch_max_bytes))
    chunk = snap.data[part.position : part.position + limit]
    return build(ErrorCode.NONE, ErrorCode.NONE, leader, node.epoch, wanted, size, part.position, chunk)


# ----- follower: FetchSnapshot client -----
def send_fetch_snapshot(node: NodeContext, d: Follower) -> None:
    f = d.snapshot_fetch
    if f is None or not node.can_send(d.leader_id):
        return
    req = m.fetch_snapshot_request(
        node.cluster_id, node.local, node.epoch, f.snapshot_id, len(f.received), node.config.fetch_max_bytes
    )
    node.send(d.leader_id, req)


def _abandon(node: NodeContext, d: Follower, source: int) -> None:
    d.snapshot_fetch = None
    node.back_off(source)


def handle_fetch_snapshot_response(node: NodeContext, source: int, resp: Any) -> None:
    d = node.data
    if not isinstance(d, Follower) or d.leader_id != source or d.snapshot_fetch is None:
        return
    if resp.error_code != ErrorCode.NONE:
        _abandon(node, d, source)
        return
    part = m.single_partition(resp)
    if part is None:
        _abandon(node, d, source)
        return
    if part.error_code != ErrorCode.NONE:
        _abandon(node, d, source)
        node.maybe_transition(part.current_leader.leader_id, part.current_leader.leader_epoch)
        return
    f = d.snapshot_fetch
    chunk = bytes(part.unaligned_records or b"")
    ok = m.snapshot_id_of(part) == f.snapshot_id and part.position == len(f.received) and chunk
    if not ok or len(f.received) + len(chunk) > part.size:
        _abandon(node, d, source)
        return
    f.received += chunk
    d.fetch_deadline = node.now + node.config.fetch_timeout_ms
    if len(f.received) < part.size:
        return
    try:
        snap = read_snapshot(f.snapshot_id, bytes(f.received))
    except CorruptRecordError:
        _abandon(node, d, source)
        return
    d.snapshot_fetch = None
    node.out.append(InstallSnapshot(snap))
    node.log.reset(snap.snapshot_id.offset, snap.snapshot_id.epoch)
    node.load_snapshot(snap)
    node.flushed = node.log.end_offset
    node.bytes_since_snapshot = 0
    node.last_snapshot_ms = node.now
