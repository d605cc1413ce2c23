"""What a swarm broker's controller channel did lately, and the swarm loop's own lateness: the evidence a mistaken
fence is traced with (issue 24 §3: 0 brokers fenced by mistake; docs/SWARM.md, session 19).

Contracts:
1. :class:`ChannelTrace` keeps a broker's last ``KEPT`` controller-channel events, each ``(monotonic time, event,
   detail)``: a heartbeat sent (the controller it went to), an attempt that failed (the exception's name), a
   NOT_CONTROLLER answer, no leader known, an answer (its error code, its round trip), the pause before the next
   heartbeat. A bounded deque: 1,000 brokers keep at most ``KEPT`` small tuples each.
2. :meth:`ChannelTrace.since` is the events from ``t`` on, timed from ``origin`` (a fence's instant: negative
   before it), rounded to the millisecond.
3. :class:`LoopLag` notes each time a periodic callback of the swarm's loop ran ``LATE_S`` or more after it was due
   (a turn of the one loop that held every broker's heartbeat back), ``(due, lateness s)``; :meth:`LoopLag.within`
   lists those in a window.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

KEPT = 48
LATE_S = 0.2


class ChannelTrace:
    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: deque[tuple[float, str, Any]] = deque(maxlen=KEPT)

    def note(self, event: str, detail: Any = None) -> None:
        self.events.append((time.monotonic(), event, detail))

    def since(self, t: float, origin: float) -> list[tuple[float, str, Any]]:
        """Contract 2."""
        return [(round(at - origin, 3), e, d) for at, e, d in self.events if at >= t]


class LoopLag:
    def __init__(self) -> None:
        self.late: list[tuple[float, float]] = []

    def ran(self, due: float) -> None:
        """Contract 3: a periodic callback due at ``due`` (monotonic) runs now."""
        late = time.monotonic() - due
        if late >= LATE_S:
            self.late.append((due, late))

    def within(self, start: float, end: float, origin: float) -> list[tuple[float, float]]:
        return [(round(due - origin, 3), round(late, 3)) for due, late in self.late if start <= due <= end]
