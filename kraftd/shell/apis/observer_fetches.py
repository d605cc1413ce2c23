"""Observers' Fetches stepped in bounded chunks, so a wave of them does not hold the listener's other requests.

After each commit every observer (a broker, issue 24: 1,000 of them) fetches again within a few milliseconds, and
each Fetch is a step of the core (kraftd.shell.apis.routing contract 6a). Stepped as they are read, a wave is one
turn of the loop of about a thousand steps (100-140 ms at 1,000 brokers), and a heartbeat read in that turn waits
behind all of it: the heartbeat tail at 1,000 brokers (docs/SWARM.md, session 13).

Contracts:
1. :meth:`ObserverFetches.offer` queues an observer's Fetch (its replica id is not a voter's): it is stepped later
   in this turn or a next one, in the order offered; its answer comes from inside the step that makes it, as on the
   fast path (a long poll is answered later anyway). A voter's Fetch is never queued (the commit path).
2. The queue is stepped ``CHUNK`` Fetches per callback of the loop; a callback that leaves Fetches queued schedules
   the next one behind what the loop has ready meanwhile (``call_soon``), so a request read while a wave is
   stepped waits for at most one chunk of it.
3. A queued Fetch whose node is stopping meanwhile is not answered (the listener closes its connection).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

CHUNK = 64

Step = Callable[[Any, Callable[[Any], None]], bool]


class ObserverFetches:
    def __init__(self, step: Step, chunk: int = CHUNK) -> None:
        self.step, self.chunk = step, chunk
        self.queue: deque[tuple[Any, Callable[[Any], None]]] = deque()
        self.scheduled = False
        self.callbacks = 0  # drain callbacks run (counted work)

    def offer(self, body: Any, answer: Callable[[Any], None]) -> None:
        """Contract 1."""
        self.queue.append((body, answer))
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._drain)

    def _drain(self) -> None:
        """Contract 2."""
        self.callbacks += 1
        queue, step = self.queue, self.step
        for _ in range(min(self.chunk, len(queue))):
            body, answer = queue.popleft()
            step(body, answer)  # False: stopping (contract 3)
        if queue:
            asyncio.get_running_loop().call_soon(self._drain)
        else:
            self.scheduled = False
