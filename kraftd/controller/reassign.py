"""AlterPartitionReassignments (45) and ListPartitionReassignments (46), as pure functions of the latest image
(KIP-455; Kafka 4.3.1 ReplicationControlManager, reduced to what is listed).

Contracts:
1. Per requested partition: unknown topic -> UNKNOWN_TOPIC_OR_PARTITION ("Unable to find a topic named X."),
   unknown partition -> UNKNOWN_TOPIC_OR_PARTITION ("Unable to find partition X:N.").
2. Target replicas given: an empty list, a broker named twice or an unregistered broker ->
   INVALID_REPLICA_ASSIGNMENT; with AllowReplicationFactorChange false (v1), a target whose size differs from
   the partition's original replica count -> INVALID_REPLICATION_FACTOR. Otherwise, from the current replica
   list: removing = current not in target, adding = target not in current, replicas = target then removing; the
   change goes through kraftd.controller.change (which completes at once when the ISR already holds the target)
   and when it changes nothing an empty PartitionChangeRecord is still written, as Kafka does.
3. Target null (cancel): no reassignment in progress -> NO_REASSIGNMENT_IN_PROGRESS; else the partition reverts
   to its original replicas (current without adding) and the ISR without the adding replicas; when that ISR
   would be empty the revert needs an unclean election, allowed only when the topic's
   ``unclean.leader.election.enable`` is true (else INVALID_REPLICA_ASSIGNMENT).
4. Completion: an AlterPartition that makes the ISR hold every target replica completes the reassignment in the
   same PartitionChangeRecord (change contract 1); when that moves leadership off the sender, the sender is
   answered NOT_LEADER_OR_FOLLOWER for that partition.
5. List: null topics -> every partition with a reassignment in progress; otherwise the requested partitions
   that exist and are reassigning (others are silently left out). Each entry carries the full replica list and
   the adding / removing replicas.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from generated.alter_partition_reassignments_request import AlterPartitionReassignmentsRequest
from generated.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from generated.partition_change_record import PartitionChangeRecord
from kraftd.controller import change
from kraftd.controller.apply import change_partition
from kraftd.controller.image import NO_ENTRIES, MetadataImage, PartitionState
from kwire.errors import ErrorCode
from kwire.resources import ConfigResourceType as CR

TOPIC_RESOURCE = int(CR.TOPIC)
NO_REASSIGNMENT = "No partition reassignment is in progress."

Outcome = tuple[ErrorCode, str | None]


def reassigning(p: PartitionState) -> bool:
    return bool(p.adding_replicas or p.removing_replicas)


def _validate(image: MetadataImage, target: list[int]) -> str | None:
    if not target:
        return "The manual partition assignment includes an empty replica list."
    seen: set[int] = set()
    for b in sorted(target):
        if b not in image.brokers:
            return f"The manual partition assignment includes broker {b}, but no such broker is registered."
        if b in seen:
            return f"The manual partition assignment includes the broker {b} more than once."
        seen.add(b)
    return None


def _change(
    image: MetadataImage, tid: uuid.UUID, pid: int, p: PartitionState, target: list[int], allow_rf: bool
) -> tuple[Outcome, Any]:
    bad = _validate(image, target)
    if bad is not None:
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, bad), None
    original = [r for r in p.replicas if r not in p.adding_replicas]
    if not allow_rf and len(original) != len(target):
        msg = f"The replication factor is changed from {len(original)} to {len(target)}"
        return (ErrorCode.INVALID_REPLICATION_FACTOR, msg), None
    removing = [r for r in p.replicas if r not in target]
    adding = [r for r in target if r not in p.replicas]
    record = change.build(
        image, tid, pid, p, replicas=[*target, *removing], adding=adding, removing=removing
    ) or PartitionChangeRecord(partition_id=pid, topic_id=tid)
    return (ErrorCode.NONE, None), record


def _cancel(
    image: MetadataImage, topic: str, tid: uuid.UUID, pid: int, p: PartitionState
) -> tuple[Outcome, Any]:
    if not reassigning(p):
        return (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, NO_REASSIGNMENT), None
    replicas = [r for r in p.replicas if r not in p.adding_replicas]
    isr = [r for r in p.isr if r not in p.adding_replicas]
    election = change.ANY
    if not isr:
        unclean = image.configs.get((TOPIC_RESOURCE, topic), NO_ENTRIES).get("unclean.leader.election.enable")
        if (unclean or "false").lower() != "true":
            msg = (
                f"Unable to revert partition assignment for {topic}:{pid} because it would require an "
                "unclean leader election."
            )
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, msg), None
        election = change.UNCLEAN
    record = change.build(
        image, tid, pid, p, replicas=replicas, isr=isr or None, adding=[], removing=[], election=election
    )
    return (ErrorCode.NONE, None), record


def alter_reassignments(
    image: MetadataImage, req: AlterPartitionReassignmentsRequest
) -> tuple[list[Any], list[tuple[str, list[tuple[int, ErrorCode, str | None]]]]]:
    """Contracts 1-3: (records, (topic, [(partition, error, message)]) per requested topic)."""
    records: list[Any] = []
    results = []
    for t in req.topics:
        parts: list[tuple[int, ErrorCode, str | None]] = []
        tid = image.topic_ids.get(t.name)
        for rp in t.partitions:
            p = image.topics[tid].partitions.get(rp.partition_index) if tid is not None else None
            if tid is None:
                out: Outcome = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"Unable to find a topic named {t.name}.",
                )
                record = None
            elif p is None:
                msg = f"Unable to find partition {t.name}:{rp.partition_index}."
                out, record = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, msg), None
            elif rp.replicas is None:
                out, record = _cancel(image, t.name, tid, rp.partition_index, p)
            else:
                out, record = _change(
                    image, tid, rp.partition_index, p, list(rp.replicas), req.allow_replication_factor_change
                )
            if record is not None:
                records.append(record)
            parts.append((rp.partition_index, *out))
        results.append((t.name, parts))
    return records, results


def list_reassignments(
    image: MetadataImage, req: ListPartitionReassignmentsRequest
) -> list[tuple[str, list[tuple[int, PartitionState]]]]:
    """Contract 5: (topic, [(partition, state)]) for the reassigning partitions asked about."""
    wanted: list[tuple[str, list[int] | None]]
    if req.topics is None:
        wanted = [(name, None) for name in sorted(image.topic_ids)]
    else:
        wanted = [(t.name, list(t.partition_indexes)) for t in req.topics]
    out = []
    for name, pids in wanted:
        tid = image.topic_ids.get(name)
        if tid is None:
            continue
        parts = image.topics[tid].partitions
        found = [
            (pid, parts[pid])
            for pid in (sorted(parts) if pids is None else pids)
            if pid in parts and reassigning(parts[pid])
        ]
        if found:
            out.append((name, found))
    return out


def alter_partition_change(
    image: MetadataImage, tid: uuid.UUID, pid: int, p: PartitionState, isr: list[int], sender: int
) -> tuple[Any, ErrorCode, PartitionState | None]:
    """Contract 4, for a partition under reassignment (or any, with ELR on): (record or None, error, state)."""
    record = change.build(image, tid, pid, p, isr=isr)
    if record is None:
        return None, ErrorCode.NONE, p
    new = dataclasses.replace(p)
    change_partition(new, record)  # the state the record gives once replayed
    if record.leader not in (change.NO_LEADER_CHANGE, sender):
        return record, ErrorCode.NOT_LEADER_OR_FOLLOWER, None
    return record, ErrorCode.NONE, new
