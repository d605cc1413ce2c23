"""The partition changes a broker's state change makes on the active controller (kraftd.controller.brokers
contracts 3, 4, 6 and 7): leaving ISRs and leaderships when fenced, shut down or unregistered, elections when
unfenced, the partitions of log directories gone offline. Pure functions of the latest image; each returns
PartitionChangeRecords (and, for offline directories, the BrokerRegistrationChangeRecord) in topic-name order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from generated.partition_change_record import PartitionChangeRecord
from kraftd.controller import change, elr, partition_index
from kraftd.controller.features import MV_DIRECTORIES
from kraftd.controller.image import MetadataImage

NO_LEADER = -1
NO_LEADER_CHANGE = -2


def _live(image: MetadataImage, broker_id: int) -> bool:
    b = image.brokers.get(broker_id)
    return b is not None and not b.fenced and not b.in_controlled_shutdown


def remove_from_partitions(
    image: MetadataImage,
    broker_id: int,
    keep_leader: bool = False,
    where: list[tuple[Any, int]] | None = None,
) -> list[Any]:
    """Shrink every ISR holding ``broker_id`` (never to empty; with ELR on, kraftd.controller.brokers contract 6) and move its leaderships
    (kraftd.controller.brokers contract 3); only those of ``where`` (name order; partitions gone or no longer holding it are skipped)
    when given."""
    keys = (
        holding(image, broker_id, isr=True)
        if where is None
        else [k for k in where if _in_isr(image, k, broker_id)]
    )
    if elr.enabled(image) and not keep_leader:
        return partition_changes(image, keys, remove=broker_id)
    records: list[Any] = []
    for tid, pid in keys:
        p = image.topics[tid].partitions[pid]
        isr = [r for r in p.isr if r != broker_id] or p.isr
        leader = p.leader
        if p.leader == broker_id and not keep_leader:
            leader = next((r for r in isr if r != broker_id and _live(image, r)), NO_LEADER)
        if isr == p.isr and leader == p.leader:
            continue
        records.append(
            PartitionChangeRecord(
                partition_id=pid,
                topic_id=tid,
                isr=isr if isr != p.isr else None,
                leader=leader if leader != p.leader else NO_LEADER_CHANGE,
            )
        )
    return records


def _in_isr(image: MetadataImage, key: tuple[Any, int], broker_id: int) -> bool:
    t = image.topics.get(key[0])
    p = t.partitions.get(key[1]) if t is not None else None
    return p is not None and broker_id in p.isr


def leave_partitions(image: MetadataImage, broker_id: int) -> list[Any]:
    """An unregistered broker's changes (kraftd.controller.broker_dirs contract 1, Kafka's
    handleBrokerUnregistered): out of every ISR as when fenced; with ELR on, each partition whose ELR holds it is
    then re-decided without it as a candidate (its ELR membership itself is kept, as Kafka's builder keeps it)."""
    records = remove_from_partitions(image, broker_id)
    if elr.enabled(image):
        records += partition_changes(image, holding(image, broker_id, isr=False), remove=broker_id)
    return records


def offline_dirs(image: MetadataImage, broker_id: int, offline: list[Any]) -> list[Any]:
    """kraftd.controller.brokers contract 7: the records for log directories a heartbeat newly reports offline."""
    if image.metadata_version < MV_DIRECTORIES:
        return []
    b = image.brokers[broker_id]
    gone = set(offline)
    newly = [d for d in b.log_dirs if d in gone]
    if not newly:
        return []
    records: list[Any] = []
    for d in newly:
        placed = [
            (tid, pid)
            for tid, t in sorted(image.topics.items(), key=lambda kv: kv[1].name)
            for pid, p in sorted(t.partitions.items())
            if broker_id in p.replicas
            and len(p.directories) == len(p.replicas)
            and p.directories[p.replicas.index(broker_id)] == d
        ]
        records += partition_changes(image, placed, remove=broker_id)
    online = [d for d in b.log_dirs if d not in gone]
    records.append(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=b.epoch, log_dirs=online))
    return records


def elect_offline(
    image: MetadataImage, broker_id: int, where: list[tuple[Any, int]] | None = None
) -> list[Any]:
    """Leaderless partitions whose ISR holds ``broker_id`` get it as leader (it is about to be unfenced); with ELR
    on, every leaderless partition gets an election that counts it as active (kraftd.controller.brokers contract 6).
    Only those of ``where`` that are still leaderless, when given."""
    if where is None:
        leaderless = partition_index.keys(image, image.leader_index, NO_LEADER)
    else:  # O(len(where)), not a listing of every leaderless partition per chunk
        leaderless = [k for k in where if _leaderless(image, k)]
    if elr.enabled(image):
        return partition_changes(image, leaderless, add=broker_id)
    return [
        PartitionChangeRecord(partition_id=pid, topic_id=tid, leader=broker_id)
        for tid, pid in leaderless
        if broker_id in image.topics[tid].partitions[pid].isr
    ]


def _leaderless(image: MetadataImage, key: tuple[Any, int]) -> bool:
    t = image.topics.get(key[0])
    p = t.partitions.get(key[1]) if t is not None else None
    return p is not None and p.leader == NO_LEADER


def holding(image: MetadataImage, broker_id: int, *, isr: bool) -> list[tuple[Any, int]]:
    """(topic id, partition) of every partition whose ISR (else ELR) holds ``broker_id``, in name order
    (kraftd.controller.partition_index: O(its partitions))."""
    return partition_index.keys(image, image.isr_index if isr else image.elr_index, broker_id)


def holding_chunks(image: MetadataImage, broker_id: int, size: int) -> Iterator[list[tuple[Any, int]]]:
    """:func:`holding` (ISR) in chunks of at most ``size``, each listed when asked
    (kraftd.controller.partition_index contract 3)."""
    return partition_index.key_chunks(image, image.isr_index, broker_id, size)


def partition_changes(
    image: MetadataImage, where: list[tuple[Any, int]], *, remove: int = -1, add: int = -1, unclean: int = -1
) -> list[Any]:
    """kraftd.controller.brokers contract 6: one kraftd.controller.change per partition, ``remove`` / ``unclean`` taken out of the ISR and
    never elected, ``add`` counted as active."""

    def acceptable(r: int) -> bool:
        return r not in (remove, unclean) and (r == add or change.active(image, r))

    records: list[Any] = []
    for tid, pid in where:
        t = image.topics[tid]
        p = t.partitions[pid]
        record = change.build(
            image,
            tid,
            pid,
            p,
            isr=[r for r in p.isr if r not in (remove, unclean)],
            election=change.UNCLEAN if elr.unclean_enabled(image, t.name) else change.ANY,
            acceptable=acceptable,
            unclean_shutdown=[unclean] if unclean >= 0 else [],
        )
        if record is not None:
            records.append(record)
    return records
