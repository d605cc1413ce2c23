"""Small value types shared by every module of the core.

Invariants:
1. A replica is identified by its :class:`ReplicaKey` (node id, directory id). ``directory_id`` is ``None``
   when unknown; an unknown directory id matches any directory id (KIP-853 voter keys).
2. ``Role`` names the six states Kafka ships (KIP-595 + KIP-996); every change of role goes through
   :mod:`kraftd.core.transitions`.
3. :class:`ElectionState` is exactly what is made durable (Kafka's quorum-state file): epoch, leader id
   (-1 unknown) and the voted key. Nothing else about the role survives a restart.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import Enum

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)
METADATA_PARTITION = 0
NO_LEADER = -1
ZERO_UUID = uuid.UUID(int=0)


class Role(Enum):
    UNATTACHED = "unattached"
    PROSPECTIVE = "prospective"
    CANDIDATE = "candidate"
    LEADER = "leader"
    FOLLOWER = "follower"
    RESIGNED = "resigned"


@dataclass(frozen=True, slots=True)
class ReplicaKey:
    id: int
    directory_id: uuid.UUID | None = None

    def matches(self, other: ReplicaKey) -> bool:
        """Same id, and directory ids equal unless either side is unknown (invariant 1)."""
        if self.id != other.id:
            return False
        if self.directory_id is None or other.directory_id is None:
            return True
        return self.directory_id == other.directory_id


@dataclass(frozen=True, slots=True)
class ElectionState:
    epoch: int = 0
    leader_id: int = NO_LEADER
    voted_key: ReplicaKey | None = None


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets [first, last] (inclusive) an append will occupy, in ``epoch``."""

    first: int
    last: int
    epoch: int


@dataclass(frozen=True, slots=True)
class Listener:
    """One endpoint a voter is reached at (VotersRecord / AddRaftVoter listeners)."""

    name: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class VoterSet:
    """The voters of the quorum (KIP-853: the latest VotersRecord in the log, or the bootstrap set) and, where
    known, each voter's listeners (``listeners``: (voter id, endpoints) pairs)."""

    voters: tuple[ReplicaKey, ...]
    listeners: tuple[tuple[int, tuple[Listener, ...]], ...] = ()

    def endpoints_of(self, node_id: int) -> tuple[Listener, ...]:
        return next((eps for i, eps in self.listeners if i == node_id), ())

    def without(self, key: ReplicaKey) -> VoterSet:
        keep = tuple(v for v in self.voters if not (v.id == key.id and v.matches(key)))
        return VoterSet(keep, tuple((i, e) for i, e in self.listeners if i != key.id))

    def with_voter(self, key: ReplicaKey, endpoints: tuple[Listener, ...]) -> VoterSet:
        return VoterSet((*self.voters, key), (*self.listeners, (key.id, endpoints)))

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(v.id for v in self.voters)

    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def is_voter(self, key: ReplicaKey) -> bool:
        for v in self.voters:  # a loop, not any(<generator>): called several times in every leader step
            if v.matches(key):
                return True
        return False

    def has_id(self, node_id: int) -> bool:
        for v in self.voters:
            if v.id == node_id:
                return True
        return False

    def key_of(self, node_id: int) -> ReplicaKey | None:
        for v in self.voters:
            if v.id == node_id:
                return v
        return None

    @staticmethod
    def of(*ids: int) -> VoterSet:
        return VoterSet(tuple(ReplicaKey(i) for i in ids))
