"""tools.swarm.swarm contract 5: the swarm's process collects garbage as the controllers do (looplag 5-6), so a
full collection of the swarm's own objects is not a pause inside the heartbeats it measures."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from kraftd.shell.observe import looplag
from tools.swarm.lifecycle import SwarmConfig
from tools.swarm.swarm import GC_MAINTAIN_S, SWARM_GEN0, Swarm


@pytest.fixture
def python_gc() -> Iterator[None]:
    """Python's default policy before the test, whatever ran earlier in this process; restored after."""
    threshold, had = gc.get_threshold(), looplag._gc_callback in gc.callbacks
    if had:
        gc.callbacks.remove(looplag._gc_callback)
    gc.set_threshold(700, 10, 10)
    gc.unfreeze()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
        if not had and looplag._gc_callback in gc.callbacks:
            gc.callbacks.remove(looplag._gc_callback)
        looplag._gc_reset[:] = [False, False]


def test_a_long_full_collection_freezes_the_swarms_survivors_and_resets(
    python_gc: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        looplag, "GC_FREEZE_MS", 0.0
    )  # every full collection counts as long: counted, not timed
    held = [[i] for i in range(50_000)]  # the swarm's long-lived objects (replayed image, clients)

    async def run() -> tuple[int, bool, bool]:
        swarm = Swarm(SwarmConfig("c", {1: ("127.0.0.1", 1)}), 0)
        swarm.start()
        try:
            assert gc.get_threshold() == (SWARM_GEN0, looplag.MID, looplag.FULL_EVERY)
            gc.collect(2)
            frozen, reset_asked = gc.get_freeze_count(), looplag._gc_reset[0]
            await asyncio.sleep(GC_MAINTAIN_S * 4)  # the swarm's loop ran the reset collection
            return frozen, reset_asked, looplag._gc_reset[0]
        finally:
            await swarm.close()

    frozen, reset_asked, still_asked = asyncio.run(run())
    assert frozen >= len(held)  # later collections no longer scan them
    assert reset_asked and not still_asked
