"""Stage marks for profiling one commit across processes (docs/PERFORMANCE.md, issue 25).

Contracts:
1. Off unless the environment names ``KRAFTD_STAGE_TRACE`` (a directory): then :func:`mark` records
   (CLOCK_MONOTONIC ns, stage) in memory and every ``KEEP`` marks, and at exit, appends them to
   ``<dir>/<pid>.trace`` as ``<ns> <stage>`` lines. CLOCK_MONOTONIC is one clock for every process of the
   machine, so the files of a 3-process quorum line up (bench/stages.py reads them).
1a. ``KEEP`` is large (a few seconds of a benchmark's marks): writing the file is a stall of milliseconds on
   whichever thread marks, and a dump every 4,096 marks was the slowest 1% of traced commits (session 13).
   Marks are kept as lines (strings), not tuples, so holding them adds nothing for the garbage collector to
   scan (tuples made young collections more frequent and slower than in an untraced run).
2. When off, :data:`ON` is False and callers guard with it: a mark costs one global lookup.
3. When on, every garbage collection is marked too (``gc.start.<generation>``, ``gc.end``), so the slowest
   commits can be matched against collections (``bench/stages.py --slowest``).
"""

from __future__ import annotations

import atexit
import gc
import os
import signal
import time

_DIR = os.environ.get("KRAFTD_STAGE_TRACE")
ON = bool(_DIR)
_marks: list[str] = []  # "<ns> <stage>" lines: strings are not tracked by the GC (contract 1a)
_now = time.monotonic_ns
KEEP = 1 << 19  # contract 1a


def mark(stage: str) -> None:
    _marks.append(f"{_now()} {stage}\n")
    if len(_marks) >= KEEP:
        dump()


def mark_at(ns: int, stage: str) -> None:
    """A mark taken elsewhere (another thread's CLOCK_MONOTONIC reading), recorded now."""
    _marks.append(f"{ns} {stage}\n")
    if len(_marks) >= KEEP:
        dump()


def dump() -> None:
    if not _DIR or not _marks:
        return
    os.makedirs(_DIR, exist_ok=True)
    with open(os.path.join(_DIR, f"{os.getpid()}.trace"), "a") as out:
        out.write("".join(_marks))
    _marks.clear()


def _on_gc(phase: str, info: dict[str, int]) -> None:
    """Contract 3."""
    mark(f"gc.start.{info.get('generation')}" if phase == "start" else "gc.end")


if ON:
    gc.callbacks.append(_on_gc)
    atexit.register(dump)
    _previous = signal.getsignal(signal.SIGTERM)

    def _on_term(signum: int, frame: object) -> None:
        dump()
        if callable(_previous):
            _previous(signum, frame)  # type: ignore[arg-type]
        else:
            raise SystemExit(0)

    signal.signal(signal.SIGTERM, _on_term)
