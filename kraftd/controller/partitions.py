"""AlterPartition (56), CreatePartitions (37) and IncrementalAlterConfigs (44) on the active controller, as pure
functions of the latest image.

Contracts (Kafka 4.3.1 ReplicationControlManager / ConfigurationControlManager, reduced to what is listed):
1. AlterPartition, per partition: the sender's broker epoch must be its registration's (else the whole request
   gets STALE_BROKER_EPOCH); unknown topic id -> UNKNOWN_TOPIC_ID, unknown partition ->
   UNKNOWN_TOPIC_OR_PARTITION; a sender that is not the leader -> INVALID_REQUEST; an older leader epoch ->
   FENCED_LEADER_EPOCH; another partition epoch -> INVALID_UPDATE_VERSION; a proposed ISR member that is not a
   replica, or is fenced or in controlled shutdown, or (v3) whose broker epoch is not its registration's ->
   INELIGIBLE_REPLICA. An accepted ISR that differs becomes a PartitionChangeRecord (partition epoch + 1); the
   answer carries the resulting state. Under reassignment, or with eligible.leader.replicas.version >= 1, the
   change is kraftd.controller.change's (a shrink below the minimum ISR keeps the removed replicas in the ELR).
2. CreatePartitions: unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; a count not above the current one ->
   INVALID_PARTITIONS; new partitions are placed like CreateTopics with the replication factor of partition 0
   (or take the given assignments), one PartitionRecord each, at leader epoch 0 and partition epoch 0.
3. IncrementalAlterConfigs is served by kraftd.controller.configs (its contract 5), not here.
4. UpdateFeatures: a known feature at a level this controller and every registered broker and controller
   supports, respecting level dependencies; lowering a level needs a downgrade upgrade type and is refused for
   metadata.version; kraft.version is not changed here. Any failure -> INVALID_UPDATE_VERSION and no records at
   all; otherwise one FeatureLevelRecord per feature (level 0 removes it).
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from generated.alter_partition_request import AlterPartitionRequest
from generated.create_partitions_request import CreatePartitionsRequest
from generated.partition_change_record import PartitionChangeRecord
from generated.partition_record import PartitionRecord
from kraftd.controller import elr, reassign
from kraftd.controller import placement as placer
from kraftd.controller.brokers import NO_BUGS
from kraftd.controller.image import MetadataImage, PartitionState
from kraftd.controller.topics import directories, usable_brokers
from kraftd.core.config import BugFlags
from kwire.errors import ErrorCode

NO_LEADER_CHANGE = -2


def alter_partition(
    image: MetadataImage, req: AlterPartitionRequest, version: int, bugs: BugFlags = NO_BUGS
) -> tuple[list[Any], ErrorCode, list[tuple[Any, int, ErrorCode, PartitionState | None]]]:
    """Contract 1: (records, top-level error, (topic id, partition, error, resulting state) per partition)."""
    sender = image.brokers.get(req.broker_id)
    if sender is None or sender.epoch != req.broker_epoch:
        return [], ErrorCode.STALE_BROKER_EPOCH, []
    records: list[Any] = []
    out: list[tuple[Any, int, ErrorCode, PartitionState | None]] = []
    for t in req.topics:
        topic = image.topics.get(t.topic_id)
        for p in t.partitions:
            if topic is None:
                out.append((t.topic_id, p.partition_index, ErrorCode.UNKNOWN_TOPIC_ID, None))
                continue
            state = topic.partitions.get(p.partition_index)
            if state is None:
                out.append((t.topic_id, p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None))
                continue
            error = _check_alter(image, state, req.broker_id, p, version, bugs)
            if error:
                out.append((t.topic_id, p.partition_index, error, None))
                continue
            isr = [b.broker_id for b in p.new_isr_with_epochs] if version >= 3 else list(p.new_isr)
            # The ISR change may complete a reassignment (KIP-455) or move replicas into the ELR (KIP-966).
            if reassign.reassigning(state) or elr.enabled(image):
                rec, code, after = reassign.alter_partition_change(
                    image, t.topic_id, p.partition_index, state, isr, req.broker_id
                )
                records += [rec] if rec is not None else []
                out.append((t.topic_id, p.partition_index, code, after))
                continue
            if isr == state.isr:
                out.append((t.topic_id, p.partition_index, ErrorCode.NONE, state))
                continue
            records.append(
                PartitionChangeRecord(partition_id=p.partition_index, topic_id=t.topic_id, isr=isr)
            )
            new = dataclasses.replace(state, isr=isr, partition_epoch=state.partition_epoch + 1)
            out.append((t.topic_id, p.partition_index, ErrorCode.NONE, new))
    return records, ErrorCode.NONE, out


def _check_alter(
    image: MetadataImage, state: PartitionState, sender: int, p: Any, version: int, bugs: BugFlags
) -> ErrorCode:
    if state.leader != sender:
        return ErrorCode.INVALID_REQUEST
    if p.leader_epoch < state.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if p.partition_epoch != state.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    members = (
        [(b.broker_id, b.broker_epoch) for b in p.new_isr_with_epochs]
        if version >= 3
        else [(b, -1) for b in p.new_isr]
    )
    for bid, epoch in members:
        b = image.brokers.get(bid)
        fenced = b is not None and b.fenced and bid != sender and not bugs.isr_admits_fenced
        if bid not in state.replicas or b is None or fenced or b.in_controlled_shutdown:
            return ErrorCode.INELIGIBLE_REPLICA
        if epoch != -1 and b.epoch != epoch:
            return ErrorCode.INELIGIBLE_REPLICA
    return ErrorCode.NONE


def create_partitions(
    image: MetadataImage, req: CreatePartitionsRequest, rng: random.Random
) -> tuple[list[Any], list[tuple[str, ErrorCode, str | None]]]:
    """Contract 2."""
    records: list[Any] = []
    results: list[tuple[str, ErrorCode, str | None]] = []
    live = usable_brokers(image)
    for t in req.topics:
        tid = image.topic_ids.get(t.name)
        if tid is None:
            results.append(
                (t.name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{t.name}' does not exist.")
            )
            continue
        current = len(image.topics[tid].partitions)
        if t.count <= current:
            msg = (
                f"Topic already has {current} partition(s)."
                if t.count == current
                else f"The topic {t.name} currently has {current} partition(s); {t.count} would not be an increase."
            )
            results.append((t.name, ErrorCode.INVALID_PARTITIONS, msg))
            continue
        rf = len(image.topics[tid].partitions[0].replicas)
        if t.assignments:
            placement = [list(a.broker_ids) for a in t.assignments]
            if len(placement) != t.count - current or any(
                b not in image.brokers for a in placement for b in a
            ):
                results.append((t.name, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Invalid replica assignment."))
                continue
        elif rf > len(live):
            results.append(
                (t.name, ErrorCode.INVALID_REPLICATION_FACTOR, f"Only {len(live)} broker(s) are live.")
            )
            continue
        elif any(image.brokers[b].rack for b in live):
            existing = [
                image.topics[tid].partitions[i].replicas for i in sorted(image.topics[tid].partitions)
            ]
            placement = placer.place(rng, placer.usable(image), t.count - current, rf, existing)
        else:
            start = rng.randrange(len(live))
            placement = [
                [live[(start + p + i) % len(live)] for i in range(rf)] for p in range(t.count - current)
            ]
        results.append((t.name, ErrorCode.NONE, None))
        if req.validate_only:
            continue
        for i, replicas in enumerate(placement):
            records.append(
                PartitionRecord(
                    partition_id=current + i,
                    topic_id=tid,
                    replicas=replicas,
                    isr=list(replicas),
                    leader=replicas[0],
                    leader_epoch=0,
                    partition_epoch=0,
                    directories=directories(image, replicas),
                )
            )
    return records, results


def update_features(
    image: MetadataImage, updates: list[tuple[str, int, int]], validate_only: bool
) -> tuple[list[Any], list[tuple[str, ErrorCode, str | None]]]:
    """Contract 4: ``updates`` are (feature, level, upgrade type 1/2/3); all-or-nothing."""
    from generated.feature_level_record import FeatureLevelRecord
    from kraftd.controller import features as f

    levels = dict(image.features)
    results: list[tuple[str, ErrorCode, str | None]] = []
    records: list[Any] = []
    for name, level, upgrade_type in updates:
        error: str | None = None
        current = levels.get(name, 0)
        if name == f.KRAFT_VERSION:
            error = "kraft.version is changed through the quorum, not through the controller"
        elif name != f.METADATA_VERSION and name not in f.FEATURES:
            error = f"The controller does not support the given feature {name}."
        elif not (level == 0 and name != f.METADATA_VERSION) and not f.min_level(
            name
        ) <= level <= f.max_level(name):
            error = f"Invalid update version {level} for feature {name}."
        elif level < current and upgrade_type == 1:
            error = "Can't downgrade the version of this feature without setting the upgrade type to safe or unsafe."
        elif level < current and name == f.METADATA_VERSION:
            error = "Downgrading metadata.version is not supported."
        else:
            for node, ranges in _supporters(image):
                lo, hi = ranges.get(name, (0, 0))
                if level and not lo <= level <= hi:
                    error = f"{node} does not support {name} level {level} (supports {lo}-{hi})."
                    break
        if error is None and level:
            needs = [x.needs_mv for x in f.FEATURES.get(name, ()) if x.level == level]
            mv = levels.get(f.METADATA_VERSION, 0) if name != f.METADATA_VERSION else level
            if needs and needs[0] > mv:
                error = f"{name} could not be set to {level} because it depends on metadata.version level {needs[0]}"
        results.append((name, ErrorCode.INVALID_UPDATE_VERSION if error else ErrorCode.NONE, error))
        if error is None:
            levels[name] = level
            records.append(FeatureLevelRecord(name=name, feature_level=level))
    if validate_only or any(code for _, code, _ in results):
        return [], results
    return records, results


def _supporters(image: MetadataImage) -> list[tuple[str, dict[str, tuple[int, int]]]]:
    out = [(f"Broker {b}", s.features) for b, s in sorted(image.brokers.items())]
    out += [(f"Controller {c}", s.features) for c, s in sorted(image.controllers.items())]
    return out
