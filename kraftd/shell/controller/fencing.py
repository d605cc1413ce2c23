"""Fencing a broker whose session timed out, in bounded writes (issue 22).

Fencing a broker moves every partition whose ISR holds it: at 100k partitions and 5 brokers that is ~60k
PartitionChangeRecords, which as one write held the leader's event loop (validate, encode, apply) and each
follower's (decode, replay) for seconds, past the fetch timeout.

Contracts:
1. :func:`fence_in_chunks` first moves the broker's partitions ``CHUNK`` at a time: each chunk's records are
   computed by kraftd.controller.brokers' own rules against the latest image for that chunk's partitions
   (``where``; found through the image's partitions-by-broker index, O(the broker's partitions)), and
   written (committed) before the next is computed, so each write is bounded and each is validated against the
   image it applies to. Between chunks the broker is still registered, unfenced, and out of the moved ISRs.
2. The last write is ``brokers.fence`` against the whole latest image: the BrokerRegistrationChangeRecord that
   fences it and whatever partition moves are still needed (those that gained the broker meanwhile), atomically,
   as before: once fenced, no ISR holds it.
3. A write that fails (leadership lost) stops the fencing; the next active controller's session check starts
   over.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kraftd.controller import brokers
from kraftd.controller.image import MetadataImage
from kwire.errors import ErrorCode

CHUNK = (
    1000  # partition moves a write (2,000 took 128 ms to compute at load 18; issue 22 goal: 100 ms stalls)
)


async def fence_in_chunks(
    latest: Callable[[], MetadataImage],
    write: Callable[[list[Any]], Awaitable[ErrorCode]],
    broker_id: int,
) -> ErrorCode:
    keys = brokers.holding(latest(), broker_id, isr=True)
    for i in range(0, len(keys) - CHUNK, CHUNK):  # the rest goes with the fence record (contract 2)
        records = brokers.remove_from_partitions(latest(), broker_id, where=keys[i : i + CHUNK])
        error = await write(records)
        if error:
            return error
    return await write(brokers.fence(latest(), broker_id))
