"""The one place a metadata record changes an image (Kafka's MetadataDelta.replay, as a pure function).

Contracts:
1. :func:`apply_record` is the only writer of a :class:`MetadataImage`; committed replay on every node and the
   leader's uncommitted view both go through it, so both see the same semantics.
2. Records between BeginTransactionRecord and EndTransactionRecord (KIP-868) are held and applied together at
   the end; AbortTransactionRecord drops them. Outside a transaction a record applies at once.
3. A record that refers to something the image does not hold (a change to an unknown partition, broker or
   topic) is ignored rather than raising: replay never stops on a record a Kafka controller accepted.
4. Semantics follow Kafka 4.3.1: a PartitionChangeRecord bumps the partition epoch always and the leader epoch
   when it names a leader (-2 = unchanged); BrokerRegistrationChangeRecord.Fenced is 1 fence / -1 unfence /
   0 none; a FeatureLevelRecord at level 0 removes the feature; RemoveTopicRecord drops the topic's configs;
   ClearElrRecord (a topic, or every topic for "") empties ELR and LastKnownElr of each partition holding either,
   as a change to that partition (partition epoch + 1), the others untouched.
"""

from __future__ import annotations

from typing import Any

from kraftd.controller.image import BrokerState, ControllerState, MetadataImage, PartitionState, TopicState

TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
NO_LEADER_CHANGE = -2

BEGIN_TXN, END_TXN, ABORT_TXN = 23, 24, 25


def apply_record(image: MetadataImage, offset: int, api_key: int, version: int, record: Any) -> None:
    """Apply one decoded record committed (or appended, for the uncommitted view) at ``offset``."""
    image.offset = offset
    if api_key == BEGIN_TXN:
        image.pending_transaction = []
        return
    if api_key == END_TXN:
        pending, image.pending_transaction = image.pending_transaction or [], None
        for key, ver, rec in pending:
            _apply(image, key, ver, rec)
        return
    if api_key == ABORT_TXN:
        image.pending_transaction = None
        return
    if image.pending_transaction is not None:
        image.pending_transaction.append((api_key, version, record))
        return
    _apply(image, api_key, version, record)


def _listeners(eps: Any) -> list[tuple[str, str, int, int]]:
    return [(e.name, e.host, e.port, e.security_protocol) for e in eps]


def _features(fs: Any) -> dict[str, tuple[int, int]]:
    return {f.name: (f.min_supported_version, f.max_supported_version) for f in fs}


def _apply(image: MetadataImage, key: int, version: int, r: Any) -> None:
    handler = _HANDLERS.get(key)
    if handler is not None:
        handler(image, r)
    elif key >= 0:
        image.other.append((key, version, r))
    # key < 0: a value that is no framed metadata record holds no fact of the cluster (image invariant 2a)


def _register_broker(image: MetadataImage, r: Any) -> None:
    image.brokers[r.broker_id] = BrokerState(
        broker_id=r.broker_id,
        epoch=r.broker_epoch,
        incarnation_id=r.incarnation_id,
        listeners=_listeners(r.end_points),
        features=_features(r.features),
        rack=r.rack,
        fenced=r.fenced,
        in_controlled_shutdown=r.in_controlled_shutdown,
        log_dirs=list(r.log_dirs),
        registration_offset=image.offset,
    )


def _unregister_broker(image: MetadataImage, r: Any) -> None:
    b = image.brokers.get(r.broker_id)
    if b is not None and b.epoch == r.broker_epoch:
        del image.brokers[r.broker_id]


def _broker_change(image: MetadataImage, r: Any) -> None:
    b = image.brokers.get(r.broker_id)
    if b is None or b.epoch != r.broker_epoch:
        return
    if r.fenced == 1:
        b.fenced = True
    elif r.fenced == -1:
        b.fenced = False
    if r.in_controlled_shutdown == 1:
        b.in_controlled_shutdown = True
    if r.log_dirs:
        b.log_dirs = list(r.log_dirs)


def _fence(fenced: bool) -> Any:
    def run(image: MetadataImage, r: Any) -> None:
        b = image.brokers.get(r.id)
        if b is not None and b.epoch == r.epoch:
            b.fenced = fenced

    return run


def _topic(image: MetadataImage, r: Any) -> None:
    image.topics[r.topic_id] = TopicState(r.name, r.topic_id)
    image.topic_ids[r.name] = r.topic_id


def _remove_topic(image: MetadataImage, r: Any) -> None:
    t = image.topics.pop(r.topic_id, None)
    if t is not None:
        image.topic_ids.pop(t.name, None)
        image.configs.pop((TOPIC_RESOURCE, t.name), None)


def _partition(image: MetadataImage, r: Any) -> None:
    t = image.topics.get(r.topic_id)
    if t is None:
        return
    t.partitions[r.partition_id] = PartitionState(
        replicas=list(r.replicas),
        isr=list(r.isr),
        removing_replicas=list(r.removing_replicas),
        adding_replicas=list(r.adding_replicas),
        leader=r.leader,
        leader_recovery_state=r.leader_recovery_state,
        leader_epoch=r.leader_epoch,
        partition_epoch=r.partition_epoch,
        directories=list(r.directories),
        elr=list(r.eligible_leader_replicas or []),
        last_known_elr=list(r.last_known_elr or []),
    )


def _partition_change(image: MetadataImage, r: Any) -> None:
    t = image.topics.get(r.topic_id)
    p = t.partitions.get(r.partition_id) if t is not None else None
    if p is not None:
        change_partition(p, r)


def change_partition(p: PartitionState, r: Any) -> None:
    """Contract 4 for one PartitionChangeRecord on ``p`` (each changed field gets a fresh list, so a
    ``dataclasses.replace`` copy of a partition can be changed without touching the original)."""
    if r.isr is not None:
        p.isr = list(r.isr)
    if r.leader != NO_LEADER_CHANGE:
        p.leader = r.leader
        p.leader_epoch += 1
    if r.replicas is not None:
        p.replicas = list(r.replicas)
    if r.removing_replicas is not None:
        p.removing_replicas = list(r.removing_replicas)
    if r.adding_replicas is not None:
        p.adding_replicas = list(r.adding_replicas)
    if r.leader_recovery_state != -1:
        p.leader_recovery_state = r.leader_recovery_state
    if r.directories is not None:
        p.directories = list(r.directories)
    if getattr(r, "eligible_leader_replicas", None) is not None:
        p.elr = list(r.eligible_leader_replicas)
    if getattr(r, "last_known_elr", None) is not None:
        p.last_known_elr = list(r.last_known_elr)
    p.partition_epoch += 1


def _config(image: MetadataImage, r: Any) -> None:
    key = (r.resource_type, r.resource_name)
    if r.value is None:
        entries = image.configs.get(key)
        if entries is not None:
            entries.pop(r.name, None)
            if not entries:
                del image.configs[key]
    else:
        image.configs.setdefault(key, {})[r.name] = r.value


def _feature(image: MetadataImage, r: Any) -> None:
    if r.feature_level == 0:
        image.features.pop(r.name, None)
    else:
        image.features[r.name] = r.feature_level


def _quota(image: MetadataImage, r: Any) -> None:
    entity = tuple(sorted((e.entity_type, e.entity_name) for e in r.entity))
    if r.remove:
        entries = image.quotas.get(entity)
        if entries is not None:
            entries.pop(r.key, None)
            if not entries:
                del image.quotas[entity]
    else:
        image.quotas.setdefault(entity, {})[r.key] = r.value


def _producer_ids(image: MetadataImage, r: Any) -> None:
    image.next_producer_id = r.next_producer_id


def _register_controller(image: MetadataImage, r: Any) -> None:
    image.controllers[r.controller_id] = ControllerState(
        r.controller_id, r.incarnation_id, _listeners(r.end_points), _features(r.features)
    )


def _clear_elr(image: MetadataImage, r: Any) -> None:
    for t in image.topics.values():
        if r.topic_name in ("", t.name):
            for p in t.partitions.values():
                if p.elr or p.last_known_elr:  # a change that empties both fields (partition epoch + 1)
                    p.elr, p.last_known_elr = [], []
                    p.partition_epoch += 1


def _keep(store: str, key: Any) -> Any:
    def run(image: MetadataImage, r: Any) -> None:
        getattr(image, store)[key(r)] = r

    return run


def _drop(store: str, key: Any) -> Any:
    def run(image: MetadataImage, r: Any) -> None:
        getattr(image, store).pop(key(r), None)

    return run


def _noop(image: MetadataImage, r: Any) -> None:
    pass


_HANDLERS: dict[int, Any] = {
    0: _register_broker,
    1: _unregister_broker,
    2: _topic,
    3: _partition,
    4: _config,
    5: _partition_change,
    7: _fence(True),
    8: _fence(False),
    9: _remove_topic,
    10: _keep("delegation_tokens", lambda r: r.token_id),
    11: _keep("scram", lambda r: (r.name, r.mechanism)),
    12: _feature,
    14: _quota,
    15: _producer_ids,
    17: _broker_change,
    18: _keep("acls", lambda r: r.id),
    19: _drop("acls", lambda r: r.id),
    20: _noop,
    22: _drop("scram", lambda r: (r.name, r.mechanism)),
    26: _drop("delegation_tokens", lambda r: r.token_id),
    27: _register_controller,
    28: _clear_elr,
}
