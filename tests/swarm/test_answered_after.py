"""tools.swarm.swarm: a failover's "every heartbeat answered again" reads only the heartbeats recorded since the
kill, not the whole run's."""

from __future__ import annotations

from tools.swarm.lifecycle import SwarmConfig
from tools.swarm.swarm import Swarm


class Counted(list):  # type: ignore[type-arg]
    """The swarm's heartbeat record, counting the entries read."""

    read = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        for item in super().__iter__():
            Counted.read += 1
            yield item

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        Counted.read += 1
        return super().__getitem__(i)


def test_answered_after_a_mark_reads_only_the_heartbeats_since_and_finds_the_same() -> None:
    swarm = Swarm(SwarmConfig("c", {1: ("127.0.0.1", 1)}), 3)
    old = [(s / 10, 0.01, 0, 100 + s % 3, 1) for s in range(100_000)]  # answered before t = 10_000
    mark = len(old)
    new = [(10_000.0, 0.5, 0, 100, 2), (10_000.1, 0.1, 0, 101, 1), (10_000.2, 0.1, 0, 101, 3)]
    new += [(10_000.3, 0.2, 7, 102, 3), (10_000.4, 0.1, 0, 102, 2)]
    swarm.heartbeats = Counted(old + new)
    want = {100: 0.5, 101: 0.3, 102: 0.5}
    full = swarm.answered_after(10_000.0, exclude_node=1)
    assert full.keys() == want.keys() and all(abs(full[b] - v) < 1e-6 for b, v in want.items())
    Counted.read = 0
    assert swarm.answered_after(10_000.0, exclude_node=1, start=mark) == full
    assert Counted.read <= len(new)
