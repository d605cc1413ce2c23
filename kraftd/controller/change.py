"""One partition's change, as Kafka 4.3.1's PartitionChangeBuilder decides it: target replicas/ISR/adding/removing
in, at most one PartitionChangeRecord out. Shared by ElectLeaders, reassignment and AlterPartition's completion.

Contracts:
1. Reassignment completes inside the change (KIP-455): when the target ISR, with the removing replicas taken out,
   is non-empty and holds every remaining replica, the replicas lose the removing ones and adding/removing empty.
2. Leader choice. A *valid* leader is in the target ISR and active (registered, unfenced, not in controlled
   shutdown). PREFERRED: the first target replica if valid, else the current leader if valid, else the first
   valid of the other target replicas. ANY (and UNCLEAN): the current leader if valid, else the first valid
   target replica; UNCLEAN then takes the first active target replica even out of the ISR, which forces the ISR
   to that one broker and the leader recovery state to RECOVERING (1). No candidate -> leader -1.
3. The leader epoch is bumped (Leader set to the unchanged leader) when a replica leaves the replica set.
4. Fields are written only when they differ from the partition; a change that alters nothing is None. When the
   replica set changes, Directories are rewritten aligned with it (kept replicas keep theirs, a new one gets its
   broker's single log directory, else the unassigned id), from metadata.version 3.7-IV2 on.
"""

from __future__ import annotations

import uuid
from typing import Any

from generated.partition_change_record import PartitionChangeRecord
from kraftd.controller.features import MV_DIRECTORIES
from kraftd.controller.image import MetadataImage, PartitionState

NO_LEADER, NO_LEADER_CHANGE = -1, -2
PREFERRED, UNCLEAN, ANY = 0, 1, 2  # the first two are ElectLeaders' ElectionType codes
RECOVERING = 1
UNASSIGNED_DIR = uuid.UUID(int=0)


def active(image: MetadataImage, broker_id: int) -> bool:
    b = image.brokers.get(broker_id)
    return b is not None and not b.fenced and not b.in_controlled_shutdown


def complete_reassignment(
    replicas: list[int], isr: list[int], adding: list[int], removing: list[int]
) -> tuple[list[int], list[int], list[int], list[int]]:
    """Contract 1: (replicas, isr, adding, removing) after completing the reassignment when it can be."""
    if not adding and not removing:
        return replicas, isr, adding, removing
    new_isr = [r for r in isr if r not in removing]
    new_replicas = [r for r in replicas if r not in removing]
    if not new_isr or not set(new_replicas) <= set(new_isr):
        return replicas, isr, adding, removing
    return new_replicas, new_isr, [], []


def elect(
    image: MetadataImage, current: int, replicas: list[int], isr: list[int], election: int
) -> tuple[int, bool]:
    """Contract 2: (leader, unclean)."""

    def valid(r: int) -> bool:
        return r in isr and active(image, r)

    if election == PREFERRED:
        if replicas and valid(replicas[0]):
            return replicas[0], False
        if valid(current):
            return current, False
        return next((r for r in replicas[1:] if valid(r)), NO_LEADER), False
    if valid(current):
        return current, False
    clean = next((r for r in replicas if valid(r)), None)
    if clean is not None:
        return clean, False
    if election == UNCLEAN:
        unclean = next((r for r in replicas if active(image, r)), None)
        if unclean is not None:
            return unclean, True
    return NO_LEADER, False


def build(
    image: MetadataImage,
    topic_id: uuid.UUID,
    partition_id: int,
    p: PartitionState,
    *,
    replicas: list[int] | None = None,
    isr: list[int] | None = None,
    adding: list[int] | None = None,
    removing: list[int] | None = None,
    election: int = ANY,
) -> PartitionChangeRecord | None:
    """Contracts 1-4."""
    t_replicas, t_isr, t_adding, t_removing = complete_reassignment(
        list(p.replicas if replicas is None else replicas),
        list(p.isr if isr is None else isr),
        list(p.adding_replicas if adding is None else adding),
        list(p.removing_replicas if removing is None else removing),
    )
    record = PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id)
    leader, unclean = elect(image, p.leader, t_replicas, t_isr, election)
    changed = False
    if leader != p.leader:
        record.leader, changed = leader, True
        if unclean:
            record.isr = [leader]
            if p.leader_recovery_state != RECOVERING:
                record.leader_recovery_state = RECOVERING
    if record.leader == NO_LEADER_CHANGE and not set(p.replicas) <= set(t_replicas):
        record.leader, changed = p.leader, True  # contract 3
    if record.isr is None and t_isr and t_isr != p.isr:
        record.isr, changed = t_isr, True
    if t_replicas != p.replicas:
        record.replicas, changed = t_replicas, True
        if image.metadata_version >= MV_DIRECTORIES:
            record.directories = _directories(image, p, t_replicas)
    if t_removing != p.removing_replicas:
        record.removing_replicas, changed = t_removing, True
    if t_adding != p.adding_replicas:
        record.adding_replicas, changed = t_adding, True
    return record if changed else None


def _directories(image: MetadataImage, p: PartitionState, replicas: list[int]) -> list[Any]:
    known = dict(zip(p.replicas, p.directories, strict=False))
    out = []
    for r in replicas:
        if r in known:
            out.append(known[r])
            continue
        b = image.brokers.get(r)
        out.append(b.log_dirs[0] if b is not None and len(b.log_dirs) == 1 else UNASSIGNED_DIR)
    return out
