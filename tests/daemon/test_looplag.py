"""The event loop lag probe (kraftd.shell.observe.looplag, issue 22): a step that holds the loop shows as lag, in the
metrics (read without the loop) and as one WARNING line; the GC tuning freezes the survivors of a long full
collection."""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import time
import weakref
from collections.abc import Iterator

import pytest

from kraftd.shell.observe import looplag


def test_a_blocked_loop_is_measured_logged_and_exported(caplog: pytest.LogCaptureFixture) -> None:
    probe = looplag.LoopLagProbe(7)

    async def run() -> None:
        task = asyncio.create_task(probe.run())
        await asyncio.sleep(0.2)
        time.sleep(0.4)  # a step holding the loop
        await asyncio.sleep(0.2)
        task.cancel()

    with caplog.at_level(logging.WARNING, logger="kraftd.node"):
        asyncio.run(run())
    assert probe.longest_ms >= 350 and probe.stalls >= 1
    assert any("node 7: event loop stalled for" in r.getMessage() for r in caplog.records)
    metrics = {m.name: m.samples[0].value for m in looplag.LoopLagCollector(probe).collect()}
    assert metrics["kafka_server_event_loop_metrics_max_lag_ms"] >= 350
    assert (
        0
        < metrics["kafka_server_event_loop_metrics_avg_lag_ms"]
        <= metrics["kafka_server_event_loop_metrics_max_lag_ms"]
    )
    assert metrics["kafka_server_event_loop_metrics_stalls"] == probe.stalls


def test_a_stall_logs_the_cpu_time_the_loop_used_so_a_busy_machine_is_told_apart(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Contract 3: a loop blocked without computing (here a sleep: as when other processes hold the cores) logs
    little CPU; a loop computing logs its CPU time."""
    probe = looplag.LoopLagProbe(8)

    async def run() -> None:
        task = asyncio.create_task(probe.run())
        await asyncio.sleep(0.2)
        time.sleep(0.4)
        await asyncio.sleep(0.2)
        start = time.thread_time()
        while time.thread_time() - start < 0.3:  # 300 ms of CPU on the loop
            pass
        await asyncio.sleep(0.2)
        task.cancel()

    with caplog.at_level(logging.WARNING, logger="kraftd.node"):
        asyncio.run(run())
    cpu = [
        int(r.getMessage().rsplit("CPU ", 1)[1].split()[0])
        for r in caplog.records
        if "node 8: event loop stalled for" in r.getMessage()
    ]
    assert len(cpu) >= 2 and cpu[0] < 100 and max(cpu) >= 300  # the sleep first, then the computing


def test_a_long_full_collection_freezes_its_survivors(monkeypatch: pytest.MonkeyPatch) -> None:
    before = gc.get_threshold()
    monkeypatch.setattr(looplag, "GC_FREEZE_MS", 0.0)  # any full collection counts as long here
    try:
        looplag.tune_gc()
        looplag.tune_gc()  # idempotent
        assert gc.callbacks.count(looplag._gc_callback) == 1
        assert gc.get_threshold()[0] == looplag.GEN0
        kept = [[i] for i in range(1000)]
        frozen = gc.get_freeze_count()
        gc.collect(2)
        assert gc.get_freeze_count() >= frozen + len(kept)
    finally:
        gc.callbacks.remove(looplag._gc_callback)
        gc.unfreeze()
        gc.set_threshold(*before)


def test_after_a_freeze_full_collections_count_from_zero_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Contract 6: after a long full collection froze a large heap, the next automatic full collections come
    after a few promotions, not after a quarter of the frozen heap was promoted again (which made each one scan
    a quarter of the image)."""
    before = gc.get_threshold()
    monkeypatch.setattr(looplag, "GC_FREEZE_MS", 0.0)
    try:
        looplag.tune_gc()
        big = [[i] for i in range(200_000)]  # the image
        gc.collect(2)  # "long": freezes
        assert gc.get_freeze_count() >= len(big)
        looplag.gc_maintain()  # the probe's next wake-up
        monkeypatch.setattr(looplag, "GC_FREEZE_MS", 1e9)  # no further freezes
        gc.set_threshold(100, 10, 1)
        full = gc.get_stats()[2]["collections"]
        kept = [[i] for i in range(20_000)]  # a tenth of what a quarter of the frozen heap would need
        assert gc.get_stats()[2]["collections"] > full, "no full collection after 20k promotions"
        del big, kept
    finally:
        gc.callbacks.remove(looplag._gc_callback)
        gc.unfreeze()
        gc.set_threshold(*before)


def test_the_switch_interval_is_short_so_a_worker_thread_does_not_hold_the_loop_off_the_gil() -> None:
    """Contract 7: each system call of the loop releases the GIL; while the snapshot writer's thread computes, the
    loop waits up to the switch interval to get it back (Python's 5 ms: a 100-observer fan-out waited ~0.5 s)."""
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)  # Python's default
        looplag.tune_switch()
        looplag.tune_switch()  # idempotent
        assert sys.getswitchinterval() == pytest.approx(looplag.SWITCH_S) and looplag.SWITCH_S <= 0.001
    finally:
        sys.setswitchinterval(before)


class _CollectionClock:
    """A fake ``time`` for looplag: every look at the clock is ``step_ms`` after the last, so each collection
    (one look at its start, one at its end) takes ``step_ms``."""

    def __init__(self, step_ms: float) -> None:
        self.now, self.step_ms = 0.0, step_ms

    def perf_counter(self) -> float:
        self.now += self.step_ms / 1000
        return self.now


def _collections_timed(monkeypatch: pytest.MonkeyPatch, step_ms: float) -> tuple[int, ...]:
    monkeypatch.setattr(looplag, "time", _CollectionClock(step_ms))
    monkeypatch.setattr(looplag, "_gc_estimate", [0.0], raising=False)
    before = gc.get_threshold()
    looplag.tune_gc()
    gc.set_threshold(10**6, 1000, 1000)  # only the collections the test runs
    return before


def test_a_full_collection_estimated_over_budget_freezes_before_it_scans(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Contract 5a: middle collections promoted enough since the last freeze that the next full collection would
    exceed ``GC_FULL_MS``: it freezes at its start, so it scans nothing (before, it scanned everything and froze
    only after a collection longer than ``GC_FREEZE_MS``)."""
    before = _collections_timed(monkeypatch, 3.0)  # each collection "takes" 3 ms, below GC_FREEZE_MS
    try:
        gc.collect(2)  # nothing promoted since: 3 ms, estimate 6 ms
        frozen = gc.get_freeze_count()
        kept = [[i] for i in range(1000)]  # promoted by the middle collections below
        gc.collect(1)
        gc.collect(1)  # 6 + 2 x 3 x 2 (GC_MID_WEIGHT) ms expected of the next full collection: over budget
        gc.collect(2)
        assert gc.get_freeze_count() >= frozen + len(kept), "the full collection scanned its heap"
        del kept
    finally:
        gc.callbacks.remove(looplag._gc_callback)
        gc.unfreeze()
        gc.set_threshold(*before)


def test_a_full_collection_within_budget_collects_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """Contract 5a's other side: a full collection expected within budget runs (cyclic garbage is freed) and
    freezes nothing."""
    before = _collections_timed(monkeypatch, 1.0)
    try:
        gc.collect(2)  # 1 ms: the next is expected at GC_GROWTH ms
        frozen = gc.get_freeze_count()
        cycle: list[object] = []
        cycle.append(cycle)
        kept = [[i] for i in range(1000)]
        gc.collect(1)
        del cycle  # 2 + 1 x 2 ms expected: within budget
        assert gc.collect(2) >= 1  # the cycle was found
        assert gc.get_freeze_count() == frozen
        del kept
    finally:
        gc.callbacks.remove(looplag._gc_callback)
        gc.unfreeze()
        gc.set_threshold(*before)


@pytest.fixture
def counted_gc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """looplag's policy with a small young generation, nothing timed (no freeze by contracts 5/5a), and what
    existed before frozen, so CPython's quarter rule compares promotions with a near-empty old generation, as in
    a node after contract 6's freeze."""
    monkeypatch.setattr(looplag, "GC_FREEZE_MS", 1e9)
    monkeypatch.setattr(looplag, "GC_FULL_MS", 1e9)
    before = gc.get_threshold()
    looplag.tune_gc()
    gc.set_threshold(100, looplag.MID, looplag.FULL_EVERY)
    gc.freeze()
    gc.collect(2)
    try:
        yield
    finally:
        gc.callbacks.remove(looplag._gc_callback)
        gc.unfreeze()
        gc.set_threshold(*before)


def _turns(n: int) -> tuple[int, int]:
    """(middle, full) collections over ``n`` turns, each building a batch of acyclic objects that outlives a few
    young collections and is then dropped (a turn's pipelined reads)."""
    start = gc.get_stats()
    for _ in range(n):
        batch = [[i] for i in range(400)]
        del batch
    end = gc.get_stats()
    return end[1]["collections"] - start[1]["collections"], end[2]["collections"] - start[2]["collections"]


def test_full_collections_back_off_while_they_free_nothing(counted_gc: None) -> None:
    """Contract 5b: promoted batches that die by reference counting leave nothing for a full collection; the
    spacing doubles up to FULL_EVERY_MAX middle collections (before: one full collection every second middle one,
    issue 25's 50-67 a second under read load)."""
    middle, full = _turns(800)
    assert middle >= 400
    assert 1 <= full <= middle // 20, (middle, full)
    assert gc.get_threshold()[2] == looplag.FULL_EVERY_MAX


class _Node:
    def __init__(self) -> None:
        self.me = self


def test_a_full_collection_that_frees_cyclic_garbage_brings_the_spacing_back(counted_gc: None) -> None:
    """Contract 5b's other side: once a full collection frees something they come every FULL_EVERY middle
    collections again."""
    _turns(800)
    assert gc.get_threshold()[2] == looplag.FULL_EVERY_MAX
    cycles = [_Node() for _ in range(400)]  # promoted to the old generation, then garbage there
    gc.collect(1)
    gc.collect(1)
    probe = weakref.ref(cycles[0])
    del cycles
    full = gc.get_stats()[2]["collections"]
    while gc.get_stats()[2]["collections"] == full:
        _turns(1)
    assert probe() is None
    assert gc.get_threshold()[2] == looplag.FULL_EVERY
    middle, full = _turns(8)
    assert full >= 1
