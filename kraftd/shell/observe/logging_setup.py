"""Logging in Kafka's layout, to stderr and (``kraftd start --log-dir``) to a rotating file.

Contracts:
1. Every line reads ``[yyyy-MM-dd HH:mm:ss,SSS] LEVEL message (logger)``: Kafka's log4j pattern
   ``[%d] %p %m (%c)%n``, so operators' grep/awk habits carry over.
2. With a log directory, the same lines also go to ``<dir>/server.log`` (Kafka's file name), rotated at
   ``max_bytes`` keeping ``backups`` old files; the directory is created when missing.
3. Every event is one line: whatever the message's arguments carry (cluster ids, client ids, software names,
   topic and resource names, principals, config values, peers' error messages, exception texts) is rendered
   with control characters (Unicode Cc: C0, DEL, C1) and line/paragraph separators escaped as ``\\xNN`` /
   ``\\uNNNN`` by :class:`OneLineFormatter`, the one formatter every handler uses, so that nothing a peer sends
   can forge a log line. A traceback keeps Python's layout (its frames are our code); each exception's text
   in it is escaped the same way.
4. :class:`RateLimiter` lets a repeated condition (a peer down, a foreign cluster id) log once per interval
   and key, with a count of what it suppressed, so a broken peer cannot flood the log.
"""

from __future__ import annotations

import logging
import logging.handlers
import re
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

KAFKA_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
LOG_FILE = "server.log"

# Contract 3: Unicode category Cc (C0 controls, DEL, C1 controls) plus the characters str.splitlines()
# and editors treat as line breaks (U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _escape_char(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def escape(text: str) -> str:
    """Contract 3: ``text`` with every control character written as ``\\xNN`` (``\\uNNNN`` above 0xff)."""
    return _UNSAFE.sub(_escape_char, text)


ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]


class OneLineFormatter(logging.Formatter):
    """Contracts 1 and 3: Kafka's layout, the rendered message escaped so that an event is one line."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's API
        record.message = escape(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: ExcInfo) -> str:  # noqa: N802 - logging's API
        if ei[1] is None:
            return ""
        lines: list[str] = []
        _traceback_lines(traceback.TracebackException(type(ei[1]), ei[1], ei[2]), lines, set())
        return "".join(lines).rstrip("\n")


def _traceback_lines(te: traceback.TracebackException, out: list[str], seen: set[int]) -> None:
    """Python's traceback layout (chained exceptions first), each exception's own text escaped."""
    seen.add(id(te))
    if te.__cause__ is not None and id(te.__cause__) not in seen:
        _traceback_lines(te.__cause__, out, seen)
        out.append("\nThe above exception was the direct cause of the following exception:\n\n")
    elif te.__context__ is not None and not te.__suppress_context__ and id(te.__context__) not in seen:
        _traceback_lines(te.__context__, out, seen)
        out.append("\nDuring handling of the above exception, another exception occurred:\n\n")
    if te.stack:
        out.append("Traceback (most recent call last):\n")
        out.extend(te.stack.format())
    out.append(escape("".join(te.format_exception_only()).rstrip("\n")) + "\n")


def configure(
    level: str = "INFO",
    log_dir: Path | None = None,
    *,
    max_bytes: int = 100 * 1024 * 1024,
    backups: int = 10,
) -> None:
    """Contracts 1-2: replace the root logger's handlers with stderr (and the rotating file)."""
    formatter = OneLineFormatter(KAFKA_FORMAT)
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
    """Contract 4: ``allow(key)`` is True at most once per ``interval_s`` per key."""

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
