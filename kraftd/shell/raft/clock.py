"""The clock the shell feeds the sans-IO cores (every event carries ``now_ms``).

Contracts:
1. :func:`now_ms` advances with CLOCK_MONOTONIC and never goes backwards: stepping the wall clock of a running
   process (an NTP step, ``date -s``) neither fires nor freezes an election, fetch, check-quorum, request or
   broker-session timer (Raft's timers assume time only moves forward at a steady rate; thesis section 3.4).
2. Its value is the wall clock read once when the process starts plus the monotonic time elapsed since then, so
   timestamps the cores write (batch CreateTime, snapshot headers, delegation-token expiry) stay near wall time;
   a wall clock stepped while the process runs is picked up at its next start.
"""

from __future__ import annotations

import time

_WALL_AT_START_MS = time.time() * 1000
_MONOTONIC_AT_START = time.monotonic()


def now_ms() -> int:
    """Contracts 1-2."""
    return int(_WALL_AT_START_MS + (time.monotonic() - _MONOTONIC_AT_START) * 1000)
