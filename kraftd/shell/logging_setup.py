"""Logging in Kafka's layout, to stderr and (``kraftd start --log-dir``) to a rotating file.

Contracts:
1. Every line reads ``[yyyy-MM-dd HH:mm:ss,SSS] LEVEL message (logger)``: Kafka's log4j pattern
   ``[%d] %p %m (%c)%n``, so operators' grep/awk habits carry over.
2. With a log directory, the same lines also go to ``<dir>/server.log`` (Kafka's file name), rotated at
   ``max_bytes`` keeping ``backups`` old files; the directory is created when missing.
3. :class:`RateLimiter` lets a repeated condition (a peer down, a foreign cluster id) log once per interval
   and key, with a count of what it suppressed, so a broken peer cannot flood the log.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
import time
from collections.abc import Callable
from pathlib import Path

KAFKA_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
LOG_FILE = "server.log"


def configure(
    level: str = "INFO",
    log_dir: Path | None = None,
    *,
    max_bytes: int = 100 * 1024 * 1024,
    backups: int = 10,
) -> None:
    """Contracts 1-2: replace the root logger's handlers with stderr (and the rotating file)."""
    formatter = logging.Formatter(KAFKA_FORMAT)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        handlers.append(
            logging.handlers.RotatingFileHandler(
                log_dir / LOG_FILE, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
            )
        )
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
        h.close()
    for h in handlers:
        h.setFormatter(formatter)
        root.addHandler(h)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))


class RateLimiter:
    """Contract 3: ``allow(key)`` is True at most once per ``interval_s`` per key."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._last: dict[object, float] = {}
        self._suppressed: dict[object, int] = {}

    def allow(self, key: object) -> bool:
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval_s:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return False
        self._last[key] = now
        return True

    def suppressed(self, key: object) -> str:
        """`` (N similar suppressed)`` since the last allowed line, or empty; resets the count."""
        n = self._suppressed.pop(key, 0)
        return f" ({n} similar suppressed)" if n else ""

    def forget(self, key: object) -> None:
        self._last.pop(key, None)
        self._suppressed.pop(key, None)
