"""A leader's parked Fetches (kraftd.core.replication invariants 2, 2b): the long polls of voters and observers.

At 1,000 brokers a leader holds about 1,000 parked observer Fetches and steps about 2,000 times a second; a walk
over all of them in every step made each step O(observers) (issue 24). Here:

Invariants:
1. Parking, taking one by token and the next deadline are O(log parked); a step answers only what is due, in
   O(answered + expired entries), never walking the other parked Fetches. ``heap`` holds (deadline, seq, token,
   fetch) of every parked Fetch; an entry whose fetch is no longer parked under its token is stale and dropped
   when it reaches the top.
2. ``due`` holds the tokens whose high-watermark answer is due (``hwm_step`` >= 0, replication invariant 2b); it
   is empty unless such an answer is pending.
3. Parked Fetches are iterated, and taken when all are answered, in the order they were parked.
4. ``voters`` holds the tokens of the parked Fetches whose replica id is a voter's (kraftd.core.replication
   invariant 2d): an append takes those alone, in O(voters).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(slots=True)
class ParkedFetch:
    replica_id: int
    fetch_offset: int
    max_bytes: int
    deadline: int
    hwm_step: int = -1  # >= 0: only a high-watermark answer is due, from the step after this one (2b)
    voter: bool = False  # invariant 4


class ParkedFetches:
    __slots__ = ("by_token", "heap", "due", "voters", "_seq")

    def __init__(self) -> None:
        self.by_token: dict[int, ParkedFetch] = {}
        self.heap: list[tuple[int, int, int, ParkedFetch]] = []
        self.due: dict[int, int] = {}  # token -> the step its high-watermark answer is due from (invariant 2)
        self.voters: dict[int, ParkedFetch] = {}  # invariant 4
        self._seq = 0

    def __len__(self) -> int:
        return len(self.by_token)

    def __bool__(self) -> bool:
        return bool(self.by_token)

    def __contains__(self, token: object) -> bool:
        return token in self.by_token

    def __iter__(self) -> Iterator[int]:
        return iter(self.by_token)

    def __getitem__(self, token: int) -> ParkedFetch:
        return self.by_token[token]

    def values(self) -> Iterator[ParkedFetch]:
        return iter(self.by_token.values())

    def park(self, token: int, fetch: ParkedFetch) -> None:
        self.by_token[token] = fetch
        self._seq += 1
        heapq.heappush(self.heap, (fetch.deadline, self._seq, token, fetch))
        if fetch.hwm_step >= 0:
            self.due[token] = fetch.hwm_step
        if fetch.voter:
            self.voters[token] = fetch

    def pop(self, token: int) -> ParkedFetch | None:
        self.due.pop(token, None)
        self.voters.pop(token, None)
        return self.by_token.pop(token, None)

    def take_all(self) -> list[tuple[int, ParkedFetch]]:
        """Every parked Fetch, in parking order (invariant 3), none parked after."""
        out = list(self.by_token.items())
        self.by_token.clear()
        self.heap.clear()
        self.due.clear()
        self.voters.clear()
        return out

    def take_voters(self) -> list[tuple[int, ParkedFetch]]:
        """Every parked voter's Fetch, in parking order (invariants 3, 4); observers' stay parked."""
        out = list(self.voters.items())
        self.voters.clear()
        for token, _ in out:
            del self.by_token[token]
            self.due.pop(token, None)
        return out

    def mark_hwm_due(self, step: int) -> None:
        """A new high watermark: every parked Fetch not yet due gets its answer from ``step`` (invariant 2b)."""
        for token, p in self.by_token.items():
            if p.hwm_step < 0:
                p.hwm_step = step
                self.due[token] = step

    def any_due(self) -> bool:
        return bool(self.due)

    def take_ready(self, now: int, step: int) -> list[tuple[int, ParkedFetch]]:
        """The parked Fetches whose deadline passed or whose high-watermark answer is due at ``step``, taken."""
        out: list[tuple[int, ParkedFetch]] = []
        if self.due:
            for token in [t for t, s in self.due.items() if s <= step]:
                del self.due[token]
                self.voters.pop(token, None)
                out.append((token, self.by_token.pop(token)))
        heap = self.heap
        while heap and heap[0][0] <= now:
            _, _, token, fetch = heapq.heappop(heap)
            if self.by_token.get(token) is fetch:
                del self.by_token[token]
                self.due.pop(token, None)
                self.voters.pop(token, None)
                out.append((token, fetch))
        return out

    def next_deadline(self) -> int | None:
        """The earliest deadline of a parked Fetch (None when none is parked); drops stale heap tops."""
        heap = self.heap
        while heap and self.by_token.get(heap[0][2]) is not heap[0][3]:
            heapq.heappop(heap)
        if not self.by_token:
            heap.clear()
        return heap[0][0] if heap else None
