"""A connection's done callback for its requests' futures (kwire.server contracts 2, 11 and 11j).

Contract 11j (issue 25): a request holds no closure of its own while it waits. A connection makes one
:class:`Settle` for its handler tasks and one for its fast slots when it opens, and both run in one context
copied then (``add_done_callback`` copies the current context for every call otherwise). A linearizable read
parked on its barrier used to hold ~40 objects the collector tracks, 26 of them five closures' functions, cell
tuples and cells; a turn's batch of parked reads is alive at the young collections inside that turn, so each of
those objects was scanned and promoted by one or two collections before reference counting freed it.
"""

from __future__ import annotations

import asyncio
from contextvars import Context, copy_context


class Settle:
    """Contract 2: a request done frees its slot; contract 11 (with ``unordered``): a fast request's slot done while
    not in the writer's order leaves the list, and if it failed (contract 3) the writer gets it, closes the
    connection and logs why."""

    __slots__ = ("slots", "in_flight", "unordered", "order")

    def __init__(
        self,
        slots: asyncio.Semaphore,
        in_flight: set[asyncio.Future[bytes | None]],
        unordered: list[asyncio.Future[bytes | None]] | None = None,
        order: asyncio.Queue[asyncio.Future[bytes | None] | None] | None = None,
    ) -> None:
        self.slots, self.in_flight, self.unordered, self.order = slots, in_flight, unordered, order

    def __call__(self, task: asyncio.Future[bytes | None]) -> None:
        self.slots.release()
        self.in_flight.discard(task)
        unordered = self.unordered
        if unordered is not None and task in unordered:
            unordered.remove(task)
            if not task.cancelled() and task.exception() is not None and self.order is not None:
                self.order.put_nowait(task)


def settles(
    slots: asyncio.Semaphore,
    in_flight: set[asyncio.Future[bytes | None]],
    unordered: list[asyncio.Future[bytes | None]],
    order: asyncio.Queue[asyncio.Future[bytes | None] | None],
) -> tuple[Settle, Settle, Context]:
    """Contract 11j: a connection's callbacks (for its handler tasks, for its fast slots) and their context."""
    return Settle(slots, in_flight), Settle(slots, in_flight, unordered, order), copy_context()
