"""Rack-aware striped replica placement (the behaviour of Kafka 4.3.1's StripedReplicaPlacer), deterministic
given the injected ``random.Random``.

Contracts:
1. Brokers are grouped by rack (None is a rack of its own); racks are visited in sorted order (None first),
   brokers of a rack in id order from a per-rack start offset. Each (rack, broker list) keeps an iteration epoch:
   within one epoch a list yields each of its brokers at most once, and a new epoch moves its start on by one.
2. A partition's leader (first replica) is the next broker of the first rack, from the rotating rack offset,
   that still has an unfenced broker this epoch; the other replicas go round the racks from that offset,
   skipping the leader's rack once, one broker per rack visit, so replicas spread over as many racks as exist.
3. After as many partitions as there are unfenced brokers, racks and broker lists are shuffled with the
   injected random and the epoch restarts, so assignments do not repeat.
4. Continuing a topic (CreatePartitions): each rack's start is one past the last broker of that rack used by the
   topic's existing partitions, and the rack offset one past the rack of the last partition's leader;
   otherwise both come from the injected random.
5. Errors (InvalidReplicationFactor, Kafka's wording): rf < 1, rf above the number of brokers, no unfenced broker.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from kraftd.controller.image import MetadataImage


class PlacementError(ValueError):
    """The replication factor cannot be met (INVALID_REPLICATION_FACTOR)."""


@dataclass(slots=True)
class _Brokers:
    ids: list[int] = field(default_factory=list)
    index: int = 0
    offset: int = 0
    epoch: int = 0

    def start(self, rng: random.Random, previous: int | None = None) -> None:
        if self.ids:
            self.ids.sort()
            self.offset = (
                (previous + 1) % len(self.ids) if previous is not None else rng.randrange(len(self.ids))
            )

    def next(self, epoch: int) -> int:
        if not self.ids:
            return -1
        if epoch != self.epoch:
            self.epoch, self.index, self.offset = epoch, 0, (self.offset + 1) % len(self.ids)
        if self.index >= len(self.ids):
            return -1
        broker = self.ids[(self.index + self.offset) % len(self.ids)]
        self.index += 1
        return broker


@dataclass(slots=True)
class _Rack:
    unfenced: _Brokers = field(default_factory=_Brokers)
    fenced: _Brokers = field(default_factory=_Brokers)

    def next(self, epoch: int) -> int:
        got = self.unfenced.next(epoch)
        return got if got >= 0 else self.fenced.next(epoch)


def _rack_key(name: str | None) -> tuple[int, str]:
    return (0, "") if name is None else (1, name)


class RackPlacer:
    """One topic's placement run (contracts 1-4). ``brokers`` are (id, rack, fenced)."""

    def __init__(
        self,
        rng: random.Random,
        brokers: Sequence[tuple[int, str | None, bool]],
        existing: Sequence[Sequence[int]] = (),
    ) -> None:
        self.rng = rng
        self.racks: dict[str | None, _Rack] = {}
        rack_of: dict[int, str | None] = {}
        for bid, rack, fenced in brokers:
            rack_of[bid] = rack
            r = self.racks.setdefault(rack, _Rack())
            (r.fenced if fenced else r.unfenced).ids.append(bid)
        for name, r in self.racks.items():
            r.fenced.start(rng)
            r.unfenced.start(rng, _previous_index(existing, rack_of, name, sorted(r.unfenced.ids)))
        self.names = sorted(self.racks, key=_rack_key)
        self.total = len(brokers)
        self.unfenced = sum(1 for _, _, f in brokers if not f)
        self.epoch = 0
        last_rack = rack_of.get(existing[-1][0], _MISSING) if existing and existing[-1] else _MISSING
        if last_rack is not _MISSING and last_rack in self.names:
            self.offset = (self.names.index(last_rack) + 1) % len(self.names)
        else:
            self.offset = rng.randrange(len(self.names)) if self.names else 0

    def check(self, rf: int) -> None:
        """Contract 5."""
        if rf <= 0:
            raise PlacementError(f"Invalid replication factor {rf}: the replication factor must be positive.")
        if self.unfenced == 0:
            raise PlacementError(
                "All brokers are currently fenced, or have all their log directories cordoned."
            )
        if rf > self.total:
            raise PlacementError(
                f"The target replication factor of {rf} cannot be reached because only {self.total} "
                "broker(s) are registered or some brokers have all their log directories cordoned."
            )

    def place(self, rf: int) -> list[int]:
        """Contracts 2 and 3: the replicas of the next partition, leader first."""
        self.check(rf)
        if self.epoch == self.unfenced and self.unfenced > 1:
            self.rng.shuffle(self.names)
            for r in self.racks.values():
                self.rng.shuffle(r.fenced.ids)
                self.rng.shuffle(r.unfenced.ids)
            self.epoch = 0
        if self.offset == len(self.names):
            self.offset = 0
        first = self.offset
        while True:
            leader = self.racks[self.names[first]].unfenced.next(self.epoch)
            if leader >= 0:
                break
            first = (first + 1) % len(self.names)
        out = [leader]
        at = self.offset
        skip = first
        while len(out) < rf:
            got = -1
            while got < 0:
                if at == skip:
                    skip = -1
                else:
                    got = self.racks[self.names[at]].next(self.epoch)
                at = (at + 1) % len(self.names)
            out.append(got)
        self.epoch += 1
        self.offset += 1
        return out


_MISSING = object()


def _previous_index(
    existing: Sequence[Sequence[int]], rack_of: dict[int, str | None], rack: str | None, ids: list[int]
) -> int | None:
    for replicas in reversed(existing):
        for b in replicas:
            if b in rack_of and rack_of[b] == rack:
                return ids.index(b) if b in ids else None
    return None


def place(
    rng: random.Random,
    brokers: Sequence[tuple[int, str | None, bool]],
    partitions: int,
    rf: int,
    existing: Sequence[Sequence[int]] = (),
) -> list[list[int]]:
    """``partitions`` new partitions of ``rf`` replicas each (contracts 1-5)."""
    placer = RackPlacer(rng, brokers, existing)
    placer.check(rf)
    return [placer.place(rf) for _ in range(partitions)]


def usable(image: MetadataImage) -> list[tuple[int, str | None, bool]]:
    """The brokers new replicas may go to (unfenced, not in controlled shutdown), as (id, rack, fenced)."""
    return [
        (b, s.rack, False)
        for b, s in sorted(image.brokers.items())
        if not s.fenced and not s.in_controlled_shutdown
    ]
