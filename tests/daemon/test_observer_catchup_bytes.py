"""kraftd.shell.apis.observer_fetches contract 6: a callback that steps Fetches stops once the answers they made
carry ``BYTES`` of records, each answer object counted once; handing over is bounded by contract 2a (issue 24, 1,000 x 1M: a wave of catch-up answers of up to
8 MiB each was 64 stepped and 128 handed over in one callback, 0.3-1.1 s of loop CPU). Counted work."""

from __future__ import annotations

import asyncio
from collections import Counter
from types import SimpleNamespace
from typing import Any

from kraftd.shell.apis import observer_fetches
from kraftd.shell.apis.observer_fetches import BYTES, ObserverFetches

MIB = 1024 * 1024


def _answer(records: bytes) -> Any:
    return SimpleNamespace(responses=[SimpleNamespace(partitions=[SimpleNamespace(records=records)])])


def _run(shared: bool) -> tuple[Counter[int], Counter[int], int]:
    """200 observer Fetches, each answered with 4 MiB of records (one object for all when ``shared``)."""
    records = bytes(4 * MIB)
    one = _answer(records)
    stepped: Counter[int] = Counter()
    handed: Counter[int] = Counter()
    answered = []

    async def main() -> None:
        def step(body: Any, answer: Any) -> bool:
            stepped[of.callbacks] += 1
            answer(one if shared else _answer(records))
            return True

        of = ObserverFetches(step)
        for i in range(200):
            of.offer(i, lambda resp: (handed.update([of.callbacks]), answered.append(resp)))
        while len(answered) < 200:
            await asyncio.sleep(0)

    asyncio.run(main())
    return stepped, handed, len(answered)


def test_catch_up_answers_are_stepped_and_handed_over_a_few_mib_a_callback() -> None:
    stepped, handed, n = _run(shared=False)
    assert n == 200
    per = BYTES // (4 * MIB)  # 8
    assert max(stepped.values()) <= per, stepped  # before: 64 (CHUNK) a callback
    assert max(handed.values()) <= per, handed  # before: 128 (REPLY_CHUNK) a callback


def test_a_wave_sharing_one_answer_is_not_held_back_by_its_size() -> None:
    """Contracts 2a, 6: a wave sharing one answer is stepped ``CHUNK`` and handed over ``REPLY_CHUNK`` a callback
    (its writes are paced by kwire.large_frames contract 11k). Before (session 19), contract 2a counted the answer
    once per observer: one 4 MiB shared answer a callback, a commit's wave to 1,000 observers ~143 callbacks."""
    stepped, handed, n = _run(shared=True)
    assert n == 200
    assert max(stepped.values()) == observer_fetches.CHUNK
    # every Fetch one callback stepped is handed over in the next (before: 1 a callback)
    assert max(handed.values()) == observer_fetches.CHUNK, handed


def _run_bounded(pending: int) -> tuple[int, int, int]:
    """200 catch-up Fetches answered with 4 MiB each, to readers that take 1 MiB a turn of the loop; the listener's
    waiting bytes (kwire.large_frames contract 11g) grow by each answer handed over. Returns (most waiting when a
    Fetch was stepped, most waiting, answered)."""
    waiting, most, most_stepping, answered = [0], [0], [0], [0]

    async def main() -> None:
        def step(body: Any, answer: Any) -> bool:
            most_stepping[0] = max(most_stepping[0], waiting[0])
            answer(_answer(bytes(bytearray(4 * MIB))))
            return True

        def handed(resp: Any) -> None:
            waiting[0] += 4 * MIB
            most[0] = max(most[0], waiting[0])
            answered[0] += 1

        # the clock stands still: contract 7's bound alone (contract 7a's due time is tests/daemon/test_observer_fetch_due.py)
        of = ObserverFetches(step, waiting=lambda: waiting[0], pending=pending, clock=lambda: 0.0)
        for i in range(200):
            of.offer(i, handed)
        while answered[0] < 200:
            await asyncio.sleep(0)
            waiting[0] = max(0, waiting[0] - MIB)  # the observers read, slower than answers are made

    asyncio.run(main())
    return most_stepping[0], most[0], answered[0]


def test_catch_up_waits_while_the_listener_holds_its_bound_of_answers() -> None:
    """Contract 7: no Fetch is stepped while the bound is reached, so what waits stays within the bound plus one
    callback's answers (contract 6). Without the bound (0): 200 x 4 MiB handed over as fast as they are made."""
    pending = 16 * MIB
    stepping, most, n = _run_bounded(pending)
    assert n == 200
    assert stepping < pending
    assert most <= pending + BYTES, most // MIB
    _, unbounded, n = _run_bounded(0)
    assert n == 200 and unbounded > pending + BYTES, unbounded // MIB  # the same readers, no bound


def test_two_broker_sized_catch_up_answers_at_most_are_made_a_callback() -> None:
    """Contract 6 with a broker's Fetch ``max_bytes`` (8 MiB): observers at offsets of their own each need an answer
    of their own; a callback makes at most two (before, with 32 MiB: five, up to 44 ms of the loop's CPU at 1,000 x
    200k), and a wave sharing one such answer is still stepped ``CHUNK`` a callback."""
    made, shared = _broker_sized(shared=False), _broker_sized(shared=True)
    assert sum(made.values()) == sum(shared.values()) == 200
    assert max(made.values()) == 2, made  # before: 5 a callback
    assert max(shared.values()) == observer_fetches.CHUNK


def _broker_sized(shared: bool) -> Counter[int]:
    made: Counter[int] = Counter()
    one = _answer(bytes(8 * MIB - 1024))

    async def main() -> None:
        def step(body: Any, answer: Any) -> bool:
            made[of.callbacks] += 1
            answer(one if shared else _answer(bytes(8 * MIB - 1024)))
            return True

        of = ObserverFetches(step, reply_bytes=1)
        done: list[Any] = []
        for i in range(200):
            of.offer(i, done.append)
        while len(done) < 200:
            await asyncio.sleep(0)

    asyncio.run(main())
    return made
