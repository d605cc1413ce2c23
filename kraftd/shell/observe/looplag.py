"""The event loop's own lateness (issue 22): a periodic timer that measures how late it wakes up.

Contracts:
1. :meth:`LoopLagProbe.run` sleeps ``INTERVAL_S`` and records how much later than asked it woke up: the longest
   time the node's single event loop spent on something else (a step, a handler, a garbage collection) in that
   interval. Fetch answers, check-quorum and heartbeats all wait behind such a stall.
2. Metrics (kraftd.shell.observe.metrics, read from the HTTP thread without the loop, so they are there while the loop
   is stalled): ``kafka_server_event_loop_metrics_max_lag_ms`` and ``..._avg_lag_ms`` over the last 30 s of
   samples, and ``kafka_server_event_loop_metrics_stalls_total``, the wake-ups later than the threshold.
3. A wake-up later than ``WARN_MS`` is logged at WARNING once, with its length and the CPU time the loop's thread
   used meanwhile (``time.thread_time``): a stall whose CPU time is far below its length was the machine (other
   processes on the cores), not work on the loop (a shared 2-core box at load 6-10 showed 300-600 ms stalls with
   30-80 ms of the loop's CPU).
4. ``longest_ms`` is the longest lag since start (or the last :meth:`LoopLagProbe.reset`), for benchmarks.
5. Garbage collection (:func:`tune_gc`): a full collection scans every tracked object, so it is a stall that grows
   with the image (measured: 0.56-0.64 s for a 100k-partition image, 0 ms after ``gc.freeze``). After a full collection that took longer than ``GC_FREEZE_MS`` every survivor is moved to the
   permanent generation (``gc.freeze``, O(1)), so later collections scan only what was allocated since. The image
   is acyclic and freed by reference counting, so frozen objects that die are still freed; only reference cycles
   alive at a freeze and dying later are never collected (a few in-flight tasks a freeze: a bounded leak). The
   youngest generation collects every ``GEN0`` allocations (Python's 700 makes the persistent image's
   allocation-heavy replay 3x slower, bench/image.py); a full collection runs after every ``FULL_EVERY`` collections
   of the middle one (bench/image.py's 200k-partition replay: longest full collection 188 ms of CPU with
   Python's 10, 33 ms with 1; all full collections together 345 vs 373 ms). Since the partitions-by-broker
   masks are dicts the collector does not track (kraftd.controller.partition_index contract 2b), ``GEN0`` is
   3,000 and the middle generation collects every ``MID`` young ones (session 13): CPython counts allocations
   *minus deallocations*, and copy-on-write replay frees old objects as it allocates new ones, so a young
   collection comes after far more than ``GEN0`` allocations and the middle one holds the survivors of all of
   them. In process (the leader's replay of 600k partitions into its committed image and view, reshared every 10k
   records, bench/image.py's records): longest young / middle / full collection 8 / 81 / 189 ms with
   (10,000, 10, 1), 5 / 10 / 35 ms with (3,000, 3, 1); all collections together 464 vs 372 ms.
6. After such a freeze the probe's next wake-up runs one full collection (:func:`gc_maintain`: cheap, everything
   older is frozen), so CPython's rule "a full collection only once the objects promoted since the last one
   exceed a quarter of those it left" counts from ~0 again, not from the size before the freeze: otherwise each
   full collection scanned a quarter of the image's objects (issue 24: 400-1,500 ms of CPU per full collection at
   1M partitions, py-spy samples stuck on one allocating line of replay); now each one scans what was promoted
   since the last, and freezes again once that takes over ``GC_FREEZE_MS``.
5a. A full collection is also bounded before it starts (issue 24: at 1M partitions full collections of 19-35 ms ran
   every few young ones during creation, and a follower's first ones took 85-94 ms: each then one of the two loop
   turns a logged 100 ms stall is made of). Every object a full collection scans was promoted by a middle
   collection since the last freeze or survived the last full one, and CPython spaces full collections further
   apart as they grow (contract 6's rule), so the next one is estimated at ``GC_GROWTH`` times the last one's time
   plus ``GC_MID_WEIGHT`` times the middle collections' times since. When that exceeds ``GC_FULL_MS`` the
   collection's ``start`` callback freezes first and the collection scans nothing (no survivors: contract 6's
   count restarts without the probe's reset collection). Cyclic garbage dead since the last full collection (a
   few turns ago) is frozen with the rest and not freed. In process (1.5M replay-like tracked states, some
   replaced): longest full collection 28.7 ms of CPU before, 9.7-13.8 after; all full collections 730 vs 241-248
   ms (the heap is rescanned less often).
5b. Full collections back off while they free nothing (issue 25): after a full collection that found no cyclic
   garbage the number of middle collections before the next one (the collector's third threshold) doubles, up to
   ``FULL_EVERY_MAX``; after one that freed something it is ``FULL_EVERY`` again. Under read load the leader ran
   50-67 full collections a second that freed nothing (session 17: ~a third of its collector time at 256 reads in
   flight per client, most of it at 1,024): a read's objects are acyclic and freed by reference counting, but a
   turn's batch of reads is alive at the young collections inside the turn, so it is promoted, and CPython's
   quarter rule (contract 6) counts promotions, not growth: batches promoted and then freed count as a growing
   image would, against an old generation that is small (the process's modules; nearly nothing after a freeze),
   so every second middle collection was followed by a full one. Cyclic garbage now waits at most
   ``FULL_EVERY_MAX`` + 1 middle collections after one full collection freed nothing (at once again after one
   freed something); contract 5a still bounds each full collection (its estimate adds every middle collection
   since the last full one, so a longer spacing makes a full collection freeze first, not scan longer).
7. The GIL's switch interval (:func:`tune_switch`): ``SWITCH_S`` (0.5 ms) instead of Python's 5 ms. While a worker
   thread runs Python code (the log's flushes, a snapshot read back; a snapshot encoded in a thread where no child
   process can be forked, kraftd.shell.raft.snapshot_writer contract 1), each system call of the loop (a socket
   write to one of N observers, a read, the selector) releases the GIL and then waits up to the switch interval to
   get it back: at 1M partitions the committed batch's writes to 100 observers made 750-820 ms stalls with 165 ms
   of the loop's CPU while a snapshot was being encoded in a thread (session 13).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

log = logging.getLogger("kraftd.node")
INTERVAL_S = 0.05
WARN_MS = 100.0  # the goal of issues 22 and 24: no stall longer, so every longer one is logged
WINDOW_S = 30.0
PREFIX = "kafka_server_event_loop_metrics_"
GC_FREEZE_MS = 20.0
# contract 5a; ``KRAFTD_GC_FULL_MS`` in the environment sets it ("inf": never frozen before; an A/B switch for bench/)
GC_FULL_MS = float(os.environ.get("KRAFTD_GC_FULL_MS", "10"))
GC_MID_WEIGHT = 2.0
GC_GROWTH = 2.0
GEN0 = 3_000
MID = 3
FULL_EVERY = 1
FULL_EVERY_MAX = 64  # contract 5b
SWITCH_S = 0.0005  # contract 7
_gc_started = [0.0]
_gc_reset = [False, False]  # (a freeze asks for the reset collection, the reset collection is running)


_gc_estimate = [0.0]  # contract 5a: ms the next full collection is expected to take
_full_every = [FULL_EVERY]  # contract 5b: middle collections before the next full one


def _gc_callback(phase: str, info: dict[str, int]) -> None:
    generation = info.get("generation")
    if phase == "start":
        if generation == 2 and _gc_estimate[0] > GC_FULL_MS and not _gc_reset[1]:
            gc.freeze()  # contract 5a: this collection scans nothing
            _gc_estimate[0] = 0.0
        _gc_started[0] = time.perf_counter()
        return
    took = (time.perf_counter() - _gc_started[0]) * 1000
    if generation == 1:
        _gc_estimate[0] += took * GC_MID_WEIGHT
    elif generation == 2:
        _full_every[0] = min(_full_every[0] * 2, FULL_EVERY_MAX) if not info.get("collected") else FULL_EVERY
        gc.set_threshold(*gc.get_threshold()[:2], _full_every[0])  # contract 5b
        _gc_estimate[0] = took * GC_GROWTH
        if took > GC_FREEZE_MS:
            gc.freeze()
            _gc_estimate[0] = 0.0
            _gc_reset[0] = not _gc_reset[1]


def gc_maintain() -> None:
    """Contract 6 (on the loop, between callbacks)."""
    if _gc_reset[0]:
        _gc_reset[0], _gc_reset[1] = False, True
        try:
            gc.collect(2)
        finally:
            _gc_reset[1] = False


def tune_gc() -> None:
    """Contract 5 (process-wide; idempotent)."""
    _full_every[0] = FULL_EVERY
    gc.set_threshold(GEN0, MID, FULL_EVERY)
    if _gc_callback not in gc.callbacks:
        gc.callbacks.append(_gc_callback)


def tune_switch() -> None:
    """Contract 7 (process-wide; idempotent)."""
    sys.setswitchinterval(SWITCH_S)


class LoopLagProbe:
    def __init__(self, node_id: int, warn_ms: float = WARN_MS) -> None:
        self.node_id = node_id
        self.warn_ms = warn_ms
        self.samples: deque[tuple[float, float]] = deque()  # (monotonic time, lag ms), last WINDOW_S
        self.stalls = 0
        self.longest_ms = 0.0

    async def run(self) -> None:
        """Contract 1 (a task the node owns; cancelled when it stops)."""
        while True:
            asked, cpu = time.monotonic(), time.thread_time()
            gc_maintain()  # its time counts as lag: nothing else runs on the loop meanwhile
            await asyncio.sleep(INTERVAL_S)
            now = time.monotonic()
            self.record(now, max(0.0, (now - asked - INTERVAL_S) * 1000), (time.thread_time() - cpu) * 1000)

    def record(self, now: float, lag_ms: float, cpu_ms: float | None = None) -> None:
        self.samples.append((now, lag_ms))
        while self.samples and self.samples[0][0] < now - WINDOW_S:
            self.samples.popleft()
        self.longest_ms = max(self.longest_ms, lag_ms)
        if lag_ms > self.warn_ms:
            self.stalls += 1
            if cpu_ms is None:
                log.warning("node %d: event loop stalled for %.0f ms", self.node_id, lag_ms)
            else:
                log.warning(
                    "node %d: event loop stalled for %.0f ms (loop thread CPU %.0f ms)",
                    self.node_id,
                    lag_ms,
                    cpu_ms,
                )

    def reset(self) -> None:
        self.longest_ms = 0.0

    def window(self) -> tuple[float, float]:
        """(max, avg) lag in ms over the window; safe from another thread (reads a copy)."""
        lags = [lag for _, lag in list(self.samples)]
        return (max(lags), sum(lags) / len(lags)) if lags else (0.0, 0.0)


class LoopLagCollector(Collector):
    """Contract 2."""

    def __init__(self, probe: LoopLagProbe) -> None:
        self.probe = probe

    def collect(self) -> Iterator[Any]:
        worst, avg = self.probe.window()
        yield GaugeMetricFamily(
            PREFIX + "max_lag_ms", "Longest event loop lateness over the last 30 s (ms)", value=worst
        )
        yield GaugeMetricFamily(
            PREFIX + "avg_lag_ms", "Average event loop lateness over the last 30 s (ms)", value=avg
        )
        yield CounterMetricFamily(
            PREFIX + "stalls",
            f"Event loop wake-ups later than {self.probe.warn_ms:.0f} ms",
            value=self.probe.stalls,
        )
