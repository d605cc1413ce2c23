"""Fencing's chunks pipelined (kraftd.shell.controller.fencing contract 1 with ``append``, glue contract 10; issue
24 broker failure): each chunk is computed once the previous one is applied to the latest image, not once it
committed, so a broker's fencing costs about one commit, not one per chunk; the result is the one the unpipelined
loop gives, and a lost leadership fails it."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import pytest

from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from kraftd.controller import brokers, topics
from kraftd.controller.image_writer import same_image
from kraftd.controller.machine import MetadataController
from kraftd.core.replication import NotLeaderError
from kraftd.core.types import OffsetRange
from kraftd.shell.controller import fencing
from kraftd.shell.controller import glue as glue_mod
from kwire.errors import ErrorCode
from tests.helpers.controller import apply_records, cluster, heartbeat

VICTIM = 2


class _Node:
    """Appends apply to the leader's view at once; each commits only when the test says so."""

    def __init__(self, machine: MetadataController) -> None:
        self.machine = machine
        self.end = machine.latest().offset + 1
        self.appends: list[int] = []  # records per append
        self.commits: list[asyncio.Future[None]] = []
        self.controller = glue_mod.ControllerGlue(self, machine)  # type: ignore[arg-type]

    async def append(self, values: Sequence[bytes], on_range: Callable[[OffsetRange], None]) -> int:
        self.appends.append(len(values))
        first, self.end = self.end, self.end + len(values)
        on_range(OffsetRange(first, self.end - 1, 1))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.commits.append(done)
        await done
        return self.end - 1


def _leader(topic_count: int = 5) -> tuple[_Node, Any]:
    m = MetadataController(1, [])
    m.committed, _ = cluster(5)
    req = CreateTopicsRequest(topics=[CreatableTopic(f"t{i}", 40, 3) for i in range(topic_count)])
    apply_records(m.committed, topics.create_topics(m.committed, req, random.Random(5))[0])
    one_shot = m.committed.copy()
    apply_records(one_shot, brokers.fence(one_shot, VICTIM))
    m.become_leader(1, 0)
    assert m.activation_records() is not None and m.active
    return _Node(m), one_shot


def _fence(node: _Node) -> Coroutine[Any, Any, ErrorCode]:
    glue = node.controller
    return fencing.fence_in_chunks(node.machine.latest, glue.write_settled, VICTIM, glue.append_settled)


def test_every_chunk_is_appended_before_the_first_commits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fencing, "CHUNK", 10)
    node, one_shot = _leader()
    holding = len(brokers.holding(node.machine.latest(), VICTIM, isr=True))

    async def run() -> tuple[ErrorCode, int, int]:
        task = asyncio.create_task(_fence(node))
        for _ in range(200):  # nothing commits meanwhile
            await asyncio.sleep(0)
        appended_uncommitted = len(node.appends)
        for done in node.commits:
            done.set_result(None)
        error = await task
        return error, appended_uncommitted, len(node.appends)

    error, before_any_commit, writes = asyncio.run(run())
    assert error == ErrorCode.NONE
    assert writes == -(-holding // 10) >= 5  # CHUNK-sized moves, the last with the fence record
    assert before_any_commit == writes  # all of them, the fence too, before the first commit
    assert all(n <= 10 + 1 for n in node.appends)
    assert same_image(node.machine.latest(), one_shot)  # what one fencing write gives


def test_a_lost_leadership_fails_the_pipelined_fencing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fencing, "CHUNK", 10)
    node, _ = _leader()

    async def run() -> ErrorCode:
        task = asyncio.create_task(_fence(node))
        for _ in range(3):
            await asyncio.sleep(0)
        for done in node.commits:
            done.set_exception(NotLeaderError("deposed"))
        node.machine.resign(2)
        return await task

    assert asyncio.run(run()) == ErrorCode.NOT_CONTROLLER


def test_pipelined_chunks_are_a_quarter_of_the_unpipelined_ones() -> None:
    """Contract 1a (issue 24, session 14): with the default sizes each pipelined write holds at most
    PIPELINED_CHUNK (250) moves plus the fence record, so one step computes or encodes at most that many."""
    node, one_shot = _leader(topic_count=20)  # the victim in the ISRs of ~480 of 800 partitions
    holding = len(brokers.holding(node.machine.latest(), VICTIM, isr=True))
    assert 250 < holding < fencing.CHUNK

    async def run() -> ErrorCode:
        task = asyncio.create_task(_fence(node))
        while not task.done():
            await asyncio.sleep(0)
            for done in node.commits:
                if not done.done():
                    done.set_result(None)
        return await task

    assert asyncio.run(run()) == ErrorCode.NONE
    assert len(node.appends) == -(-holding // 250) >= 2 and max(node.appends) <= 250 + 1, node.appends
    assert same_image(node.machine.latest(), one_shot)


def test_a_controlled_shutdowns_chunks_are_pipelined_and_end_where_one_heartbeat_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Contract 4a (issue 24, session 14: each 1,000-move chunk waited for its commit and was one 60-100 ms step
    of loop CPU at 1M partitions): every chunk but the heartbeat's is appended before the first commits, none
    holds more than PIPELINED_CHUNK moves, and with the heartbeat's own records the image is the one-shot one."""
    monkeypatch.setattr(fencing, "PIPELINED_CHUNK", 10)
    node, _ = _leader()
    latest = node.machine.latest
    holding = len(brokers.holding(latest(), VICTIM, isr=True))
    hb = brokers.Heartbeats()
    one_shot = latest().copy()
    apply_records(
        one_shot, brokers.heartbeat(one_shot, heartbeat(one_shot, VICTIM, want_shut_down=True), hb, 0).records
    )
    glue = node.controller
    epoch = latest().brokers[VICTIM].epoch

    async def run() -> tuple[ErrorCode, int]:
        task = asyncio.create_task(
            fencing.shut_down_in_chunks(latest, glue.write_settled, VICTIM, epoch, glue.append_settled)
        )
        for _ in range(200):  # nothing commits meanwhile
            await asyncio.sleep(0)
        appended_uncommitted = len(node.appends)
        for done in node.commits:
            done.set_result(None)
        return await task, appended_uncommitted

    error, before_any_commit = asyncio.run(run())
    assert error == ErrorCode.NONE
    assert len(node.appends) == -(-holding // 10) - 1 >= 5  # the last chunk goes with the heartbeat
    assert before_any_commit == len(node.appends)  # 1 before: each chunk waited for its commit
    assert max(node.appends) <= 10 + 1  # the first also marks the broker in controlled shutdown
    image = latest()
    assert image.brokers[VICTIM].in_controlled_shutdown
    apply_records(
        image, brokers.heartbeat(image, heartbeat(image, VICTIM, want_shut_down=True), hb, 0).records
    )
    assert same_image(image, one_shot)
