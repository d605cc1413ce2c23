"""Snapshots in the running quorum (KIP-630 as shipped): the state machine's snapshot at a committed offset,
log cleaning, FetchSnapshot served by the leader and fetched by a follower or observer.

Invariants:
1. A snapshot is taken only at a committed batch boundary above the previous snapshot (its id's epoch is the
   epoch of the record before the end offset); it is durable (WriteSnapshot) before the log start moves.
2. The log start advances only to the latest snapshot's end offset, and only when the log below it exceeds
   ``retention_bytes`` or its oldest batch is older than ``retention_ms`` (Kafka's metadata retention).
3. Only the leader serves FetchSnapshot, from its latest snapshot; errors as Kafka answers them: epoch
   checks (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER), SNAPSHOT_NOT_FOUND,
   POSITION_OUT_OF_RANGE; a chunk is at most min(request max bytes, fetch max bytes). A voter's
   FetchSnapshot counts for check-quorum as a Fetch does.
4. A follower fetches a snapshot only when its leader answered a Fetch with a snapshot id past its own log
   start; chunks must arrive in order for the same id; any error abandons the transfer and backs off
   (replication invariant 6). A complete, valid snapshot replaces the whole log (InstallSnapshot) and
   is loaded by the listeners; a leader never installs a snapshot (its log is the truth).
"""

from __future__ import annotations

from typing import Any

from kraftd.core import messages as m
from kraftd.core.context import NodeContext
from kraftd.core.effects import DeleteLogBefore, InstallSnapshot, WriteSnapshot
from kraftd.core.log import OffsetAndEpoch
from kraftd.core.snapshots import Snapshot, build_snapshot, read_snapshot
from kraftd.core.states import Follower, Leader
from kwire.errors import CorruptRecordError, ErrorCode, LocalProtocolError
from kwire.records import peek_batch


class SnapshotOffsetError(LocalProtocolError):
    """A snapshot asked for at an offset that is not a committed batch boundary past the latest snapshot."""


def create_snapshot(node: NodeContext, end_offset: int, values: list[bytes]) -> Snapshot:
    """The state machine's snapshot of everything below ``end_offset`` (invariant 1)."""
    latest = node.snapshot.snapshot_id.offset if node.snapshot is not None else 0
    if end_offset > node.high_watermark or end_offset <= latest or not node.log.is_boundary(end_offset):
        raise SnapshotOffsetError(
            f"cannot snapshot at {end_offset}: not a committed batch boundary in ({latest}, {node.high_watermark}]"
        )
    if end_offset < node.log.start_offset:
        raise SnapshotOffsetError(
            f"cannot snapshot at {end_offset}: the log starts at {node.log.start_offset}"
        )
    sid = OffsetAndEpoch(end_offset, node.log.epoch_at(end_offset - 1))
    if node.bugs.snapshot_missing_record and values:
        values = values[:-1]
    hist = node.voter_history
    snap = build_snapshot(
        sid,
        values,
        kraft_version=hist.committed_version(end_offset),
        voters=hist.committed(end_offset),
        now_ms=node.now,
        max_batch_bytes=node.config.max_batch_size_bytes,
    )
    node.snapshot = snap
    node.out.append(WriteSnapshot(snap))
    node.bytes_since_snapshot = 0
    node.last_snapshot_ms = node.now
    maybe_clean(node)
    return snap


def snapshot_due(node: NodeContext) -> bool:
    """Kafka's snapshot triggers: enough committed record bytes, or committed data and the interval passed."""
    if node.bytes_since_snapshot >= node.config.snapshot_max_record_bytes:
        return True
    interval = node.config.snapshot_interval_ms  # 0 turns the time trigger off, as in Kafka
    return interval > 0 and node.bytes_since_snapshot > 0 and node.now - node.last_snapshot_ms >= interval


def maybe_clean(node: NodeContext) -> None:
    """Invariant 2."""
    snap = node.snapshot
    if snap is None:
        return
    end = snap.snapshot_id.offset
    log = node.log
    if end <= log.start_offset or end > log.end_offset:
        return
    below = [b for b in log.batches if b.next_offset <= end]
    size = sum(len(b.data) for b in below)
    cfg = node.config
    too_big = cfg.retention_bytes >= 0 and size > cfg.retention_bytes
    too_old = False
    if cfg.retention_ms >= 0 and below:
        too_old = peek_batch(below[0].data).max_timestamp < node.now - cfg.retention_ms
    if too_big or too_old:
        log.advance_start(end, snap.snapshot_id.epoch)
        node.out.append(DeleteLogBefore(end))


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
    snap = node.snapshot
    if snap is None or snap.snapshot_id != wanted:
        return build(ErrorCode.NONE, ErrorCode.SNAPSHOT_NOT_FOUND, leader, node.epoch)
    size = len(snap.data)
    if part.position < 0 or part.position >= size:
        return build(ErrorCode.NONE, ErrorCode.POSITION_OUT_OF_RANGE, leader, node.epoch, wanted, size)
    key = m.key_of(msg.replica_id, part.replica_directory_id)
    if node.voters.is_voter(key) and key.id != node.local.id:
        node.note_voter_fetch(d, key.id)
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
