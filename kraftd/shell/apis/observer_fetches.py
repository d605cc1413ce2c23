"""Observers' Fetches stepped, and their answers written, in bounded chunks, so a wave of them does not hold the
listener's other requests.

After each commit every observer (a broker, issue 24: 1,000 of them) is answered in one step of the core (the
commit wakes every parked observer Fetch, kraftd.core.replication invariant 2d), then fetches again within a few
milliseconds, and each Fetch is a step of the core (kraftd.shell.apis.routing contract 6a). Written as the step
makes them, the ~1,000 answers were one turn of the loop; stepped as they are read, the ~1,000 re-fetches another;
a heartbeat read meanwhile waited behind all of it: the heartbeat tail at 1,000 brokers (docs/SWARM.md, sessions
13-14).

Contracts:
1. :meth:`ObserverFetches.offer` queues an observer's Fetch (its replica id is not a voter's): it is stepped later
   in this turn or a next one, in the order offered. A voter's Fetch is never queued (the commit path).
2. An observer Fetch's answer, whichever step makes it (its own, or the step that completes it parked), is held,
   in the order made, and handed to its ``answer`` by a later callback of the loop (the step has persisted what
   it needed to: a later send is still persist-then-send). Held answers go first: a callback hands over up to
   ``reply_chunk`` of them and steps no Fetch; only a callback that finds none held steps up to ``chunk`` queued
   Fetches. So a wave's answers leave as early as the loop allows (propagation), yet in chunks.
2a. A callback also stops handing over answers once those it handed over carry ``reply_bytes`` of records or more
   (at least one answer each callback), each answer object counted once: writing an answer costs about its size
   (the kernel's copy into the observer's socket and, on loopback, its receive path). A commit of 50 topics x 100
   partitions (5,050 records, ~600 KB) answered to 1,000 observers was ~600 MB of writes, 128 answers (~77 MB) a
   callback: the loop's longest stalls during topic creation at 1,000 brokers (40-100 ms callbacks; logged stalls
   of 103-330 ms, docs/SWARM.md, session 15). Those writes are now paced per round of the loop whoever hands them
   over (kwire.large_frames contract 11k), so a handed-over copy of a shared answer only queues a view of its one
   encoding; counted per observer, a commit's wave of ~600 KB was handed over ~7 a callback, ~143 callbacks each
   behind what the loop had ready, and the last observers of the wave waited seconds for their first byte during
   a fast creation (docs/SWARM.md, session 19). ``KRAFTD_OBSERVER_REPLY_BYTES`` in the environment sets it (an A/B
   switch for bench/scale.py).
3. A callback that leaves answers held or Fetches queued schedules the next one behind what the loop has ready
   meanwhile (``call_soon``), so a request read while a wave is answered or stepped waits for at most one chunk
   of it.
4. A queued Fetch whose node is stopping meanwhile is not answered (the listener closes its connection).
5. ``KRAFTD_OBSERVER_REPLY_CHUNK=0`` in the environment (an A/B switch for bench/scale.py, not a setting) hands each
   answer over from inside the step that makes it, as before contract 2.
6. A callback that steps Fetches also stops once the answers they made carry ``BYTES`` of records (each answer
   object counted once: a commit's wave shares one; handing answers over is bounded by contract 2a): a wave of
   catch-up answers (observers behind the log end, up to 8 MiB each, each read, joined and encoded) is at most two of them
   a callback, not 64 stepped (1,000 x 1M: stalls of 0.3-1.1 s of loop CPU and the followers' fetch timeout,
   docs/SWARM.md, session 15). ``BYTES`` is a broker's 8 MiB ``max_bytes``: at 32 MiB a callback made up to four
   such answers, 16-24 MB read and joined, up to 44 ms of the loop's CPU (session 18, 1,000 x 200k); a wave sharing
   one answer of up to 8 MiB is still stepped ``chunk`` a callback.
7. A callback steps no queued Fetch while the bytes waiting in the listener's outboxes (kwire.large_frames contract
   11g: each buffer counted once, however many observers it goes to) are ``PENDING`` or more; it looks again
   ``RETRY_S`` later (held answers are still handed over: they are made already). Observers' Fetches wait in the
   queue meanwhile; a voter's is never queued (contract 1), so the commit path never waits for this bound. A new
   leader meets 1,000 observers behind by more than one answer, at offsets of their own: each answered at once
   with up to 8 MiB, each waiting for its slow reader, was up to 8 GB held (a new leader grew to 14.7 GB at
   1,000 x 1M, docs/SWARM.md, session 15). So the leader holds at most about ``PENDING`` plus one callback's
   answers (contract 6) of observer answers, and serves the catch-up at the pace the observers read it.
   ``KRAFTD_OBSERVER_PENDING_BYTES`` in the environment sets it (0: no bound; an A/B switch for bench/scale.py).
7a. No queued Fetch waits for that bound past its due time: its own long poll (``max_wait_ms``, a broker's 500 ms,
   at most ``DUE_MS``) from when it was offered; a FetchSnapshot (no long poll) ``DUE_MS``. A callback that finds
   the bound reached steps the due Fetches at the queue's head anyway, shaped: ``max_bytes`` at most
   ``DUE_BYTES`` (the log read still gives at least one whole batch, kraftd.core.log.read, so the observer makes
   progress) and ``max_wait_ms`` 0 (an observer at the log end is answered at once with no records and the high
   watermark: its long poll is spent). A broker's Fetch times out after its long poll plus
   ``controller.quorum.request.timeout.ms`` (2 s) and then closes its connection; held in the queue with no limit,
   observers' Fetches timed out ~200 a second at 1,000 x 1M and the brokers reconnected as fast (docs/SWARM.md,
   session 16). ``DUE_MS`` (1 s) is half of that timeout's 2 s, so an answer made at its due time still has the
   rest to be written. Kafka 4.3.1's leader answers every Fetch when it comes due: KafkaRaftClient
   handleFetchRequest reads ``log.read(fetchOffset, UNCOMMITTED, request.maxBytes())`` (KafkaRaftLog.read:
   UnifiedLog.read with minOneMessage, at least one batch), answers at once when it has records, and otherwise
   parks it in its fetch purgatory for ``maxWaitMs``, then answers with what the log has (javap of
   kafka-raft-4.3.1.jar); it has no such bound (its records are sent from the log's file, not held per answer).
   What the leader holds is then ``PENDING``, one callback's answers, and at most one shaped answer per observer
   (each has one Fetch in flight): ``DUE_BYTES`` or one batch each. ``due`` counts the Fetches so stepped.
   ``KRAFTD_OBSERVER_DUE_MS`` in the environment sets ``DUE_MS`` (0: never due, contract 7 alone; an A/B switch).
8. An observer's FetchSnapshot is queued, stepped and answered as its Fetch is (contracts 1-7; its records are
   the chunk it carries): at 1M partitions the log start moves past lagging brokers (retention, KIP-630), and 1,000
   of them fetching the snapshot in 8 MiB chunks, each sliced and encoded at once on the coroutine path, grew a
   leader by 3.8 GB in 5 s (docs/SWARM.md, session 16).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable
from typing import Any

CHUNK = 64  # Fetches stepped per callback (contract 2)
# Answers handed over per callback (contract 2): ~5 ms of writes at 1,000 brokers; 0: not held (contract 5).
REPLY_CHUNK = int(os.environ.get("KRAFTD_OBSERVER_REPLY_CHUNK", "128"))
# Records bytes handed over per callback (contract 2a): 4 MiB, ~2-4 ms of socket writes on this machine.
REPLY_BYTES = int(os.environ.get("KRAFTD_OBSERVER_REPLY_BYTES", str(4 << 20)))

BYTES = 8 * 1024 * 1024  # records per callback (contract 6)
PENDING = int(os.environ.get("KRAFTD_OBSERVER_PENDING_BYTES", str(64 << 20)))  # contract 7
RETRY_S = 0.005  # contract 7
# Contract 7a: the longest a queued Fetch waits for the bound, half a broker's 2 s request timeout;
# ``KRAFTD_OBSERVER_DUE_MS=0`` in the environment: never due (contract 7 alone; an A/B switch for bench/scale.py).
DUE_MS = int(os.environ.get("KRAFTD_OBSERVER_DUE_MS", "1000"))
DUE_BYTES = 64 * 1024  # contract 7a: a due Fetch's max_bytes (one batch when a batch is larger)

Answer = Callable[[Any], None]
Step = Callable[[Any, Answer], bool]


class ObserverFetches:
    def __init__(
        self,
        step: Step,
        chunk: int = CHUNK,
        reply_chunk: int = REPLY_CHUNK,
        reply_bytes: int = REPLY_BYTES,
        waiting: Callable[[], int] = lambda: 0,
        pending: int = PENDING,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """``waiting``: the bytes waiting in the listener's outboxes (contract 7); ``clock``: seconds, the loop's
        time unless given (contract 7a)."""
        self.step, self.chunk, self.reply_chunk, self.reply_bytes = step, chunk, reply_chunk, reply_bytes
        self.waiting, self.pending, self.clock = waiting, pending, clock
        self.deferred = 0  # callbacks that found the bound reached (counted work)
        self.due = 0  # Fetches stepped shaped at their due time (contract 7a, counted work)
        self.queue: deque[tuple[Any, Answer, float]] = deque()  # (body, answer, due time)
        self.held: deque[tuple[Answer, Any]] = deque()
        self.scheduled = False
        self.callbacks = 0  # drain callbacks run (counted work)
        self.most_answered = 0  # the most answers one callback handed over (counted work)
        self.made, self.seen = 0, set[int]()  # contract 6: records made in this callback, of these answers

    def offer(self, body: Any, answer: Answer) -> None:
        """Contracts 1, 7a."""
        wait_ms = min(getattr(body, "max_wait_ms", DUE_MS), DUE_MS)
        self.queue.append((body, answer, self._now() + max(0, wait_ms) / 1000))
        self._schedule()

    def _now(self) -> float:
        return self.clock() if self.clock is not None else asyncio.get_running_loop().time()

    def _schedule(self) -> None:
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._drain)

    def _hold(self, answer: Answer) -> Answer:
        """Contract 2: the answer the core calls, which holds what it is given for a later callback."""
        held = self.held

        def hold(resp: Any) -> None:
            held.append((answer, resp))
            self._count(resp)
            self._schedule()

        return hold

    def _count(self, resp: Any) -> None:
        """Contract 6."""
        if id(resp) not in self.seen:
            self.seen.add(id(resp))
            self.made += records_bytes(resp)

    def _drain(self) -> None:
        """Contracts 2, 2a, 3, 6, 7 and 7a."""
        self.callbacks += 1
        self.made, self.seen = 0, set()
        held, queue = self.held, self.queue
        if held:
            n, budget, counted = 0, self.reply_bytes, set[int]()
            while held and n < self.reply_chunk:  # contracts 2, 2a
                answer, resp = held[0]
                if id(resp) not in counted:
                    if budget <= 0:
                        break
                    counted.add(id(resp))
                    budget -= records_bytes(resp)
                held.popleft()
                answer(resp)
                n += 1
            self.most_answered = max(self.most_answered, n)
        elif queue and 0 < self.pending <= self.waiting():  # contract 7
            self.deferred += 1
            if DUE_MS > 0:
                self._step_due()  # contract 7a
            if queue:
                asyncio.get_running_loop().call_later(RETRY_S, self._drain)
                return
        else:
            step, hold = self.step, self._hold if self.reply_chunk > 0 else None
            for _ in range(min(self.chunk, len(queue))):
                if self.made >= BYTES:
                    break
                body, answer, _ = queue.popleft()
                step(body, hold(answer) if hold is not None else answer)  # False: stopping (contract 4)
        if held or queue:
            asyncio.get_running_loop().call_soon(self._drain)
        else:
            self.scheduled = False

    def _step_due(self) -> None:
        """Contract 7a: the due Fetches at the queue's head, shaped, within contract 6's bytes. Each is due at most
        ``DUE_MS`` after it was offered, and those ahead of it were offered before it, so none waits longer."""
        queue, now, hold = self.queue, self._now(), self._hold if self.reply_chunk > 0 else None
        for _ in range(min(self.chunk, len(queue))):
            if self.made >= BYTES or queue[0][2] > now:
                break
            body, answer, _ = queue.popleft()
            shape(body)
            self.due += 1
            self.step(body, hold(answer) if hold is not None else answer)  # False: stopping (contract 4)


def shape(body: Any) -> None:
    """Contract 7a: a due Fetch (or FetchSnapshot) asks for at most ``DUE_BYTES`` and no more long poll."""
    if hasattr(body, "max_bytes"):
        body.max_bytes = min(body.max_bytes, DUE_BYTES)
    if hasattr(body, "max_wait_ms"):
        body.max_wait_ms = 0


def records_bytes(resp: Any) -> int:
    """Contract 2a: the bytes of records a Fetch answer carries (a FetchSnapshot answer's chunk, contract 8)."""
    total = 0
    for topic in getattr(resp, "responses", None) or getattr(resp, "topics", None) or ():
        for part in topic.partitions:
            records = getattr(part, "records", None) or getattr(part, "unaligned_records", None)
            if records is not None:
                total += len(records)
    return total
