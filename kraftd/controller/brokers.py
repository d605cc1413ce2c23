"""Broker lifecycle on the active controller: registration, heartbeats, fencing, controlled shutdown.

Pure functions of the latest (uncommitted) image plus the leader's in-memory heartbeat table; each returns the
records to append (one atomic batch) and the answer to give once they commit. Semantics of Kafka 4.3.1's
ClusterControlManager / BrokerHeartbeatManager / ReplicationControlManager, reduced to what is listed here:

1. BrokerRegistration: wrong cluster id -> INCONSISTENT_CLUSTER_ID; a live registration (heartbeat within the
   session timeout) of the same id with another incarnation -> DUPLICATE_BROKER_REGISTRATION; a finalized
   feature level outside the broker's supported range -> UNSUPPORTED_VERSION. Otherwise a RegisterBrokerRecord
   (fenced) with a broker epoch above every epoch this id had and above the image offset; a broker that was
   registered already first loses its leaderships and ISR memberships as in 3.
1a. From metadata.version 3.7-IV2 the log directories are checked first (after the duplicate check), as Kafka
   4.3.1 does: none, a reserved id (Kafka's DirectoryId.reserved), the same id twice, or an id another broker
   registered -> INVALID_REGISTRATION.
2. BrokerHeartbeat: an unknown id -> BROKER_ID_NOT_REGISTERED; another epoch -> STALE_BROKER_EPOCH. A fenced
   broker that does not want fencing and has replayed its own registration record is unfenced
   (BrokerRegistrationChangeRecord Fenced=-1) and leads the partitions of its replicas that had no leader.
3. Fencing (session timeout, or WantFence): Fenced=1, the broker leaves every ISR it is in (unless it is the
   last member) and its leaderships move to the first live ISR member (-1 when none).
5. AllocateProducerIds: a registered broker at its current epoch gets the next block of 1000 producer ids
   (ProducerIdsRecord with the new next id); otherwise BROKER_ID_NOT_REGISTERED / STALE_BROKER_EPOCH.
4. Controlled shutdown (WantShutDown): a fenced broker may shut down at once; an unfenced one is marked
   InControlledShutdown=1, loses its leaderships and ISR memberships as in 3, and is told ShouldShutDown once
   it leads nothing and every active broker (unfenced, not shutting down) has reported, in a heartbeat, a
   metadata offset at or past the offset of the last records written for its shutdown (Kafka's
   BrokerHeartbeatManager "lowest active offset" rule: the new leaders know they lead before the old one
   stops); at that point it is fenced.
4a. When only that rule holds a shutdown back (the broker leads nothing), the active controller may decide the
   heartbeat again when the rule holds rather than at the broker's next heartbeat: :func:`await_shutdown` lists
   the active brokers whose last reported offset is below the shutdown's, each report (:meth:`Heartbeats.report`)
   strikes the brokers that reach it, and :meth:`Heartbeats.shutdown_ready` says none is left. The rule is
   unchanged; only when it is applied moves (Kafka 4.3.1 applies it at each heartbeat: its broker sends the
   second 50 ms after the first answer, then one an interval, so a shutdown waits for up to two intervals).
6. With eligible.leader.replicas.version >= 1 (KIP-966), every partition change of 3, 4 and the unfencing of 2
   is built by kraftd.controller.change with ELR upkeep (its contract 5), per partition in topic-name order, as
   Kafka's generateLeaderAndIsrUpdates: fencing or controlled shutdown takes the broker out of each ISR holding
   it (which may leave the ISR empty, the broker then being kept in the ELR) and never elects it; unfencing
   runs an election on every leaderless partition counting the broker as active (an ELR member or the last
   known leader may so lead again). A registration from a new incarnation whose PreviousBrokerEpoch is the
   registered epoch is a clean shutdown, handled as fencing; any other (an unclean shutdown) takes the broker
   out of every ISR and every ELR holding it. A registration repeating the registered incarnation changes no
   partition.
7. From metadata.version 3.7-IV2, a heartbeat naming offline log directories that the registration still lists
   as online takes the broker out of the ISR of every partition placed in them (as in 3, per directory), then a
   BrokerRegistrationChangeRecord lists the remaining online directories; these records follow any the
   heartbeat's state change writes (Kafka's processBrokerHeartbeat order).

The partition changes of 3, 4, 6 and 7 are kraftd.controller.broker_partitions' (re-exported here).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from generated.broker_heartbeat_request import BrokerHeartbeatRequest
from generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from generated.broker_registration_request import BrokerRegistrationRequest
from generated.producer_ids_record import ProducerIdsRecord
from generated.register_broker_record import BrokerEndpoint, BrokerFeature, RegisterBrokerRecord
from kraftd.controller import elr, partition_index
from kraftd.controller.broker_partitions import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    elect_offline,
    holding,
    leave_partitions,
    offline_dirs,
    partition_changes,
    remove_from_partitions,
)
from kraftd.controller.features import MV_DIRECTORIES
from kraftd.controller.image import MetadataImage
from kraftd.core.config import BugFlags
from kwire.errors import ErrorCode

PRODUCER_ID_BLOCK = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
DEFAULT_SESSION_TIMEOUT_MS = 9000  # broker.session.timeout.ms
NO_BUGS = BugFlags()  # planted bugs exist only for the simulator to catch; the daemon never sets any


@dataclass(slots=True)
class Heartbeats:
    """The leader's in-memory view of broker liveness (never replicated; rebuilt by a new leader)."""

    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    last_ms: dict[int, int] = field(default_factory=dict)
    # Per broker: the metadata offset of its last heartbeat; for one in controlled shutdown, the offset every
    # active broker must reach before it may stop (contract 4).
    metadata_offset: dict[int, int] = field(default_factory=dict)
    shutdown_offset: dict[int, int] = field(default_factory=dict)
    # Contract 4a: per broker whose shutdown answer is held, the active brokers still below its shutdown offset.
    shutdown_behind: dict[int, set[int]] = field(default_factory=dict)

    def touch(self, broker_id: int, now_ms: int) -> None:
        self.last_ms[broker_id] = now_ms

    def report(self, broker_id: int, offset: int) -> None:
        """The metadata offset a heartbeat of ``broker_id`` reported (contract 4a: it may release a shutdown)."""
        self.metadata_offset[broker_id] = offset
        for shutting_down, behind in self.shutdown_behind.items():
            if broker_id in behind and offset >= self.shutdown_offset.get(shutting_down, 1 << 62):
                behind.discard(broker_id)

    def shutdown_ready(self, broker_id: int) -> bool:
        """Contract 4a: no active broker is left below ``broker_id``'s shutdown offset."""
        return not self.shutdown_behind.get(broker_id, True)

    def stop_waiting(self, broker_id: int) -> None:
        self.shutdown_behind.pop(broker_id, None)

    def alive(self, broker_id: int, now_ms: int) -> bool:
        last = self.last_ms.get(broker_id)
        return last is not None and now_ms - last < self.session_timeout_ms


@dataclass(frozen=True, slots=True)
class Outcome:
    records: list[Any]
    error: ErrorCode = ErrorCode.NONE
    broker_epoch: int = -1
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False


def register(
    image: MetadataImage,
    req: BrokerRegistrationRequest,
    cluster_id: str,
    hb: Heartbeats,
    now_ms: int,
    bugs: BugFlags = NO_BUGS,
) -> Outcome:
    """Contract 1."""
    if req.cluster_id != cluster_id:
        return Outcome([], ErrorCode.INCONSISTENT_CLUSTER_ID)
    old = image.brokers.get(req.broker_id)
    if old is not None and old.incarnation_id != req.incarnation_id and hb.alive(req.broker_id, now_ms):
        return Outcome([], ErrorCode.DUPLICATE_BROKER_REGISTRATION)
    if image.metadata_version >= MV_DIRECTORIES and directory_error(image, req.broker_id, list(req.log_dirs)):
        return Outcome([], ErrorCode.INVALID_REGISTRATION)
    supported = {f.name: (f.min_supported_version, f.max_supported_version) for f in req.features}
    for name, level in image.features.items():
        lo, hi = supported.get(name, (0, 0))
        if not lo <= level <= hi:
            return Outcome([], ErrorCode.UNSUPPORTED_VERSION)
    epoch = max(image.offset + 1, (old.epoch + 1) if old is not None else 0)
    if bugs.reuse_broker_epoch and old is not None:
        epoch = old.epoch
    record = RegisterBrokerRecord(
        broker_id=req.broker_id,
        incarnation_id=req.incarnation_id,
        broker_epoch=epoch,
        end_points=[
            BrokerEndpoint(name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol)
            for e in req.listeners
        ],
        features=[
            BrokerFeature(
                name=f.name,
                min_supported_version=f.min_supported_version,
                max_supported_version=f.max_supported_version,
            )
            for f in req.features
        ],
        rack=req.rack,
        fenced=True,
        in_controlled_shutdown=False,
        # RegisterBrokerRecord carries log directories from metadata.version 3.7-IV2 on (record version 3).
        log_dirs=list(req.log_dirs) if image.metadata_version >= MV_DIRECTORIES else [],
    )
    hb.touch(req.broker_id, now_ms)
    hb.shutdown_offset.pop(req.broker_id, None)  # a new incarnation starts outside controlled shutdown
    # A broker registering again (a restart) leads nothing and leaves the ISRs first (contract 6 with ELR on).
    if old is not None and elr.enabled(image):
        moves = _reregister_moves(image, req, old.epoch, old.incarnation_id)
    else:
        moves = remove_from_partitions(image, req.broker_id) if old is not None else []
    return Outcome([*moves, record], broker_epoch=epoch)


def reserved_directory(d: uuid.UUID) -> bool:
    """Kafka's DirectoryId.reserved: the most significant half 0 and the least, as a signed long, below 100."""
    lsb = d.int & (2**64 - 1)
    return d.int >> 64 == 0 and (lsb < 100 or lsb >= 2**63)


def directory_error(image: MetadataImage, broker_id: int, dirs: list[uuid.UUID]) -> str | None:
    """Contract 1a (Kafka 4.3.1 ClusterControlManager.registerBroker, from metadata.version 3.7-IV2): why a
    registration's log directories are refused (INVALID_REGISTRATION), or None."""
    if not dirs:
        return "No directories specified in request"
    if any(reserved_directory(d) for d in dirs):
        return "Reserved directory ID in request"
    if len(set(dirs)) != len(dirs):
        return "Duplicate directory ID in request"
    wanted = set(dirs)
    for other_id, other in image.brokers.items():
        taken = wanted.intersection(other.log_dirs)
        if other_id != broker_id and taken:
            return f"Broker {other_id} is already registered with directory {min(taken)}"
    return None


def heartbeat(
    image: MetadataImage, req: BrokerHeartbeatRequest, hb: Heartbeats, now_ms: int, bugs: BugFlags = NO_BUGS
) -> Outcome:
    """Contracts 2, 4 and 7 (and 3 for WantFence)."""
    out = _heartbeat_state(image, req, hb, now_ms, bugs)
    if out.error or not req.offline_log_dirs:
        return out
    dirs = offline_dirs(image, req.broker_id, list(req.offline_log_dirs))
    return replace(out, records=[*out.records, *dirs]) if dirs else out


def _heartbeat_state(
    image: MetadataImage, req: BrokerHeartbeatRequest, hb: Heartbeats, now_ms: int, bugs: BugFlags
) -> Outcome:
    b = image.brokers.get(req.broker_id)
    if b is None:
        return Outcome([], ErrorCode.BROKER_ID_NOT_REGISTERED)
    if b.epoch != req.broker_epoch:
        return Outcome([], ErrorCode.STALE_BROKER_EPOCH)
    hb.touch(req.broker_id, now_ms)
    hb.report(req.broker_id, req.current_metadata_offset)
    caught_up = req.current_metadata_offset >= b.registration_offset
    if req.want_shut_down:
        if b.fenced:
            return Outcome([], broker_epoch=b.epoch, is_caught_up=caught_up, should_shut_down=True)
        records: list[Any] = []
        if not b.in_controlled_shutdown:
            records.append(
                BrokerRegistrationChangeRecord(
                    broker_id=b.broker_id, broker_epoch=b.epoch, in_controlled_shutdown=1
                )
            )
        moves = remove_from_partitions(image, b.broker_id)
        records += moves
        if records or b.broker_id not in hb.shutdown_offset:
            # The last offset these records take when appended right after the latest image (a new leader that
            # lost the offset takes the image's).
            target = image.offset + len(records)
            hb.shutdown_offset[b.broker_id] = max(hb.shutdown_offset.get(b.broker_id, -1), target)
        done = (
            not moves
            and not _leads_anything(image, b.broker_id)
            and _lowest_active_offset(image, hb, b.broker_id) >= hb.shutdown_offset[b.broker_id]
        )
        if done:
            records.append(
                BrokerRegistrationChangeRecord(broker_id=b.broker_id, broker_epoch=b.epoch, fenced=1)
            )
        return Outcome(
            records, broker_epoch=b.epoch, is_caught_up=caught_up, is_fenced=done, should_shut_down=done
        )
    if req.want_fence:
        if b.fenced:
            return Outcome([], broker_epoch=b.epoch, is_caught_up=caught_up)
        return Outcome(fence(image, b.broker_id, bugs), broker_epoch=b.epoch, is_caught_up=caught_up)
    if b.fenced and caught_up and not b.in_controlled_shutdown:
        records = [BrokerRegistrationChangeRecord(broker_id=b.broker_id, broker_epoch=b.epoch, fenced=-1)]
        records += elect_offline(image, b.broker_id)
        return Outcome(records, broker_epoch=b.epoch, is_caught_up=True, is_fenced=False)
    return Outcome([], broker_epoch=b.epoch, is_caught_up=caught_up, is_fenced=b.fenced)


def fence(image: MetadataImage, broker_id: int, bugs: BugFlags = NO_BUGS) -> list[Any]:
    """Contract 3: the records that fence ``broker_id`` and move its partitions away."""
    b = image.brokers[broker_id]
    return [
        BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=b.epoch, fenced=1),
        *remove_from_partitions(image, broker_id, keep_leader=bugs.fence_keeps_leader),
    ]


def expired(image: MetadataImage, hb: Heartbeats, now_ms: int) -> list[int]:
    """Unfenced brokers whose session timed out (a new leader starts their clocks at its first check)."""
    for bid, b in image.brokers.items():
        if not b.fenced and bid not in hb.last_ms:
            hb.touch(bid, now_ms)
    return [bid for bid in sorted(image.brokers) if still_expired(image, hb, bid, now_ms)]


def still_expired(image: MetadataImage, hb: Heartbeats, broker_id: int, now_ms: int) -> bool:
    """``broker_id`` is an unfenced broker whose session has timed out at ``now_ms`` (:func:`expired`'s rule for one
    broker, without starting a clock)."""
    b = image.brokers.get(broker_id)
    return b is not None and not b.fenced and broker_id in hb.last_ms and not hb.alive(broker_id, now_ms)


def next_check_ms(image: MetadataImage, hb: Heartbeats) -> int | None:
    """When the first unfenced broker's session times out (:func:`expired` lists it from then on), or None when no
    session runs: Kafka's BrokerHeartbeatManager.nextCheckTimeNs, at which its controller schedules the next
    stale-broker check (a broker killed is fenced at its session's end, not at the next periodic check)."""
    ends = [
        last + hb.session_timeout_ms
        for bid, last in hb.last_ms.items()
        if (b := image.brokers.get(bid)) is not None and not b.fenced
    ]
    return min(ends, default=None)


def await_shutdown(image: MetadataImage, hb: Heartbeats, broker_id: int) -> bool:
    """Contract 4a: True (and the brokers to wait for noted) when ``broker_id`` is in controlled shutdown, leads
    nothing, and only active brokers' reports below its shutdown offset keep it from being told to shut down."""
    b = image.brokers.get(broker_id)
    target = hb.shutdown_offset.get(broker_id)
    if (
        b is None
        or b.fenced
        or not b.in_controlled_shutdown
        or target is None
        or _leads_anything(image, broker_id)
    ):
        return False
    behind = {
        bid
        for bid, other in image.brokers.items()
        if bid != broker_id
        and not other.fenced
        and not other.in_controlled_shutdown
        and hb.metadata_offset.get(bid, -1) < target
    }
    if behind:
        hb.shutdown_behind[broker_id] = behind
    return bool(behind)


def _lowest_active_offset(image: MetadataImage, hb: Heartbeats, shutting_down: int) -> int:
    """The lowest metadata offset any other active broker reported (-1 for one not heard from by this leader)."""
    offsets = [
        hb.metadata_offset.get(bid, -1)
        for bid, b in image.brokers.items()
        if bid != shutting_down and not b.fenced and not b.in_controlled_shutdown
    ]
    return min(offsets, default=1 << 62)


def _leads_anything(image: MetadataImage, broker_id: int) -> bool:
    return partition_index.holds_any(image.leader_index, broker_id)


def _reregister_moves(
    image: MetadataImage, req: BrokerRegistrationRequest, old_epoch: int, old_incarnation: Any
) -> list[Any]:
    """Contract 6 for a registration replacing an earlier one."""
    if req.incarnation_id == old_incarnation:
        return []
    bid = req.broker_id
    if req.previous_broker_epoch == old_epoch:  # a clean shutdown: leave the ISRs as when fenced
        return partition_changes(image, holding(image, bid, isr=True), remove=bid)
    in_isr = partition_changes(image, holding(image, bid, isr=True), unclean=bid)
    return in_isr + partition_changes(image, holding(image, bid, isr=False), unclean=bid)


def allocate_producer_ids(
    image: MetadataImage, broker_id: int, broker_epoch: int
) -> tuple[list[Any], ErrorCode, int]:
    """Contract 5: (records, error, first id of the block)."""
    b = image.brokers.get(broker_id)
    if b is None:
        return [], ErrorCode.BROKER_ID_NOT_REGISTERED, -1
    if b.epoch != broker_epoch:
        return [], ErrorCode.STALE_BROKER_EPOCH, -1
    start = image.next_producer_id
    record = ProducerIdsRecord(
        broker_id=broker_id, broker_epoch=broker_epoch, next_producer_id=start + PRODUCER_ID_BLOCK
    )
    return [record], ErrorCode.NONE, start


__all__ = [
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "elect_offline",
    "holding",
    "leave_partitions",
    "offline_dirs",
    "partition_changes",
    "remove_from_partitions",
]
