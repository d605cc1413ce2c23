"""Eligible Leader Replicas (KIP-966): when they are maintained and against which minimum ISR.

Contracts (Kafka 4.3.1 FeatureControlManager / ReplicationControlManager / ConfigurationControlManager):
1. ELR is maintained only while ``eligible.leader.replicas.version`` is finalized at 1 or above; at 0 every
   partition change is built exactly as before KIP-966.
2. A topic's effective minimum ISR is its ``min.insync.replicas``: the topic's own config, else the cluster-level
   default (the BROKER resource "", written at bootstrap when ELR is on), else 1; capped at the replication
   factor of the topic's partition 0.
3. ``unclean.leader.election.enable`` resolves the same way (topic, else cluster default, else false).
4. Config writes while ELR is on (ConfigurationControlManager): a min.insync.replicas record for a broker id, or
   one deleting the cluster-level value, refuses its resource with INVALID_CONFIG; every accepted
   min.insync.replicas record is followed, after all the request's config records, by a ClearElrRecord (the
   topic's name for a topic, "" = every topic otherwise), since ELR members were chosen against the old minimum.
5. Order: Kafka collects ELR candidates into a java.util.HashSet of broker ids; :func:`hash_order` reproduces that
   iteration order (bucket index of the spread hash in the final table, ties in insertion order), so the lists
   we write are the lists Kafka's controller would write.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from generated.clear_elr_record import ClearElrRecord
from generated.config_record import ConfigRecord
from kraftd.controller.features import ELR_VERSION
from kraftd.controller.image import NO_ENTRIES, MetadataImage
from kwire.resources import ConfigResourceType as CR

TOPIC, BROKER = int(CR.TOPIC), int(CR.BROKER)
MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"


def enabled(image: MetadataImage) -> bool:
    """Contract 1."""
    return image.features.get(ELR_VERSION, 0) >= 1


def _topic_config(image: MetadataImage, topic: str, name: str) -> str | None:
    value = image.configs.get((TOPIC, topic), NO_ENTRIES).get(name)
    if value is None:
        value = image.configs.get((BROKER, ""), NO_ENTRIES).get(name)
    return value


def min_isr(image: MetadataImage, topic: str) -> int:
    """Contract 2."""
    value = _topic_config(image, topic, MIN_ISR)
    try:
        wanted = int(value) if value is not None else 1
    except ValueError:
        wanted = 1
    tid = image.topic_ids.get(topic)
    first = image.topics[tid].partitions.get(0) if tid is not None else None
    return min(wanted, len(first.replicas)) if first is not None else wanted


def unclean_enabled(image: MetadataImage, topic: str) -> bool:
    """Contract 3."""
    value = _topic_config(image, topic, UNCLEAN)
    return value is not None and value.strip().lower() == "true"


def config_refusal(image: MetadataImage, records: Iterable[Any]) -> str | None:
    """Contract 4: the INVALID_CONFIG message refusing a resource's ConfigRecords, or None."""
    if not enabled(image):
        return None
    for r in records:
        if r.name != MIN_ISR or r.resource_type != BROKER:
            continue
        if r.resource_name:
            return "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
        if r.value is None:
            return "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
    return None


def clear_records(image: MetadataImage, records: Iterable[Any]) -> list[ClearElrRecord]:
    """Contract 4: the ClearElrRecords that follow a request's accepted ConfigRecords."""
    if not enabled(image):
        return []
    return [
        ClearElrRecord(topic_name=r.resource_name if r.resource_type == TOPIC else "")
        for r in records
        if isinstance(r, ConfigRecord) and r.name == MIN_ISR
    ]


def hash_order(items: Iterable[int], initial: int = 0) -> list[int]:
    """Contract 5: the distinct ``items`` in the order a HashSet built from the first ``initial`` of them (then
    grown by adding the rest) iterates them."""
    distinct = list(dict.fromkeys(items))
    cap = 16
    while cap < int(initial / 0.75) + 1:
        cap *= 2
    for size in range(1, len(distinct) + 1):
        if size > cap * 0.75:
            cap *= 2

    def bucket(r: int) -> int:
        h = r & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (cap - 1)

    return sorted(distinct, key=bucket)
