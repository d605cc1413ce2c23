"""One-line descriptions of simulator events and messages for traces (and the data-driven core tests)."""

from __future__ import annotations

from typing import Any

from kraftd.core import messages as m
from kraftd.core.events import AppendRecords, Event, RequestReceived, ResponseReceived


def describe_event(event: Event) -> str:
    if isinstance(event, RequestReceived | ResponseReceived):
        kind = "req" if isinstance(event, RequestReceived) else f"resp from n{event.source}"
        return f"{kind} {summary(event.message)}"
    if isinstance(event, AppendRecords):
        return f"append {len(event.records)}"
    return type(event).__name__


def summary(msg: Any) -> str:
    name = type(msg).__name__
    if getattr(msg, "error_code", 0):
        return f"{name}(error={msg.error_code})"
    if not hasattr(msg, "topics") and not hasattr(msg, "responses"):
        return name  # the KIP-853 RPCs carry no partition
    part = m.single_partition(msg)
    if part is None:
        return name
    if isinstance(msg, m.VoteRequest):
        return f"{name}(n{part.replica_id} e{part.replica_epoch} pre={part.pre_vote} last={part.last_offset}@{part.last_offset_epoch})"
    if isinstance(msg, m.VoteResponse):
        return f"{name}(granted={part.vote_granted} e{part.leader_epoch} leader={part.leader_id} err={part.error_code})"
    if isinstance(msg, m.FetchRequest):
        return f"{name}(n{m.fetch_replica_id(msg)} off={part.fetch_offset}@{part.last_fetched_epoch} e{part.current_leader_epoch})"
    if isinstance(msg, m.FetchResponse):
        div = part.diverging_epoch
        extra = f" diverging={div.end_offset}@{div.epoch}" if div.epoch >= 0 else ""
        n = len(part.records or b"")
        return f"{name}(err={part.error_code} e{part.current_leader.leader_epoch} hwm={part.high_watermark} bytes={n}{extra})"
    if isinstance(msg, m.ReadOffsetRequest):
        return name
    if isinstance(msg, m.ReadOffsetResponse):
        leader = part.current_leader
        return f"{name}(err={part.error_code} hwm={part.high_watermark} leader={leader.leader_id} e{leader.leader_epoch})"
    if isinstance(msg, m.FetchSnapshotRequest):
        return f"{name}({part.snapshot_id.end_offset}@{part.snapshot_id.epoch} pos={part.position})"
    if isinstance(msg, m.FetchSnapshotResponse):
        n = len(part.unaligned_records or b"")
        return f"{name}(err={part.error_code} pos={part.position} bytes={n} size={part.size})"
    err = getattr(part, "error_code", 0)
    return f"{name}(leader={part.leader_id} e{part.leader_epoch}{f' err={err}' if err else ''})"
