"""The shell's commit fast path: the driver's inbox, a non-leader's inline fsync, the first-commit log line."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from kraftd.config import load_config
from kraftd.core.batches import data_batch
from kraftd.core.events import LogFlushed, Tick
from kraftd.core.replication import NotLeaderError
from kraftd.core.types import Role
from kraftd.shell.node import ControllerNode
from kraftd.shell.raft.inbox import EventInbox
from kraftd.storage import fsio
from kraftd.storage.errors import LogIOError
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.daemon.conftest import write_properties
from tools.storage_cli import format_directory


def test_inbox_keeps_order_times_out_and_wakes_a_waiter() -> None:
    async def run() -> None:
        inbox = EventInbox()
        t0 = time.monotonic()
        assert await inbox.get(0.05) is None
        assert time.monotonic() - t0 >= 0.04
        inbox.put_nowait(Tick(1))
        inbox.put_nowait(Tick(2))
        assert [await inbox.get(1), await inbox.get(1)] == [Tick(1), Tick(2)]
        waiter = asyncio.ensure_future(inbox.get(10))
        await asyncio.sleep(0)
        t0 = time.monotonic()
        asyncio.get_running_loop().call_later(0.01, inbox.put_nowait, Tick(3))
        assert await waiter == Tick(3)
        assert time.monotonic() - t0 < 5
        assert inbox.qsize() == 0

    asyncio.run(run())


def lonely_voter(tmp_path: Path) -> ControllerNode:
    """Node 1 of a two-voter quorum whose other voter never runs: it never leads."""
    cfg = tmp_path / "s.properties"
    port, other = free_ports(2)
    voters = f"1@127.0.0.1:{port},2@127.0.0.1:{other}"
    write_properties(cfg, 1, port, tmp_path / "d", voters=voters)
    format_directory(load_config(cfg), CLUSTER_ID)
    return ControllerNode(load_config(cfg), seed=3)


def test_a_non_leader_reports_a_flush_only_after_its_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def run() -> None:
        node = lonely_voter(tmp_path)
        await node.start()
        try:
            assert node.core.role is not Role.LEADER and node.storage is not None
            log = node.storage.log
            synced: list[tuple[int, int]] = []  # (log end offset, events queued) at each fsync
            real = fsio.os.fsync

            def watching(fd: int) -> None:
                real(fd)
                synced.append((log.end_offset, node._events.qsize()))

            monkeypatch.setattr(fsio.os, "fsync", watching)
            if node._driver is not None:
                node._driver.cancel()  # the test reads the inbox itself
                await asyncio.sleep(0)
            log.append(data_batch(log.end_offset, 0, [b"x" * 10], 0).data)
            end = log.end_offset
            node.flusher.request()
            assert synced and synced[-1] == (end, 0)  # fsync first, with nothing reported yet
            event = await node._events.get(1)
            assert isinstance(event, LogFlushed) and event.offset == end and log.flushed_offset == end

            def broken(fd: int) -> None:
                raise OSError(5, "Input/output error")

            monkeypatch.setattr(fsio.os, "fsync", broken)
            log.append(data_batch(log.end_offset, 0, [b"y" * 10], 0).data)
            with pytest.raises(LogIOError):
                node.flusher.request()
            assert node._events.qsize() == 0 and log.flushed_offset == end  # nothing claimed durable
        finally:
            monkeypatch.undo()
            await node.stop(graceful=False)

    asyncio.run(run())


def test_a_new_leader_logs_its_first_commit_of_the_epoch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def run() -> None:
        cfg = tmp_path / "one.properties"
        (port,) = free_ports(1)
        write_properties(cfg, 1, port, tmp_path / "one", voters=f"1@127.0.0.1:{port}")
        format_directory(load_config(cfg), CLUSTER_ID)
        node = ControllerNode(load_config(cfg), seed=1)
        await node.start()
        try:
            await node.wait_for_leader(10)
            await node.append([b"r"])
            await node.append([b"s"])
        finally:
            await node.stop()

    with caplog.at_level(logging.INFO, logger="kraftd.node"):
        asyncio.run(run())
    lines = [r.getMessage() for r in caplog.records if "first commit as leader" in r.getMessage()]
    assert len(lines) == 1 and lines[0].startswith("node 1: high watermark ") and lines[0].endswith("epoch 1")


def test_an_append_replaced_by_another_leaders_batch_is_not_acknowledged(tmp_path: Path) -> None:
    """A deposed leader's uncommitted append at offset 1 was truncated; the new leader's batch at offset 1
    committed. The old append must fail, not resolve as if its record had committed."""

    async def run() -> None:
        node = lonely_voter(tmp_path)
        await node.start()
        try:
            node.core.log.append(data_batch(0, 2, [b"theirs-0", b"theirs-1"], 0))
            loop = asyncio.get_running_loop()
            replaced, kept, later = loop.create_future(), loop.create_future(), loop.create_future()
            node.commits.waiters.extend([(1, 1, replaced), (1, 2, kept), (5, 2, later)])
            node._commit(2)
            assert kept.result() == 1
            with pytest.raises(NotLeaderError):
                replaced.result()
            assert not later.done() and [w[0] for w in node.commits.waiters] == [5]
        finally:
            await node.stop(graceful=False)

    asyncio.run(run())


class _FlushNode:
    """What LogFlusher uses of a leader's node, recording when the fsync runs and what is stepped."""

    def __init__(self, order: list[str]) -> None:
        self.order = order
        self.config = type("C", (), {"node_id": 1, "test_fsync_delay_file": None})()
        self.core = type("K", (), {"role": Role.LEADER})()
        log = type("L", (), {})()
        log.begin_flush = lambda: (7, lambda: order.append("fsync"))
        log.complete_flush = lambda target: target
        self.storage = type("S", (), {"log": log})()
        self.stepped: list[object] = []

    def now_ms(self) -> int:
        return 0

    def step_now(self, event: object) -> None:
        self.stepped.append(event)


def test_a_leader_flush_starts_at_its_flush_log_effect() -> None:
    """kraftd.shell.raft.flushing contract 5 (issue 25, session 13): FlushLog hands the fsync to the flush thread
    at once, not when the step ends: with nothing else done after request(), the fsync runs and LogFlushed is
    stepped once it completed. (Before, the fsync waited for the step's end and never ran here.)"""
    from kraftd.shell.raft.flushing import LogFlusher

    async def run() -> tuple[list[str], list[object]]:
        order: list[str] = []
        node = _FlushNode(order)
        flusher = LogFlusher(node)  # type: ignore[arg-type]
        flusher.request()
        for _ in range(200):
            if node.stepped:
                break
            await asyncio.sleep(0.01)
        flusher.close()
        return order, node.stepped

    order, stepped = asyncio.run(run())
    assert order == ["fsync"]
    assert stepped == [LogFlushed(0, 7)]


def test_a_leader_s_flush_is_handed_over_after_the_step_s_answers_are_written() -> None:
    """Contract 5 through the driver (issue 25, session 20): executing a leader's step effects (AppendBatches,
    FlushLog, then both parked Fetches' answers, in the core's order) writes every answer before the flush is
    handed to its thread, so the hand-over's wake-up of that thread cannot preempt the loop before the followers
    have their records; the fsync still starts inside the step, before any apply. (Before: handed over at the
    FlushLog effect, ahead of the answers.)"""
    from kraftd.core import effects as fx
    from kraftd.shell.raft.driver import RaftDriver
    from kraftd.shell.raft.flushing import LogFlusher

    async def run() -> list[str]:
        order: list[str] = []
        flush_node = _FlushNode(order)
        flusher = LogFlusher(flush_node)  # type: ignore[arg-type]
        hand_over = flusher._hand_over

        def handed(job: object) -> None:
            order.append("flush handed over")
            hand_over(job)  # type: ignore[arg-type]

        flusher._hand_over = handed  # type: ignore[method-assign]
        flusher._one_fd_job = lambda: False  # type: ignore[method-assign]  # the Python thread: observable
        node = type("N", (), {"flusher": flusher, "applies": []})()
        driver = RaftDriver(node)  # type: ignore[arg-type]
        driver.pending[1] = lambda message: order.append("answer 1 written")
        driver.pending[2] = lambda message: order.append("answer 2 written")
        driver.execute([fx.FlushLog(7), fx.SendResponse(1, object()), fx.SendResponse(2, object())])
        order.append("step done")
        for _ in range(200):
            if flush_node.stepped:
                break
            await asyncio.sleep(0.01)
        flusher.close()
        return order

    order = asyncio.run(run())
    assert order[:4] == ["answer 1 written", "answer 2 written", "flush handed over", "step done"]
    assert "fsync" in order


def test_a_non_leader_flushes_inline_at_its_flush_log_effect() -> None:
    """Contract 5a through the driver: a follower's FlushLog fsyncs at its effect, before any later effect of the
    step (its acknowledgement, the next Fetch, must never go out ahead of the fsync)."""
    from kraftd.core import effects as fx
    from kraftd.shell.raft.driver import RaftDriver
    from kraftd.shell.raft.flushing import LogFlusher

    order: list[str] = []
    flush_node = _FlushNode(order)
    flush_node.core.role = Role.FOLLOWER  # type: ignore[attr-defined]
    flush_node.storage.log.flush = lambda: order.append("fsync") or 7  # type: ignore[attr-defined]
    flush_node.post = lambda event: order.append("LogFlushed queued")  # type: ignore[attr-defined]
    flusher = LogFlusher(flush_node)  # type: ignore[arg-type]
    node = type("N", (), {"flusher": flusher})()
    driver = RaftDriver(node)  # type: ignore[arg-type]
    driver.pending[1] = lambda message: order.append("answer written")
    driver.execute([fx.FlushLog(7), fx.SendResponse(1, object())])
    assert order == ["fsync", "LogFlushed queued", "answer written"]


class _ApplyNode:
    """What RaftDriver touches of a follower, recording the order of writes, fsyncs, sends and applies."""

    def __init__(self, order: list[str], script: list[list[object]]) -> None:
        from types import SimpleNamespace

        self.order = order
        self.closing = False
        self.stopping = False
        self.driver: object = None
        noop = SimpleNamespace(add=lambda *_: None)
        self.observer = SimpleNamespace(
            snapshot=lambda: None, step=lambda *_: None, measures=SimpleNamespace(busy_s=noop, idle_s=noop)
        )
        self.metrics = SimpleNamespace(event_done=lambda *_: None)
        self.snapshots = SimpleNamespace(poll=lambda: None)
        self.reads = SimpleNamespace(seal=lambda: None, resolved=lambda e: order.append("read resolved"))
        self.controller = SimpleNamespace(after_step=lambda: order.append("after_step"))
        self.mirror = SimpleNamespace(apply=lambda e: order.append("written"))
        self.flusher = SimpleNamespace(request=self._flush, hands_over=lambda: False)
        self.client = _ScriptedClient(order, script)

    def _flush(self) -> None:  # kraftd.shell.raft.flushing contract 5a: inline, LogFlushed queued
        self.order.append("fsync")
        self.driver.events.put_nowait(LogFlushed(0, 5))  # type: ignore[attr-defined]

    def commit_seen(self, hwm: int) -> None:
        self.order.append(f"commit seen {hwm}")


class _ScriptedClient:
    def __init__(self, order: list[str], script: list[list[object]]) -> None:
        self.order, self.script = order, script

    notify = True  # kraftd.core.client contract 1a: the shell's client is built with notify=False

    def step(self, event: object) -> list[object]:
        effects = self.script.pop(0)
        if self.notify:  # kraftd.core.client contract 1: the listeners inside step
            for e in effects:
                self.deliver(e)
        return effects

    def deliver(self, e: object) -> None:
        from kraftd.core import effects as fx

        if isinstance(e, fx.ApplyCommitted):
            self.order.append(f"replayed {e.high_watermark}")


def test_a_follower_writes_its_next_fetch_before_it_applies_what_the_answer_committed() -> None:
    """kraftd.shell.node contract 13 (issue 25): persist, then send, then apply. A follower's step of a Fetch
    answer (write, inline fsync, the previous record committed) and the LogFlushed step it queued (the next
    Fetch) run first; the controller's replay of the committed batch, the commit and after_step come after the
    Fetch is written. (Before, the listeners replayed inside the core's step, ahead of the write and fsync.)"""
    from kraftd.core import effects as fx
    from kraftd.core.events import ResponseReceived
    from kraftd.shell.raft.driver import RaftDriver

    order: list[str] = []
    script: list[list[object]] = [
        [
            fx.AppendBatches(()),
            fx.FlushLog(5),
            fx.ApplyCommitted((), 4),
            fx.ReadResolved(1, 0),
            fx.SetDeadline(9),
        ],
        [fx.SendRequest(1, 7, object()), fx.SetDeadline(9)],
    ]
    node = _ApplyNode(order, script)
    node.client.notify = False  # as kraftd.shell.node builds it
    driver = RaftDriver(node)  # type: ignore[arg-type]
    node.driver = driver
    driver.task = object()  # type: ignore[assignment]
    driver.deadline = 1 << 62
    driver.events.idle = lambda: True  # type: ignore[method-assign]
    driver._send_now = lambda dest, rid, msg: order.append("fetch sent") is None  # type: ignore[method-assign]
    driver.step_now(ResponseReceived(0, 1, 6, object()))
    assert not script
    assert order == [
        "written",
        "fsync",
        "fetch sent",
        "replayed 4",
        "commit seen 4",
        "read resolved",
        "after_step",
    ]
