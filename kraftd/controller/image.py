"""The metadata image: the cluster's metadata as replayed from committed records (Kafka's MetadataImage).

Invariants:
1. An image changes only through :func:`kraftd.controller.apply.apply_record`; nothing else writes to it.
2. Every record type Kafka 4.3.1 ships has a home here; types this controller does not act on are still kept
   (``other``), so a replayed image loses no metadata the log holds.
2a. A value that is not a framed metadata record (a load generator's raw bytes; Kafka's controller would stop on
   it) is skipped: it is no fact of the cluster, so neither the image nor a snapshot of it grows with such load.
3. The image is persistent (issue 22, as Kafka's timeline structures): every collection is an immutable HAMT map
   (``immutables.Map``) or tuple, and every state object in it (BrokerState, PartitionState, TopicState, ...)
   is a value that is never changed once an image holds it: ``apply_record`` replaces what a record changes
   (copy-on-write at the apply sites) and shares everything else. So ``copy()`` is O(1) (the leader's
   uncommitted view starts as one, and dropping it costs nothing), an image handed to another thread (a
   snapshot writer) stays as it was while replay goes on, and applying a record costs O(log n) of the maps it
   touches. ``pending_transaction`` is the one mutable list; ``copy()`` copies it (O(transaction), not O(image)).
3b. Ownership: a TopicState whose ``owner`` is its image's ``owner`` token was made by that image after its last
   ``copy()`` and is held by no other image, so ``apply_record`` may set its partitions map in place (replay of a
   topic's partitions then allocates one TopicState, not one per record). ``copy()`` gives both images new tokens,
   so nothing made before a copy is ever changed again. ``owner`` is bookkeeping: no checksum or snapshot sees it.
3a. ``checksum()`` is a deterministic digest of the whole image (maps rendered as dicts sorted by key), equal on
   every node that applied the same records.
4. Security metadata keeps the records themselves: ``acls`` id -> AccessControlEntryRecord, ``scram`` (user,
   mechanism) -> UserScramCredentialRecord, ``delegation_tokens`` token id -> DelegationTokenRecord; ``quotas``
   entity -> {key: value}. Their shapes are documented in kraftd.controller.acls / scram / tokens / quotas.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any

from immutables import Map

NO_ENTRIES: Map[str, Any] = Map()  # the entries of a config resource or quota entity the image does not hold


@dataclass(slots=True)
class BrokerState:
    """A registered broker: its registration record plus the changes applied since."""

    broker_id: int
    epoch: int
    incarnation_id: uuid.UUID
    listeners: list[tuple[str, str, int, int]]  # (name, host, port, security protocol)
    features: dict[str, tuple[int, int]]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    log_dirs: list[uuid.UUID]
    registration_offset: int  # offset of the RegisterBrokerRecord (a broker replayed past it has caught up)


@dataclass(slots=True)
class ControllerState:
    controller_id: int
    incarnation_id: uuid.UUID
    listeners: list[tuple[str, str, int, int]]
    features: dict[str, tuple[int, int]]


@dataclass(slots=True)
class PartitionState:
    replicas: list[int]
    isr: list[int]
    removing_replicas: list[int]
    adding_replicas: list[int]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    directories: list[uuid.UUID]
    elr: list[int]
    last_known_elr: list[int]


@dataclass(slots=True)
class TopicState:
    name: str
    topic_id: uuid.UUID
    partitions: Map[int, PartitionState] = field(default_factory=Map)
    owner: object = field(default=None, compare=False, repr=False)  # invariant 3b


@dataclass(slots=True)
class MetadataImage:
    """Invariant 1-3. ``offset`` is the offset of the last record applied (-1: none)."""

    offset: int = -1
    features: Map[str, int] = field(default_factory=Map)
    brokers: Map[int, BrokerState] = field(default_factory=Map)
    controllers: Map[int, ControllerState] = field(default_factory=Map)
    topics: Map[uuid.UUID, TopicState] = field(default_factory=Map)
    topic_ids: Map[str, uuid.UUID] = field(default_factory=Map)
    configs: Map[tuple[int, str], Map[str, str]] = field(default_factory=Map)
    next_producer_id: int = 0
    quotas: Map[tuple[tuple[str, str | None], ...], Map[str, float]] = field(default_factory=Map)
    scram: Map[tuple[str, int], Any] = field(default_factory=Map)
    acls: Map[uuid.UUID, Any] = field(default_factory=Map)
    delegation_tokens: Map[str, Any] = field(default_factory=Map)
    other: tuple[tuple[int, int, Any], ...] = ()  # (api key, version, record)
    # Partitions by broker, derived from ``topics`` (kraftd.controller.partition_index).
    isr_index: Map[int, Any] = field(default_factory=Map, compare=False, repr=False)
    elr_index: Map[int, Any] = field(default_factory=Map, compare=False, repr=False)
    leader_index: Map[int, Any] = field(default_factory=Map, compare=False, repr=False)
    # Records of an open metadata transaction (KIP-868), applied together at its end.
    pending_transaction: list[tuple[int, int, Any]] | None = None
    owner: object = field(default_factory=object, compare=False, repr=False)  # invariant 3b

    @property
    def metadata_version(self) -> int:
        """The finalized metadata.version level, 0 before the bootstrap records are applied."""
        return self.features.get("metadata.version", 0)

    def copy(self) -> MetadataImage:
        """Invariant 3: an independent image sharing every map with this one, in O(1)."""
        pending = self.pending_transaction
        self.owner = object()  # invariant 3b: what this image made so far is shared from now on
        return dataclasses.replace(
            self, pending_transaction=None if pending is None else list(pending), owner=object()
        )

    def checksum(self) -> str:
        """Invariant 3: a digest of a canonical rendering (dicts sorted by key)."""
        return hashlib.sha256(_canonical(self).encode()).hexdigest()

    def live_brokers(self) -> list[int]:
        """Registered, unfenced brokers not in controlled shutdown, by id."""
        return sorted(b for b, s in self.brokers.items() if not s.fenced and not s.in_controlled_shutdown)


_DERIVED = frozenset(("owner", "isr_index", "elr_index", "leader_index"))  # bookkeeping, not content


def _canonical(value: Any) -> str:
    if isinstance(value, dict | Map):
        items = sorted(value.items(), key=lambda kv: repr(kv[0]))
        return "{" + ",".join(f"{_canonical(k)}:{_canonical(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    if hasattr(value, "__dataclass_fields__"):
        names = sorted(n for n in value.__dataclass_fields__ if n not in _DERIVED)  # invariant 3b
        return (
            type(value).__name__ + "(" + ",".join(f"{n}={_canonical(getattr(value, n))}" for n in names) + ")"
        )
    return repr(value)
