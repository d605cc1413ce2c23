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
5. Eligible Leader Replicas (KIP-966), only while kraftd.controller.elr contract 1 holds:
   a. A target ISR at or above the topic's minimum ISR empties the ELR. Below it, the ELR becomes the old ELR
      plus the partition's current ISR, minus the target ISR and minus the brokers of an unclean shutdown
      (kraftd.controller.elr contract 5 gives its order): a replica leaving the ISR cleanly stays eligible.
   b. A valid leader (contract 2) may also be an ELR member when the target ISR is empty; electing one makes the
      ISR that broker alone and takes it out of the ELR (a clean election). When the target ISR and ELR are both
      empty and LastKnownElr names exactly one broker that is acceptable, that broker is elected uncleanly (it was
      the last leader), before any other unclean candidate.
   c. An unclean election empties the ELR. The ISR may be written empty.
   d. LastKnownElr records the last leader: set to [old leader] when the change leaves the partition without a
      leader and the field was empty; emptied when the change names a leader and the field was not empty.
   e. Record fields follow Kafka's encoding: a field left null means "unchanged", an empty list means "empty".
   With ELR off, an ELR left over from an earlier level is emptied by the next change.
6. A directory placement (AssignReplicasToDirs) rewrites one replica's Directories entry, from metadata.version
   3.7-IV2 on, written only when the list differs; the rest of the change is decided as above (a leaderless
   partition may so get a leader, as Kafka's builder tries an election on every change).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from generated.partition_change_record import PartitionChangeRecord
from kraftd.controller import elr as elr_mod
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


Acceptable = Callable[[int], bool]


def elect(
    image: MetadataImage,
    current: int,
    replicas: list[int],
    isr: list[int],
    election: int,
    *,
    elr: Sequence[int] = (),
    last_known: Sequence[int] = (),
    acceptable: Acceptable | None = None,
    elr_on: bool = False,
) -> tuple[int, bool]:
    """Contracts 2 and 5b: (leader, unclean)."""
    ok = acceptable if acceptable is not None else (lambda r: active(image, r))

    def valid(r: int) -> bool:
        return (r in isr or (not isr and r in elr)) and ok(r)

    def last_leader() -> int | None:
        if elr_on and not elr and not isr and len(last_known) == 1 and ok(last_known[0]):
            return last_known[0]
        return None

    if election == PREFERRED:
        if replicas and valid(replicas[0]):
            return replicas[0], False
        if valid(current):
            return current, False
        other = next((r for r in replicas[1:] if valid(r)), None)
        if other is not None:
            return other, False
        last = last_leader()
        return (last, True) if last is not None else (NO_LEADER, False)
    if valid(current):
        return current, False
    clean = next((r for r in replicas if valid(r)), None)
    if clean is not None:
        return clean, False
    last = last_leader()
    if last is not None:
        return last, True
    if election == UNCLEAN:
        unclean = next((r for r in replicas if ok(r)), None)
        if unclean is not None:
            return unclean, True
    return NO_LEADER, False


def target_elr(p: PartitionState, isr: list[int], minimum: int, unclean_shutdown: Sequence[int]) -> list[int]:
    """Contract 5a."""
    if len(isr) >= minimum:
        return []
    candidates = elr_mod.hash_order([*p.elr, *p.isr], initial=len(p.elr))
    return [r for r in candidates if r not in isr and r not in unclean_shutdown]


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
    acceptable: Acceptable | None = None,
    unclean_shutdown: Sequence[int] = (),
    directory: tuple[int, uuid.UUID] | None = None,
) -> PartitionChangeRecord | None:
    """Contracts 1-6. ``acceptable`` replaces "active" as the leader test (a broker being fenced is not
    acceptable, one being unfenced is); ``unclean_shutdown`` brokers never stay in or enter the ELR;
    ``directory`` (broker, directory id) places that broker's replica (contract 6)."""
    t_replicas, t_isr, t_adding, t_removing = complete_reassignment(
        list(p.replicas if replicas is None else replicas),
        list(p.isr if isr is None else isr),
        list(p.adding_replicas if adding is None else adding),
        list(p.removing_replicas if removing is None else removing),
    )
    elr_on = elr_mod.enabled(image)
    t_elr = list(p.elr)
    if elr_on:
        name = image.topics[topic_id].name if topic_id in image.topics else ""
        t_elr = target_elr(p, t_isr, elr_mod.min_isr(image, name), unclean_shutdown)
    record = PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id)
    leader, unclean = elect(
        image,
        p.leader,
        t_replicas,
        t_isr,
        election,
        elr=t_elr,
        last_known=p.last_known_elr,
        acceptable=acceptable,
        elr_on=elr_on,
    )
    if leader != p.leader:
        if leader in t_elr:  # contract 5b
            t_isr = [leader]
            t_elr = [r for r in t_elr if r != leader]
        record.leader = leader
        if unclean:
            record.isr = [leader]
            if p.leader_recovery_state != RECOVERING:
                record.leader_recovery_state = RECOVERING
    if record.leader == NO_LEADER_CHANGE and not set(p.replicas) <= set(t_replicas):
        record.leader = p.leader  # contract 3
    if record.isr is not None or not elr_on:
        t_elr = []  # contract 5c (and ELR off)
    if t_elr != p.elr:
        record.eligible_leader_replicas = t_elr
    if record.isr is None and (t_isr or elr_on) and t_isr != p.isr:
        record.isr = t_isr
    if elr_on:  # contract 5d
        if record.leader == NO_LEADER and not p.last_known_elr:
            record.last_known_elr = [p.leader]
        elif record.leader >= 0 and p.last_known_elr:
            record.last_known_elr = []
    if t_replicas != p.replicas:
        record.replicas = t_replicas
        if image.metadata_version >= MV_DIRECTORIES:
            record.directories = _directories(image, p, t_replicas)
    if directory is not None and directory[0] in t_replicas and image.metadata_version >= MV_DIRECTORIES:
        dirs = list(record.directories or _directories(image, p, t_replicas))
        dirs[t_replicas.index(directory[0])] = directory[1]
        if record.directories is not None or dirs != list(p.directories):
            record.directories = dirs
    if t_removing != p.removing_replicas:
        record.removing_replicas = t_removing
    if t_adding != p.adding_replicas:
        record.adding_replicas = t_adding
    return None if is_noop(record) else record


def is_noop(r: PartitionChangeRecord) -> bool:
    """A change record that alters nothing (every field at its "unchanged" encoding)."""
    return (
        r.leader == NO_LEADER_CHANGE
        and r.leader_recovery_state == -1
        and all(
            getattr(r, f) is None
            for f in (
                "isr",
                "replicas",
                "removing_replicas",
                "adding_replicas",
                "directories",
                "eligible_leader_replicas",
                "last_known_elr",
            )
        )
    )


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
