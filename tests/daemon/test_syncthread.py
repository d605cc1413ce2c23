"""The leader's GIL-free fsync thread (kraftd.shell.raft.syncthread; kraftd.shell.raft.flushing contract 5b)."""

from __future__ import annotations

import asyncio
import os
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kraftd.core.batches import data_batch
from kraftd.core.events import LogFlushed
from kraftd.core.types import Role
from kraftd.shell.raft import syncthread
from kraftd.shell.raft.flushing import LogFlusher
from kraftd.storage.errors import LogIOError
from kraftd.storage.log import MetadataLog

pytestmark = pytest.mark.skipif(not syncthread.built(), reason="the compiled fsync loop is not built")


@pytest.fixture
def compiled_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Contract 1: the compiled thread wanted (the default), as the module reads it at import."""
    monkeypatch.setattr(syncthread, "_WANTED", True)
    assert syncthread.available()


def test_the_fsync_runs_while_the_loop_thread_holds_the_gil(tmp_path: Path) -> None:
    """Contract 2: the thread starts, syncs and answers without the GIL. The main thread keeps the GIL for 300 ms
    (a switch interval of 5 s, so it never hands it over); the fsync still ends inside that window. A thread
    running Python (the flusher's Python thread) could not even start it before the window closed."""
    from kraftd.shell.raft import _syncloop  # type: ignore[attr-defined]

    fd = os.open(tmp_path / "seg", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"x" * 4096)
    req_r, req_w = os.pipe()
    done_r, done_w = os.pipe()
    thread = threading.Thread(target=_syncloop.serve, args=(req_r, done_w), daemon=True)
    thread.start()
    time.sleep(0.05)  # the thread is parked in read(), without the GIL
    before = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    try:
        t0 = time.monotonic_ns()
        os.write(req_w, struct.pack("=qq", fd, 42))
        while time.monotonic_ns() - t0 < 300_000_000:  # pure Python: the GIL is never released
            pass
        t1 = time.monotonic_ns()
    finally:
        sys.setswitchinterval(before)
    got_fd, target, err, started_ns, synced_ns = struct.unpack("=qqqqq", os.read(done_r, 40))
    assert (got_fd, target, err) == (fd, 42, 0)
    assert t0 < started_ns <= synced_ns < t1
    os.close(req_w)  # end of file: serve returns
    thread.join(5)
    assert not thread.is_alive()
    for f in (fd, req_r, done_r, done_w):
        os.close(f)


class _Leader:
    """What LogFlusher uses of a leader's node, with a real log on disk."""

    def __init__(self, log: MetadataLog) -> None:
        self.config = type("C", (), {"node_id": 1, "test_fsync_delay_file": None})()
        self.core = type("K", (), {"role": Role.LEADER})()
        self.storage = type("S", (), {"log": log})()
        self.stepped: list[object] = []
        self.fatal: BaseException | None = None
        self.spawned: list[Any] = []

    def now_ms(self) -> int:
        return 0

    def step_now(self, event: object) -> None:
        self.stepped.append(event)

    def spawn_task(self, coro: Any) -> None:
        coro.close()
        self.spawned.append(coro)

    async def shutdown(self) -> None:  # pragma: no cover - only handed to spawn_task
        pass


async def _flush_once(flusher: LogFlusher, node: _Leader) -> None:
    flusher.request()  # handed to the thread at once (flushing contract 5)
    for _ in range(500):
        if node.stepped or node.fatal is not None:
            return
        await asyncio.sleep(0.01)


def _thread_names_during_one_flush(node: _Leader) -> list[str]:
    async def run() -> list[str]:
        flusher = LogFlusher(node)  # type: ignore[arg-type]
        await _flush_once(flusher, node)
        names = [t.name for t in threading.enumerate()]
        flusher.close()
        return names

    return asyncio.run(run())


def test_a_leader_flush_goes_through_the_thread_and_steps_log_flushed(
    tmp_path: Path, compiled_thread: None
) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    log.append(data_batch(0, 1, [b"a", b"b", b"c"], 0).data)
    node = _Leader(log)

    names = _thread_names_during_one_flush(node)
    assert "kraftd-fsync-1" in names and "kraftd-flush-1" not in names  # contract 5b, not the Python thread
    assert node.stepped == [LogFlushed(0, 3)] and log.flushed_offset == 3


def test_a_failed_fsync_is_fatal_and_nothing_is_reported_flushed(
    tmp_path: Path, compiled_thread: None
) -> None:
    """kraftd.shell.node contract 8 through the compiled thread: fsync of a pipe fails (EINVAL)."""
    log = MetadataLog(tmp_path, 1 << 20)
    log.append(data_batch(0, 1, [b"a"], 0).data)
    node = _Leader(log)
    r, w = os.pipe()
    log.begin_flush_fds = lambda: (1, [r], False)  # type: ignore[method-assign]

    async def run() -> None:
        flusher = LogFlusher(node)  # type: ignore[arg-type]
        await _flush_once(flusher, node)
        flusher.close()

    asyncio.run(run())
    assert isinstance(node.fatal, LogIOError) and "fsync" in str(node.fatal)
    assert node.stepped == [] and log.flushed_offset == 0
    with pytest.raises(OSError):
        os.fstat(r)  # the thread's fd was closed once answered
    os.close(w)


def test_the_compiled_thread_is_the_default_and_python_can_be_asked_for() -> None:
    """Contract 1 (issue 25, session 13): wanted unless KRAFTD_FLUSH_THREAD=python."""
    assert syncthread.wanted({}) and syncthread.wanted({"KRAFTD_FLUSH_THREAD": "compiled"})
    assert not syncthread.wanted({"KRAFTD_FLUSH_THREAD": "python"})


def test_asked_for_the_python_thread_flushes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Contract 1: KRAFTD_FLUSH_THREAD=python keeps the Python flush thread (the reference)."""
    monkeypatch.setattr(syncthread, "_WANTED", False)
    log = MetadataLog(tmp_path, 1 << 20)
    log.append(data_batch(0, 1, [b"a"], 0).data)
    node = _Leader(log)

    names = _thread_names_during_one_flush(node)
    assert "kraftd-flush-1" in names and "kraftd-fsync-1" not in names
    assert node.stepped == [LogFlushed(0, 1)] and log.flushed_offset == 1


def _policies_during_one_flush(node: _Leader) -> dict[str, int]:
    """The scheduling policy of each kraftd flush thread alive once one flush completed."""

    async def run() -> dict[str, int]:
        flusher = LogFlusher(node)  # type: ignore[arg-type]
        await _flush_once(flusher, node)
        policies = {
            t.name: os.sched_getscheduler(t.native_id)
            for t in threading.enumerate()
            if t.name.startswith("kraftd-f") and t.native_id is not None
        }
        flusher.close()
        return policies

    return asyncio.run(run())


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="no SCHED_BATCH on this platform")
def test_the_compiled_flush_thread_runs_under_sched_batch(tmp_path: Path, compiled_thread: None) -> None:
    """Contract 2a (issue 25, session 20): the thread the leader's loop wakes at every append is under
    SCHED_BATCH, so its wake-up does not preempt the loop. (Before: the default policy, SCHED_OTHER.)"""
    log = MetadataLog(tmp_path, 1 << 20)
    log.append(data_batch(0, 1, [b"a"], 0).data)
    node = _Leader(log)
    assert _policies_during_one_flush(node) == {"kraftd-fsync-1": os.SCHED_BATCH}
    assert node.stepped == [LogFlushed(0, 1)]


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="no SCHED_BATCH on this platform")
def test_the_python_flush_thread_runs_under_sched_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Contract 2a for the fallback (kraftd.shell.raft.flushing contract 5): the same policy."""
    monkeypatch.setattr(syncthread, "_WANTED", False)
    log = MetadataLog(tmp_path, 1 << 20)
    log.append(data_batch(0, 1, [b"a"], 0).data)
    node = _Leader(log)
    assert _policies_during_one_flush(node) == {"kraftd-flush-1": os.SCHED_BATCH}
    assert node.stepped == [LogFlushed(0, 1)]
