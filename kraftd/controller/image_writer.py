"""KIP-630 snapshots of the metadata image: the image written out as records, and an image rebuilt from them
(Kafka's ImageWriter / MetadataImage.write and the snapshot half of MetadataLoader).

Contracts:
1. :func:`image_records` emits the image, not the log's history: one record per fact the image holds, in the order
   Kafka's MetadataImage.write uses: features (metadata.version first, then the others by name), cluster (brokers,
   then controllers), topics (TopicRecord then its PartitionRecords), configs, client quotas, producer ids, ACLs,
   SCRAM credentials, delegation tokens; then the records the image keeps without acting on them (``other``), in
   their log order. Within a section the order is by key, so equal images give identical snapshots.
2. Replaying those records into an empty image (:func:`image_from_records`) gives back an image
   :func:`same_image` as the source: every field but the two pieces of replay bookkeeping, ``offset`` and each
   broker's ``registration_offset`` (after a snapshot, like Kafka's controller, the snapshot's last offset).
3. An image inside an open metadata transaction (KIP-868) is never written: :class:`SnapshotInTransaction`
   (Kafka never snapshots between BeginTransaction and EndTransaction).
4. :func:`snapshot_values` frames the records at the versions Kafka writes for the image's metadata.version;
   a value that is not a framed metadata record never reaches the image (kraftd.controller.image 2a). It frames
   each record as it is made (:func:`iter_image_records`), so no record objects of the whole image are alive at
   once (issue 24: at 1M partitions those were ~500 MB, held by the process after the snapshot).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from immutables import Map

from generated.client_quota_record import ClientQuotaRecord, EntityData
from generated.config_record import ConfigRecord
from generated.feature_level_record import FeatureLevelRecord
from generated.partition_record import PartitionRecord
from generated.producer_ids_record import ProducerIdsRecord
from generated.register_broker_record import BrokerEndpoint, BrokerFeature, RegisterBrokerRecord
from generated.register_controller_record import (
    ControllerEndpoint,
    ControllerFeature,
    RegisterControllerRecord,
)
from generated.topic_record import TopicRecord
from kraftd.controller.apply import apply_record
from kraftd.controller.features import METADATA_VERSION, MV_CONTROLLER_REGISTRATION, MV_ELR, record_version
from kraftd.controller.image import MetadataImage, _canonical
from kraftd.controller.machine import UNDECODABLE, decode_batches
from kraftd.core.log import LogBatch
from kwire.errors import KraftError
from kwire.metadata_frame import decode_metadata_record, encode_record


class SnapshotInTransaction(KraftError):
    """The image is inside an open metadata transaction; it cannot be snapshotted (contract 3)."""


def image_records(image: MetadataImage) -> list[Any]:
    """Contract 1: the records that rebuild ``image``; raw values are bytes."""
    return list(iter_image_records(image))


def iter_image_records(image: MetadataImage) -> Iterator[Any]:
    """Contract 1, one record at a time (contract 4); raises SnapshotInTransaction at the first ``next``."""
    if image.pending_transaction is not None:
        raise SnapshotInTransaction("a metadata transaction is open")
    yield from _features(image)
    yield from _brokers(image)
    if image.metadata_version >= MV_CONTROLLER_REGISTRATION or image.controllers:
        yield from _controllers(image)
    yield from _topics(image)
    yield from _rest(image)


def _rest(image: MetadataImage) -> list[Any]:
    out: list[Any] = []
    for (rtype, rname), entries in sorted(image.configs.items()):
        out += [
            ConfigRecord(resource_type=rtype, resource_name=rname, name=k, value=v)
            for k, v in sorted(entries.items())
        ]
    for entity, quotas in sorted(image.quotas.items(), key=lambda kv: repr(kv[0])):
        ents = [EntityData(entity_type=t, entity_name=n) for t, n in entity]
        out += [ClientQuotaRecord(entity=ents, key=k, value=v) for k, v in sorted(quotas.items())]
    if image.next_producer_id:
        out.append(ProducerIdsRecord(broker_id=-1, broker_epoch=-1, next_producer_id=image.next_producer_id))
    out += [image.acls[k] for k in sorted(image.acls)]
    out += [image.scram[k] for k in sorted(image.scram)]
    out += [image.delegation_tokens[k] for k in sorted(image.delegation_tokens)]
    out += [rec for _, _, rec in image.other]
    return out


def _features(image: MetadataImage) -> list[Any]:
    out = []
    if METADATA_VERSION in image.features:
        out.append(FeatureLevelRecord(name=METADATA_VERSION, feature_level=image.features[METADATA_VERSION]))
    for name, level in sorted(image.features.items()):
        if name != METADATA_VERSION:
            out.append(FeatureLevelRecord(name=name, feature_level=level))
    return out


def _brokers(image: MetadataImage) -> list[Any]:
    return [
        RegisterBrokerRecord(
            broker_id=b.broker_id,
            incarnation_id=b.incarnation_id,
            broker_epoch=b.epoch,
            end_points=[
                BrokerEndpoint(name=n, host=h, port=p, security_protocol=s) for n, h, p, s in b.listeners
            ],
            features=[
                BrokerFeature(name=n, min_supported_version=lo, max_supported_version=hi)
                for n, (lo, hi) in b.features.items()
            ],
            rack=b.rack,
            fenced=b.fenced,
            in_controlled_shutdown=b.in_controlled_shutdown,
            log_dirs=list(b.log_dirs),
        )
        for _, b in sorted(image.brokers.items())
    ]


def _controllers(image: MetadataImage) -> list[Any]:
    return [
        RegisterControllerRecord(
            controller_id=c.controller_id,
            incarnation_id=c.incarnation_id,
            end_points=[
                ControllerEndpoint(name=n, host=h, port=p, security_protocol=s) for n, h, p, s in c.listeners
            ],
            features=[
                ControllerFeature(name=n, min_supported_version=lo, max_supported_version=hi)
                for n, (lo, hi) in c.features.items()
            ],
        )
        for _, c in sorted(image.controllers.items())
    ]


def _topics(image: MetadataImage) -> Iterator[Any]:
    elr_fields = image.metadata_version >= MV_ELR
    for tid, t in sorted(image.topics.items(), key=lambda kv: (kv[1].name, kv[0])):
        yield TopicRecord(name=t.name, topic_id=tid)
        for pid, p in sorted(t.partitions.items()):
            yield (
                PartitionRecord(
                    partition_id=pid,
                    topic_id=tid,
                    replicas=list(p.replicas),
                    isr=list(p.isr),
                    removing_replicas=list(p.removing_replicas),
                    adding_replicas=list(p.adding_replicas),
                    leader=p.leader,
                    leader_recovery_state=p.leader_recovery_state,
                    leader_epoch=p.leader_epoch,
                    partition_epoch=p.partition_epoch,
                    directories=list(p.directories),
                    eligible_leader_replicas=list(p.elr) if elr_fields or p.elr else None,
                    last_known_elr=list(p.last_known_elr) if elr_fields or p.last_known_elr else None,
                )
            )


def snapshot_values(image: MetadataImage) -> list[bytes]:
    """Contract 4: the snapshot's record values."""
    mv = image.metadata_version
    return [
        rec if isinstance(rec, bytes) else encode_record(rec, record_version(type(rec).API_KEY, mv))
        for rec in iter_image_records(image)
    ]


def image_from_values(values: Iterable[bytes], end_offset: int) -> MetadataImage:
    """An image rebuilt from a snapshot's values (contract 2); its offset is the snapshot's last offset."""
    image = MetadataImage()
    for value in values:
        try:
            key, version, rec = decode_metadata_record(value)
        except KraftError:
            key, version, rec = UNDECODABLE, 0, bytes(value)
        apply_record(image, end_offset - 1, key, version, rec)
    image.offset = end_offset - 1
    return image


def image_from_batches(batches: Iterable[LogBatch], end_offset: int) -> MetadataImage:
    """As :func:`image_from_values`, from a snapshot's record batches."""
    image = MetadataImage()
    for d in decode_batches(batches):
        apply_record(image, end_offset - 1, d.api_key, d.version, d.record)
    image.offset = end_offset - 1
    return image


def same_image(a: MetadataImage, b: MetadataImage) -> bool:
    """Contract 2: equal in every field but the replay bookkeeping."""
    return content_digest(a) == content_digest(b)


def content_digest(image: MetadataImage) -> str:
    """A digest of the image's content (contract 2's comparison), equal on every node holding the same metadata."""
    brokers = Map((i, dataclasses.replace(b, registration_offset=-1)) for i, b in image.brokers.items())
    content = dataclasses.replace(
        image, offset=-1, brokers=brokers
    )  # shares the rest; ``image`` is unchanged
    return hashlib.sha256(_canonical(content).encode()).hexdigest()
