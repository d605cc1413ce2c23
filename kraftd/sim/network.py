"""The simulated network: seeded delay, drops, duplicates (reordering follows from random delays),
symmetric and one-way partitions, and nodes that are down.

Invariants:
1. Every random choice comes from the simulator's one ``random.Random``; the same seed replays the same run.
2. A message is checked against partitions when it would be delivered: a link cut while a message is in
   flight loses it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class NetworkFaults:
    min_delay_ms: int = 1
    max_delay_ms: int = 10
    drop_rate: float = 0.0  # silently lost: the sender only learns by its request timeout
    disconnect_rate: float = 0.0  # connection reset: the sender gets a synthesized error response
    duplicate_rate: float = 0.0


@dataclass(slots=True)
class Network:
    rng: random.Random
    faults: NetworkFaults = field(default_factory=NetworkFaults)
    blocked: set[tuple[int, int]] = field(default_factory=set)

    def disconnected(self) -> bool:
        return bool(self.faults.disconnect_rate) and self.rng.random() < self.faults.disconnect_rate

    def delays(self) -> list[int]:
        """Delivery delays for one send: [] when dropped, two entries when duplicated."""
        f = self.faults
        if f.drop_rate and self.rng.random() < f.drop_rate:
            return []
        out = [self.rng.randint(f.min_delay_ms, f.max_delay_ms)]
        if f.duplicate_rate and self.rng.random() < f.duplicate_rate:
            out.append(self.rng.randint(f.min_delay_ms, f.max_delay_ms * 3))
        return out

    def reachable(self, src: int, dst: int) -> bool:
        return (src, dst) not in self.blocked

    def cut(self, src: int, dst: int) -> None:
        self.blocked.add((src, dst))

    def cut_both(self, a: int, b: int) -> None:
        self.blocked.add((a, b))
        self.blocked.add((b, a))

    def isolate(self, node: int, others: list[int]) -> None:
        for o in others:
            if o != node:
                self.cut_both(node, o)

    def split(self, side_a: list[int], side_b: list[int]) -> None:
        for a in side_a:
            for b in side_b:
                self.cut_both(a, b)

    def heal(self) -> None:
        self.blocked.clear()


def wire_roundtrip(rng: random.Random, fraction: float) -> Callable[[Any], Any]:
    """Pass ``fraction`` of messages through encode/decode of the generated classes at their newest
    version, so the simulator also exercises the real wire format."""

    def roundtrip(msg: Any) -> Any:
        if rng.random() >= fraction:
            return msg
        cls = type(msg)
        version = cls.HIGHEST_VERSION
        return cls.decode(msg.encode(version), version)

    return roundtrip
