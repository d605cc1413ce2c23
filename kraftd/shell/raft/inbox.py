"""The driver's event inbox: a FIFO with one waiter that costs a future and a timer per wait, not a task.

Contracts:
1. Events come out in the order they were put, each exactly once; every event put with ``put_nowait`` before any
   put with ``put_later`` (contract 5).
2. :meth:`EventInbox.get` returns the next event, or None once ``timeout`` seconds pass with none queued.
3. ``put_nowait`` never blocks and may be called from any coroutine or callback on the loop's thread.
4. ``idle()`` is True while a ``get`` waits on an empty inbox; ``nudge()`` ends that wait with None early (the
   driver re-reads its deadline, kraftd.shell.node contract 4a); ``pop()`` takes the next event without
   waiting (None when empty), in the same order as ``get``.
5. ``put_later`` queues an observer's request (kraftd.shell.apis.observer_fetches) in a second lane, taken only
   when the first is empty, in the order put: a voter's Fetch, a peer's response or a Tick that queues while the
   driver is busy is stepped before the observers' Fetches queued ahead of it (issue 24, session 21: a commit waited
   behind up to 64 observers' catch-up Fetches of up to 8 MiB each, queued by one callback of the observer drain).
   Each observer request is independent of the others and of the Raft traffic, so the core sees the same requests.
"""

from __future__ import annotations

import asyncio
from collections import deque

from kraftd.core.events import Event


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class EventInbox:
    def __init__(self) -> None:
        self._items: deque[Event] = deque()
        self._later: deque[Event] = deque()  # contract 5
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, event: Event) -> None:
        self._items.append(event)
        if self._waiter is not None:
            _wake(self._waiter)

    def put_later(self, event: Event) -> None:
        """Contract 5."""
        self._later.append(event)
        if self._waiter is not None:
            _wake(self._waiter)

    def idle(self) -> bool:
        return self._waiter is not None and not self._items and not self._later

    def nudge(self) -> None:
        if self._waiter is not None:
            _wake(self._waiter)

    def pop(self) -> Event | None:
        if self._items:
            return self._items.popleft()
        return self._later.popleft() if self._later else None

    def qsize(self) -> int:
        return len(self._items) + len(self._later)

    async def get(self, timeout: float) -> Event | None:
        if not self._items and not self._later:
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(timeout, _wake, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        return self.pop()
