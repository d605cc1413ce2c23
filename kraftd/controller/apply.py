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
5. Copy-on-write (kraftd.controller.image invariant 3): a handler never changes a map or a state object an image
   holds; it builds the changed object and sets it into a new map, so images sharing structure (the committed
   image and the leader's uncommitted view, a snapshot being written) never see each other's changes.
6. Interning (issue 24, image invariant 3c): every list a PartitionState holds comes from :func:`shared`, one
   list per distinct content (30 brokers at RF 3 give a few thousand replica sets for a million partitions), and
   is never changed in place; a change sets another shared list. A PartitionState is a value (it names no
   partition), so the partitions an image holds in equal states hold one object (:func:`_interned`): a million
   partitions just created are a few thousand distinct states.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, TypeVar

from immutables import Map

from kraftd.controller import partition_index
from kraftd.controller.image import BrokerState, ControllerState, MetadataImage, PartitionState, TopicState
from kwire.resources import ConfigResourceType as CR

TOPIC_RESOURCE = int(CR.TOPIC)
NO_LEADER_CHANGE = -2

BEGIN_TXN, END_TXN, ABORT_TXN = 23, 24, 25

T = TypeVar("T")
# Distinct lists (and states) kept for sharing; past it a table starts over (it only shares, contract 6).
SHARED_MAX = 1 << 16
_shared: dict[tuple[Any, ...], list[Any]] = {}
_states: dict[tuple[Any, ...], PartitionState] = {}


def _interned(p: PartitionState) -> PartitionState:
    """Contract 6: the one state equal to ``p`` (its lists are shared, so their ids stand for their contents while
    the table, through the state it keeps, holds them)."""
    key = (
        id(p.replicas),
        id(p.isr),
        id(p.removing_replicas),
        id(p.adding_replicas),
        p.leader,
        p.leader_recovery_state,
        p.leader_epoch,
        p.partition_epoch,
        id(p.directories),
        id(p.elr),
        id(p.last_known_elr),
    )
    out = _states.get(key)
    if out is None:
        if len(_states) >= SHARED_MAX:
            _states.clear()
        out = _states[key] = p
    return out


def shared(values: Iterable[T]) -> list[T]:
    """Contract 6: the one list holding ``values`` (replica ids or directory ids), shared, never to be changed."""
    key = tuple(values)
    out = _shared.get(key)
    if out is None:
        if len(_shared) >= SHARED_MAX:
            _shared.clear()
        out = _shared[key] = list(key)
    return out


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
    if image.pending_transaction is not None:  # the image's own list (MetadataImage.copy copies it)
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
        image.other = (*image.other, (key, version, r))
    # key < 0: a value that is no framed metadata record holds no fact of the cluster (image invariant 2a)


def _register_broker(image: MetadataImage, r: Any) -> None:
    image.brokers = image.brokers.set(
        r.broker_id,
        BrokerState(
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
        ),
    )


def _unregister_broker(image: MetadataImage, r: Any) -> None:
    b = image.brokers.get(r.broker_id)
    if b is not None and b.epoch == r.broker_epoch:
        image.brokers = image.brokers.delete(r.broker_id)


def _broker_change(image: MetadataImage, r: Any) -> None:
    b = image.brokers.get(r.broker_id)
    if b is None or b.epoch != r.broker_epoch:
        return
    fenced = True if r.fenced == 1 else False if r.fenced == -1 else b.fenced
    shutdown = True if r.in_controlled_shutdown == 1 else b.in_controlled_shutdown
    dirs = list(r.log_dirs) if r.log_dirs else b.log_dirs
    new = dataclasses.replace(b, fenced=fenced, in_controlled_shutdown=shutdown, log_dirs=dirs)
    image.brokers = image.brokers.set(r.broker_id, new)


def _fence(fenced: bool) -> Any:
    def run(image: MetadataImage, r: Any) -> None:
        b = image.brokers.get(r.id)
        if b is not None and b.epoch == r.epoch:
            image.brokers = image.brokers.set(r.id, dataclasses.replace(b, fenced=fenced))

    return run


def _topic(image: MetadataImage, r: Any) -> None:
    old = image.topics.get(r.topic_id)
    if old is not None:  # a topic's state starts over: its partitions leave the indexes
        _unindex(image, old)
    image.topics = image.topics.set(r.topic_id, TopicState(r.name, r.topic_id, owner=image.owner))
    image.topic_ids = image.topic_ids.set(r.name, r.topic_id)


def _remove_topic(image: MetadataImage, r: Any) -> None:
    t = image.topics.get(r.topic_id)
    if t is not None:
        _unindex(image, t)
        image.topics = image.topics.delete(r.topic_id)
        if t.name in image.topic_ids:
            image.topic_ids = image.topic_ids.delete(t.name)
        if (TOPIC_RESOURCE, t.name) in image.configs:
            image.configs = image.configs.delete((TOPIC_RESOURCE, t.name))


def _partition(image: MetadataImage, r: Any) -> None:
    t = image.topics.get(r.topic_id)
    if t is None:
        return
    p = PartitionState(
        replicas=shared(r.replicas),
        isr=shared(r.isr),
        removing_replicas=shared(r.removing_replicas),
        adding_replicas=shared(r.adding_replicas),
        leader=r.leader,
        leader_recovery_state=r.leader_recovery_state,
        leader_epoch=r.leader_epoch,
        partition_epoch=r.partition_epoch,
        directories=shared(r.directories),
        elr=shared(r.eligible_leader_replicas or ()),
        last_known_elr=shared(r.last_known_elr or ()),
    )
    _set_partition(image, t, r.partition_id, p)


def _unindex(image: MetadataImage, t: TopicState) -> None:
    for pid, p in t.partitions.items():
        partition_index.update(image, t.topic_id, pid, p, None)


def _set_partition(image: MetadataImage, t: TopicState, pid: int, p: PartitionState) -> None:
    p = _interned(p)
    partition_index.update(image, t.topic_id, pid, t.partitions.get(pid), p)
    if t.owner is image.owner:  # made by this image since its last copy: held by no other (image 3b)
        t.partitions = t.partitions.set(pid, p)
    else:
        new = TopicState(t.name, t.topic_id, t.partitions.set(pid, p), image.owner)
        image.topics = image.topics.set(t.topic_id, new)


def _partition_change(image: MetadataImage, r: Any) -> None:
    t = image.topics.get(r.topic_id)
    p = t.partitions.get(r.partition_id) if t is not None else None
    if t is not None and p is not None:
        new = dataclasses.replace(p)
        change_partition(new, r)
        _set_partition(image, t, r.partition_id, new)


def change_partition(p: PartitionState, r: Any) -> None:
    """Contract 4 for one PartitionChangeRecord on ``p``, a fresh copy no image holds yet (each changed field gets
    another shared list, contract 6, so a ``dataclasses.replace`` copy of a partition can be changed without
    touching the original)."""
    if r.isr is not None:
        p.isr = shared(r.isr)
    if r.leader != NO_LEADER_CHANGE:
        p.leader = r.leader
        p.leader_epoch += 1
    if r.replicas is not None:
        p.replicas = shared(r.replicas)
    if r.removing_replicas is not None:
        p.removing_replicas = shared(r.removing_replicas)
    if r.adding_replicas is not None:
        p.adding_replicas = shared(r.adding_replicas)
    if r.leader_recovery_state != -1:
        p.leader_recovery_state = r.leader_recovery_state
    if r.directories is not None:
        p.directories = shared(r.directories)
    if getattr(r, "eligible_leader_replicas", None) is not None:
        p.elr = shared(r.eligible_leader_replicas)
    if getattr(r, "last_known_elr", None) is not None:
        p.last_known_elr = shared(r.last_known_elr)
    p.partition_epoch += 1


def _config(image: MetadataImage, r: Any) -> None:
    image.configs = _set_entry(image.configs, (r.resource_type, r.resource_name), r.name, r.value)


def _set_entry(store: Map[Any, Map[str, Any]], key: Any, name: str, value: Any) -> Map[Any, Map[str, Any]]:
    """``store`` with ``store[key][name]`` set to ``value`` (None: removed; an entity left empty is dropped)."""
    entries: Map[str, Any] = store.get(key, Map())
    if value is not None:
        return store.set(key, entries.set(name, value))
    if name not in entries:
        return store
    entries = entries.delete(name)
    return store.set(key, entries) if entries else store.delete(key)


def _feature(image: MetadataImage, r: Any) -> None:
    if r.feature_level != 0:
        image.features = image.features.set(r.name, r.feature_level)
    elif r.name in image.features:
        image.features = image.features.delete(r.name)


def _quota(image: MetadataImage, r: Any) -> None:
    entity = tuple(sorted((e.entity_type, e.entity_name) for e in r.entity))
    image.quotas = _set_entry(image.quotas, entity, r.key, None if r.remove else r.value)


def _producer_ids(image: MetadataImage, r: Any) -> None:
    image.next_producer_id = r.next_producer_id


def _register_controller(image: MetadataImage, r: Any) -> None:
    c = ControllerState(r.controller_id, r.incarnation_id, _listeners(r.end_points), _features(r.features))
    image.controllers = image.controllers.set(r.controller_id, c)


def _clear_elr(image: MetadataImage, r: Any) -> None:
    for t in list(image.topics.values()):
        if r.topic_name in ("", t.name):
            for pid, p in t.partitions.items():
                if p.elr or p.last_known_elr:  # a change that empties both fields (partition epoch + 1)
                    new = dataclasses.replace(
                        p, elr=shared(()), last_known_elr=shared(()), partition_epoch=p.partition_epoch + 1
                    )
                    _set_partition(image, image.topics[t.topic_id], pid, new)


def _keep(store: str, key: Any) -> Any:
    def run(image: MetadataImage, r: Any) -> None:
        setattr(image, store, getattr(image, store).set(key(r), r))

    return run


def _drop(store: str, key: Any) -> Any:
    def run(image: MetadataImage, r: Any) -> None:
        m = getattr(image, store)
        if key(r) in m:
            setattr(image, store, m.delete(key(r)))

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
