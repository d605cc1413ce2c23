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
    stepped, handed, n = _run(shared=True)
    assert n == 200
    assert max(stepped.values()) == observer_fetches.CHUNK
    # Handing over is bounded by each answer's bytes (contract 2a: writing an answer costs about its size).
    assert max(handed.values()) <= -(-observer_fetches.REPLY_BYTES // (4 * MIB)), handed
