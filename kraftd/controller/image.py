"""The metadata image: the cluster's metadata as replayed from committed records (Kafka's MetadataImage).

Invariants:
1. An image changes only through :func:`kraftd.controller.apply.apply_record`; nothing else writes to it.
2. Every record type Kafka 4.3.1 ships has a home here; types this controller does not act on are still kept
   (``other``), so a replayed image loses no metadata the log holds.
2a. A value that is not a framed metadata record (a load generator's raw bytes; Kafka's controller would stop on
   it) is skipped: it is no fact of the cluster, so neither the image nor a snapshot of it grows with such load.
3. ``copy()`` is a deep, independent copy (the leader's uncommitted view starts as one); ``checksum()`` is a
   deterministic digest of the whole image, equal on every node that applied the same records.
4. Security metadata keeps the records themselves: ``acls`` id -> AccessControlEntryRecord, ``scram`` (user,
   mechanism) -> UserScramCredentialRecord, ``delegation_tokens`` token id -> DelegationTokenRecord; ``quotas``
   entity -> {key: value}. Their shapes are documented in kraftd.controller.acls / scram / tokens / quotas.
"""

from __future__ import annotations

import copy
import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any


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
    partitions: dict[int, PartitionState] = field(default_factory=dict)


@dataclass(slots=True)
class MetadataImage:
    """Invariant 1-3. ``offset`` is the offset of the last record applied (-1: none)."""

    offset: int = -1
    features: dict[str, int] = field(default_factory=dict)
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    controllers: dict[int, ControllerState] = field(default_factory=dict)
    topics: dict[uuid.UUID, TopicState] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    next_producer_id: int = 0
    quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(default_factory=dict)
    scram: dict[tuple[str, int], Any] = field(default_factory=dict)
    acls: dict[uuid.UUID, Any] = field(default_factory=dict)
    delegation_tokens: dict[str, Any] = field(default_factory=dict)
    other: list[tuple[int, int, Any]] = field(default_factory=list)  # (api key, version, record)
    # Records of an open metadata transaction (KIP-868), applied together at its end.
    pending_transaction: list[tuple[int, int, Any]] | None = None

    @property
    def metadata_version(self) -> int:
        """The finalized metadata.version level, 0 before the bootstrap records are applied."""
        return self.features.get("metadata.version", 0)

    def copy(self) -> MetadataImage:
        return copy.deepcopy(self)

    def checksum(self) -> str:
        """Invariant 3: a digest of a canonical rendering (dicts sorted by key)."""
        return hashlib.sha256(_canonical(self).encode()).hexdigest()

    def live_brokers(self) -> list[int]:
        """Registered, unfenced brokers not in controlled shutdown, by id."""
        return sorted(b for b, s in self.brokers.items() if not s.fenced and not s.in_controlled_shutdown)


def _canonical(value: Any) -> str:
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: repr(kv[0]))
        return "{" + ",".join(f"{_canonical(k)}:{_canonical(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    if hasattr(value, "__dataclass_fields__"):
        names = sorted(value.__dataclass_fields__)
        return (
            type(value).__name__ + "(" + ",".join(f"{n}={_canonical(getattr(value, n))}" for n in names) + ")"
        )
    return repr(value)
