"""Log replication, the follower and observer side: the fetch loop and what a Fetch answer does to the log.

Split out of kraftd.core.replication; the invariants cited (4, 4a, 6) are that module's.
"""

from __future__ import annotations

from typing import Any

from kraftd.core import batches
from kraftd.core import messages as m
from kraftd.core.context import NodeContext
from kraftd.core.effects import (
    AppendBatches,
    FlushLog,
    TruncateLog,
)
from kraftd.core.log import LogBatch, LogInconsistencyError, OffsetAndEpoch
from kraftd.core.states import Follower, SnapshotFetch
from kwire.errors import CorruptRecordError, ErrorCode


def send_fetch(node: NodeContext, dest: int) -> None:
    req = m.fetch_request(
        node.cluster_id,
        node.local,
        node.epoch,
        node.log.end_offset,
        node.log.last_epoch,
        node.config.fetch_max_wait_ms,
        node.config.fetch_max_bytes,
        node.high_watermark,
    )
    node.send(dest, req)


def poll_follower(node: NodeContext, d: Follower) -> None:
    if node.now >= d.fetch_deadline and not node.shutting_down:
        if node.is_voter:
            node.to_prospective(jitter=not d.ended_by_leader)
        else:
            node.to_unattached(node.epoch)
        return
    if d.snapshot_fetch is not None:
        node.send_fetch_snapshot(d)
        return
    ready = node.flushed >= node.log.end_offset or node.bugs.ack_before_flush
    if ready and node.can_send(d.leader_id):
        send_fetch(node, d.leader_id)


def discover_leader(node: NodeContext) -> None:
    """An observer with no leader asks the voters in turn (the bootstrap servers while it knows no voter set,
    KIP-853); any of them names the leader."""
    if any(True for _ in node.inflight.values()):
        return
    ids = node.voters.ids or node.config.bootstrap_ids
    if not ids:
        return
    dest = ids[node.discovery_cursor % len(ids)]
    node.discovery_cursor += 1
    if node.can_send(dest):
        send_fetch(node, dest)


def handle_fetch_response(node: NodeContext, source: int, resp: Any) -> None:
    if resp.error_code != ErrorCode.NONE:
        return  # backoff already applied; the fetch timer decides when to give up
    part = m.single_partition(resp)
    if part is None:
        return
    leader, epoch = part.current_leader.leader_id, part.current_leader.leader_epoch
    if part.error_code != ErrorCode.NONE:
        node.back_off(source)
        node.maybe_transition(leader, epoch)
        return
    node.maybe_transition(leader, epoch)
    d = node.data
    if not isinstance(d, Follower) or epoch != node.epoch or d.leader_id != source:
        return
    snap = part.snapshot_id
    if snap.end_offset >= 0 or snap.epoch >= 0:
        # The leader's log starts past our fetch offset: fetch its snapshot (kraftd.core.snapshotting). A
        # snapshot id we cannot use is retried only after the backoff (invariant 6), never at once.
        sid = OffsetAndEpoch(snap.end_offset, snap.epoch)
        if sid.offset > node.log.start_offset and 0 <= sid.epoch <= node.epoch:
            d.snapshot_fetch = SnapshotFetch(sid)
        else:
            node.back_off(source)
        _fetched(node, d, -1)
        return
    div = part.diverging_epoch
    if div.epoch >= 0 or div.end_offset >= 0:
        own = node.log.end_offset_for_epoch(div.epoch)
        target = max(min(div.end_offset, own.offset), node.log.start_offset)
        if target < node.log.end_offset:
            end = node.log_truncate(target)
            node.out.append(TruncateLog(end))
        _fetched(node, d, -1)  # invariant 4: what is left may still diverge
        return
    if part.records:
        try:
            fresh = _validated(node, batches.split_batches(part.records))
        except (CorruptRecordError, LogInconsistencyError):
            node.back_off(source)
            return
        if not fresh:  # nothing past our log end: asking again at once would get the same (invariant 6)
            node.back_off(source)
        for b in fresh:
            node.log_append(b)
        if fresh:
            node.out.append(AppendBatches(tuple(fresh)))
            node.out.append(FlushLog(node.log.end_offset))
    _fetched(node, d, part.high_watermark)


def _validated(node: NodeContext, got: list[LogBatch]) -> list[LogBatch]:
    """The batches that extend the log, checked before any is appended (log invariants 1-2)."""
    fresh = [b for b in got if b.base_offset >= node.log.end_offset]
    expect, last_epoch = node.log.end_offset, node.log.last_epoch
    for b in fresh:
        if b.base_offset != expect or b.epoch < last_epoch or b.epoch > node.epoch:
            raise LogInconsistencyError(f"batch {b.base_offset}@{b.epoch} does not extend the log")
        expect, last_epoch = b.next_offset, b.epoch
    return fresh


def _fetched(node: NodeContext, d: Follower, leader_hwm: int) -> None:
    d.has_fetched = True
    if not d.ended_by_leader:  # invariant 4a
        d.fetch_deadline = node.now + node.config.fetch_timeout_ms
    node.follower_leader_hwm = leader_hwm
    advance_follower_hwm(node, leader_hwm)


def advance_follower_hwm(node: NodeContext, leader_hwm: int) -> None:
    hwm = min(leader_hwm, node.flushed)
    if hwm > node.high_watermark:
        node.high_watermark = hwm
