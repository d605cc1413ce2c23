"""Fencing a broker whose session timed out, and a controlled shutdown, in bounded writes (issues 22, 24).

Fencing a broker moves every partition whose ISR holds it: at 100k partitions and 5 brokers that is ~60k
PartitionChangeRecords, which as one write held the leader's event loop (validate, encode, apply) and each
follower's (decode, replay) for seconds, past the fetch timeout.

Contracts:
1. :func:`fence_in_chunks` first moves the broker's partitions ``CHUNK`` at a time: each chunk's records are
   computed by kraftd.controller.brokers' own rules against the latest image for that chunk's partitions
   (``where``; found through the image's partitions-by-broker index, O(the broker's partitions)), and
   written (committed) before the next is computed, so each write is bounded and each is validated against the
   image it applies to. Between chunks the broker is still registered, unfenced, and out of the moved ISRs.
   With ``append`` (kraftd.shell.controller.glue contract 10) the next chunk is computed once the last one is
   applied to the latest image, not once it committed: the chunks commit in log order behind one another, as
   Kafka's one fencing write would (issue 24: a broker leading 20k partitions at 1M took 31 writes and 2.1 s
   after its session check, each write waiting for its commit), and the first error of any is the result.
1a. Pipelined chunks are ``PIPELINED_CHUNK`` (250) moves: each chunk is computed in one step of the loop and its
   records encoded in the next, and with nothing to wait for between chunks those steps come back to back with the
   replay of the last chunk (1M partitions, 30 brokers: 1,000 moves were 57-65 ms of loop CPU to compute and as
   much to encode at load 12, with 100-180 ms loop iterations all through the fencing; issue 24, session 14).
   The count of writes does not cost the fencing a commit each, since they are pipelined.
2. The last write is ``brokers.fence`` against the whole latest image: the BrokerRegistrationChangeRecord that
   fences it and whatever partition moves are still needed (those that gained the broker meanwhile), atomically,
   as before: once fenced, no ISR holds it.
3. A write that fails (leadership lost) stops the fencing; the next active controller's session check starts
   over.
4. Controlled shutdown (kraftd.controller.brokers 4): before the heartbeat of an unfenced broker that wants to
   shut down is decided, :func:`shut_down_in_chunks` writes the first moves of its partitions ``CHUNK`` at a
   time (committed before the next is computed), the first write also marking it in controlled shutdown (the
   BrokerRegistrationChangeRecord that write would start with); the heartbeat itself then computes what is left
   (at most ``CHUNK`` moves, plus any partition that gained the broker meanwhile) and decides the answer, as
   before. So no step computes, encodes or applies all of a broker's moves at once (at 1M partitions and 30
   brokers one broker leads 33k: 1.9 s on the leader's loop as one write).
4a. With ``append`` (glue contract 10) controlled shutdown's chunks are pipelined as fencing's are (contracts 1,
   1a): ``PIPELINED_CHUNK`` moves each, the next computed once the last is applied to the latest image, all of
   them committed before the heartbeat is decided (the first error is the result). Kafka computes a controlled
   shutdown's moves in the heartbeat that asks for it, one write; waiting for each 1,000-move chunk's commit cost
   a commit round a chunk, and each such chunk was one 60-100 ms step of loop CPU at 1M partitions (issue 24,
   session 14: 1M/30, 171 ms wall / 101 ms CPU).
5. Unfencing likewise (kraftd.controller.brokers 2): when a fenced broker's heartbeat would unfence it and elect it
   in more than ``CHUNK`` leaderless partitions, :func:`unfence_in_chunks` writes the unfencing record with the
   first ``CHUNK`` elections, then the rest ``CHUNK`` at a time (each computed against the latest image); the
   heartbeat is then decided as for an unfenced broker (1M partitions: one broker's unfencing was 20,485 records
   in one write).
6. One move loop (contracts 4, 5) per broker at a time (:class:`OneAtATime`): a broker heartbeats every interval
   while its moves commit (at 1M partitions a controlled shutdown's 33 chunks take seconds), and each heartbeat
   used to start its own loop over the same partitions, writing the same moves again, and the first loop to end
   let its heartbeat compute every move the others had not written yet in one step. A heartbeat arriving while
   its broker's loop runs waits for that loop instead (its session is touched first).
7. The partitions of contracts 1 and 4 are listed ``CHUNK`` at a time as the loop goes
   (kraftd.controller.partition_index.key_chunks), not all before the first write: listing a broker's 100k ISR
   entries at 1M partitions was itself one 170-220 ms step (CPU, at load 15) of the leader's loop. An empty
   chunk (kraftd.controller.partition_index contract 3a: the topics are still being ordered) gives the loop a
   turn and is not a chunk.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraftd.controller import brokers, partition_index
from kraftd.controller.broker_partitions import holding_chunks
from kraftd.controller.image import MetadataImage
from kraftd.controller.partition_index import Key
from kwire.errors import ErrorCode

CHUNK = (
    1000  # partition moves a write (2,000 took 128 ms to compute at load 18; issue 22 goal: 100 ms stalls)
)
PIPELINED_CHUNK = 250  # contract 1a


async def fence_in_chunks(
    latest: Callable[[], MetadataImage],
    write: Callable[[list[Any]], Awaitable[ErrorCode]],
    broker_id: int,
    append: Callable[[list[Any]], Awaitable[asyncio.Future[ErrorCode]]] | None = None,
) -> ErrorCode:
    """Contracts 1, 2 (``append``: contract 1's pipelined chunks)."""
    pending: list[asyncio.Future[ErrorCode]] = []
    size = CHUNK if append is None else min(CHUNK, PIPELINED_CHUNK)  # contract 1a
    # the last chunk goes with the fence (contract 2)
    async for where in _all_but_last(holding_chunks(latest(), broker_id, size)):
        error = await _put(
            brokers.remove_from_partitions(latest(), broker_id, where=where), write, append, pending
        )
        if error:
            return error  # contract 3
    last = await write(brokers.fence(latest(), broker_id))  # commits after every pending chunk (log order)
    return await _settled(pending, last)


async def shut_down_in_chunks(
    latest: Callable[[], MetadataImage],
    write: Callable[[list[Any]], Awaitable[ErrorCode]],
    broker_id: int,
    broker_epoch: int,
    append: Callable[[list[Any]], Awaitable[asyncio.Future[ErrorCode]]] | None = None,
) -> ErrorCode:
    """Contract 4: every chunk of moves but the last (that one goes with the heartbeat's own records); ``append``:
    contract 4a."""
    pending: list[asyncio.Future[ErrorCode]] = []
    size = CHUNK if append is None else min(CHUNK, PIPELINED_CHUNK)
    async for where in _all_but_last(holding_chunks(latest(), broker_id, size)):
        image = latest()
        b = image.brokers.get(broker_id)
        if b is None or b.epoch != broker_epoch or b.fenced:
            break  # the heartbeat answers this itself
        records: list[Any] = []
        if not b.in_controlled_shutdown:
            records.append(
                BrokerRegistrationChangeRecord(
                    broker_id=broker_id, broker_epoch=broker_epoch, in_controlled_shutdown=1
                )
            )
        records += brokers.remove_from_partitions(image, broker_id, where=where)
        error = await _put(records, write, append, pending)
        if error:
            return error
    return await _settled(pending)


async def _put(
    records: list[Any],
    write: Callable[[list[Any]], Awaitable[ErrorCode]],
    append: Callable[[list[Any]], Awaitable[asyncio.Future[ErrorCode]]] | None,
    pending: list[asyncio.Future[ErrorCode]],
) -> ErrorCode:
    """One chunk: written and committed, or (``append``, contracts 1a and 4a) appended with its commit added to
    ``pending``; the first error known so far."""
    if append is None:
        return await write(records)
    pending.append(await append(records))
    return next((f.result() for f in pending if f.done() and f.result()), ErrorCode.NONE)


async def _settled(pending: list[asyncio.Future[ErrorCode]], *more: ErrorCode) -> ErrorCode:
    """The first error of the pipelined chunks' commits (all awaited), then of ``more``."""
    return next((e for e in [*[await p for p in pending], *more] if e), ErrorCode.NONE)


async def _listed(chunks: Iterator[list[Key]]) -> AsyncIterator[list[Key]]:
    """Contract 7: the chunks that are chunks; an empty one gives the loop a turn."""
    for chunk in chunks:
        if chunk:
            yield chunk
        else:
            await asyncio.sleep(0)


async def _all_but_last(chunks: Iterator[list[Key]]) -> AsyncIterator[list[Key]]:
    """Contract 7: each chunk once the next one is known to exist (the last goes with the final write)."""
    held: list[Key] | None = None
    async for chunk in _listed(chunks):
        if held is not None:
            yield held
        held = chunk


async def unfence_in_chunks(
    latest: Callable[[], MetadataImage],
    write: Callable[[list[Any]], Awaitable[ErrorCode]],
    broker_id: int,
    broker_epoch: int,
) -> ErrorCode:
    """Contract 5 (the caller checked that the heartbeat would unfence the broker)."""
    image = latest()
    chunks = _listed(partition_index.key_chunks(image, image.leader_index, partition_index.NO_LEADER, CHUNK))
    first, second = await anext(chunks, None), await anext(chunks, None)
    if first is None or second is None:
        return ErrorCode.NONE  # the heartbeat's own single write, as before
    i = 0
    async for where in _chained([first, second], chunks):
        image = latest()
        b = image.brokers.get(broker_id)
        if b is None or b.epoch != broker_epoch or b.in_controlled_shutdown:
            return ErrorCode.NONE
        records: list[Any] = []
        if b.fenced:
            if i:
                return ErrorCode.NONE  # fenced again meanwhile: the heartbeat decides
            records.append(
                BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker_epoch, fenced=-1)
            )
        records += brokers.elect_offline(image, broker_id, where=where)
        error = await write(records)
        if error:
            return error
        i += 1
    return ErrorCode.NONE


async def _chained(head: list[list[Key]], rest: AsyncIterator[list[Key]]) -> AsyncIterator[list[Key]]:
    for chunk in head:
        yield chunk
    async for chunk in rest:
        yield chunk


class OneAtATime:
    """Contract 6: at most one running move loop per broker; later callers await the running one."""

    def __init__(self) -> None:
        self._running: dict[int, asyncio.Future[ErrorCode]] = {}

    async def run(self, broker_id: int, loop: Callable[[], Awaitable[ErrorCode]]) -> ErrorCode:
        running = self._running.get(broker_id)
        if running is None:
            running = asyncio.ensure_future(loop())
            self._running[broker_id] = running
            running.add_done_callback(lambda _: self._running.pop(broker_id, None))
        return await asyncio.shield(running)  # a caller that goes away leaves the loop to the others
