"""CreateTopics in bounded steps (kraftd.controller.topics contract 4, kraftd.shell.controller.glue contract 7,
kraftd.shell.controller.topic_admin contract 2a; issues 22, 24): a 50 x 100-partition request is computed over
several loop turns, not in one step, and still written as ONE atomic batch; a write applied between its slices
that changes what it depends on makes it computed again over the latest image."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from generated.broker_registration_change_record import BrokerRegistrationChangeRecord
from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from generated.create_topics_response import CreateTopicsResponse
from generated.partition_record import PartitionRecord
from generated.topic_record import TopicRecord
from kraftd.controller import machine as machine_mod
from kraftd.controller import topics
from kraftd.controller.machine import MetadataController
from kraftd.core.types import OffsetRange
from kraftd.shell.controller import glue as glue_mod
from kraftd.shell.controller.topic_admin import ControllerAdmin
from kwire.errors import ErrorCode
from tests.helpers.controller import LoopTurns, cluster

TOPICS, PARTITIONS = 50, 100


class _Node:
    """The node side the glue writes through: each append is applied to the view and committed at once."""

    def __init__(self, machine: MetadataController) -> None:
        self.rng = random.Random(3)
        self.machine = machine
        self.appends: list[list[bytes]] = []
        self.end = machine.latest().offset + 1
        self.controller = glue_mod.ControllerGlue(self, machine)  # type: ignore[arg-type]

    async def append(self, values: Sequence[bytes], on_range: Callable[[OffsetRange], None]) -> int:
        self.appends.append(list(values))
        first, self.end = self.end, self.end + len(values)
        on_range(OffsetRange(first, self.end - 1, 1))
        return self.end - 1


def _leader(brokers: int) -> tuple[_Node, ControllerAdmin]:
    m = MetadataController(1, [])
    m.committed, _ = cluster(brokers)
    m.become_leader(1, 0)
    assert m.activation_records() is not None and m.active
    node = _Node(m)
    return node, ControllerAdmin(node)  # type: ignore[arg-type]


def _request(prefix: str = "t") -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[CreatableTopic(f"{prefix}{i}", PARTITIONS, 3) for i in range(TOPICS)], timeout_ms=1000
    )


def _created(records: list[Any]) -> list[PartitionRecord]:
    return [r for r in records if isinstance(r, PartitionRecord)]


def test_a_large_create_topics_is_computed_over_many_loop_turns_and_written_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(glue_mod, "SLICE_S", 0.0)  # one step a turn
    node, admin = _leader(30)

    async def run() -> tuple[CreateTopicsResponse, int]:
        async with LoopTurns() as turns:
            out: CreateTopicsResponse = await admin.create_topics(_request(), 7, "User:admin")
        return out, turns.since_open

    out, turns = asyncio.run(run())
    assert [t.error_code for t in out.topics] == [ErrorCode.NONE] * TOPICS
    # At least one turn per topic and per STEP partitions: no step computed the whole request.
    assert turns >= TOPICS * max(1, PARTITIONS // topics.STEP)
    assert len(node.appends) == 1 and len(node.appends[0]) == TOPICS * (PARTITIONS + 1)  # one atomic write
    view = node.machine.latest()
    assert len(view.topics) == TOPICS
    assert all(len(t.partitions) == PARTITIONS for t in view.topics.values())


def test_a_topic_yields_every_step_partitions() -> None:
    image, _ = cluster(30)
    req = CreateTopicsRequest(topics=[CreatableTopic("big", 10 * topics.STEP, 3)])
    steps = topics.create_topics_steps(image, req, random.Random(1))
    yields = 0
    with pytest.raises(StopIteration) as done:
        while True:
            next(steps)
            yields += 1
    records, results = done.value.value
    assert yields >= 10
    assert (records, results) == topics.create_topics(image, req, random.Random(1))
    live = topics.usable_brokers(image)
    start = live.index(records[1].replicas[0])  # rack-unaware striping (contract 2)
    for r in _created(records):
        assert r.replicas == [live[(start + r.partition_id + i) % len(live)] for i in range(3)]


def test_a_broker_fenced_between_the_slices_gets_no_new_replica(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(glue_mod, "SLICE_S", 0.0)
    node, admin = _leader(6)
    victim = 4
    epoch = node.machine.latest().brokers[victim].epoch

    async def run() -> CreateTopicsResponse:
        create = asyncio.create_task(admin.create_topics(_request(), 7, "User:admin"))
        for _ in range(3):
            await asyncio.sleep(0)
        assert not create.done()
        fence = BrokerRegistrationChangeRecord(broker_id=victim, broker_epoch=epoch, fenced=1)
        assert await node.controller.try_write([fence]) == ErrorCode.NONE
        out: CreateTopicsResponse = await create
        return out

    out = asyncio.run(run())
    assert [t.error_code for t in out.topics] == [ErrorCode.NONE] * TOPICS
    view = node.machine.latest()
    assert view.brokers[victim].fenced
    placed = [p.replicas for t in view.topics.values() for p in t.partitions.values()]
    assert len(placed) == TOPICS * PARTITIONS and not any(victim in r for r in placed)


def test_a_name_taken_between_the_slices_is_refused_not_created_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(glue_mod, "SLICE_S", 0.0)
    node, admin = _leader(6)

    async def run() -> CreateTopicsResponse:
        create = asyncio.create_task(admin.create_topics(_request(), 7, "User:admin"))
        for _ in range(3):
            await asyncio.sleep(0)
        taken = TopicRecord(name="t45", topic_id=uuid.UUID(int=12345))
        assert await node.controller.try_write([taken]) == ErrorCode.NONE
        out: CreateTopicsResponse = await create
        return out

    out = asyncio.run(run())
    errors = {t.name: t.error_code for t in out.topics}
    assert errors.pop("t45") == ErrorCode.TOPIC_ALREADY_EXISTS
    assert set(errors.values()) == {ErrorCode.NONE}
    view = node.machine.latest()
    assert len(view.topics) == TOPICS  # 49 created by the request, t45 by the other write
    assert len(view.topics[view.topic_ids["t45"]].partitions) == 0


def test_still_valid_compares_brokers_features_and_names() -> None:
    image, _ = cluster(4)
    start = topics.frozen(image)
    records, results = topics.create_topics(start, _request(), random.Random(2))
    assert topics.still_valid(start, image, results)
    assert topics.still_valid(start, image.copy(), results)
    later = image.copy()
    later.topic_ids = later.topic_ids.set("t3", results[3].topic_id)
    assert not topics.still_valid(start, later, results)
    moved = image.copy()
    moved.brokers = moved.brokers.delete(2)
    assert not topics.still_valid(start, moved, results)


def test_the_write_of_a_large_create_topics_is_encoded_over_many_loop_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Glue contract 8: the 5,050 records are encoded FRAME_STEP at a time, not in the write's one step."""
    monkeypatch.setattr(glue_mod, "SLICE_S", 0.0)
    encoded = [0]

    def counted(encode: Callable[..., bytes]) -> Callable[..., bytes]:
        def inner(*args: Any) -> bytes:
            encoded[0] += 1
            return encode(*args)

        return inner

    monkeypatch.setattr(
        machine_mod, "encode_record", counted(machine_mod.encode_record)
    )  # glue frames through it
    node, admin = _leader(30)
    most = [0]

    async def watch() -> None:
        while True:
            before = encoded[0]
            await asyncio.sleep(0)
            most[0] = max(most[0], encoded[0] - before)

    async def run() -> CreateTopicsResponse:
        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0)
        out: CreateTopicsResponse = await admin.create_topics(_request(), 7, "User:admin")
        await asyncio.sleep(0)  # the watcher sees the last turn too
        watcher.cancel()
        return out

    out = asyncio.run(run())
    assert [t.error_code for t in out.topics] == [ErrorCode.NONE] * TOPICS
    assert encoded[0] == TOPICS * (PARTITIONS + 1)  # each record encoded once
    assert most[0] <= glue_mod.FRAME_STEP
    assert len(node.appends) == 1 and len(node.appends[0]) == TOPICS * (PARTITIONS + 1)
