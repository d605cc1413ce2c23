"""A write's handler waits until the uncommitted view holds every appended record, applied in the drain's slices,
instead of applying them all in one step through ``latest()`` (kraftd.shell.controller.glue contract 5, issue 24:
a heartbeat arriving after a few 5k-partition CreateTopics writes applied them all at once, 0.5 s on the loop)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from generated.config_record import ConfigRecord
from generated.feature_level_record import FeatureLevelRecord
from kraftd.controller.machine import MetadataController
from kraftd.core.types import OffsetRange
from kraftd.shell.controller import glue
from kwire.errors import ErrorCode
from kwire.metadata_frame import encode_record
from tests.helpers.controller import LoopTurns

RECORDS = 3000


def test_settled_applies_the_appended_records_in_slices_between_loop_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(glue, "SLICE_S", 0.0)  # one REPLAY_STEP a turn
    m = MetadataController(
        1, [encode_record(FeatureLevelRecord(name="metadata.version", feature_level=30), 0)]
    )
    m.become_leader(1, 0)
    assert m.activation_records() is not None and m.active
    g = glue.ControllerGlue(Any, m)  # type: ignore[arg-type]  # no node: nothing here appends or steps
    values = [
        encode_record(ConfigRecord(resource_type=4, resource_name="", name="a", value=str(i)), 0)
        for i in range(RECORDS)
    ]

    async def run() -> int:
        async with LoopTurns() as turns:
            m.append_later(1, values)
            assert m.appended_pending
            await g.settled()
        return turns.count

    turns = asyncio.run(run())
    assert not m.appended_pending and m.latest().offset == RECORDS
    assert turns >= RECORDS // glue.REPLAY_STEP - 1  # the loop turned between the slices


def test_settled_waits_only_for_what_was_appended_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream of writes appended after a handler started waiting cannot starve it (a heartbeat)."""
    monkeypatch.setattr(glue, "SLICE_S", 0.0)  # one REPLAY_STEP a turn: the writes outpace the drain
    m = MetadataController(
        1, [encode_record(FeatureLevelRecord(name="metadata.version", feature_level=30), 0)]
    )
    m.become_leader(1, 0)
    assert m.activation_records() is not None and m.active
    g = glue.ControllerGlue(Any, m)  # type: ignore[arg-type]

    def values(n: int) -> list[bytes]:
        return [
            encode_record(ConfigRecord(resource_type=4, resource_name="", name="a", value=str(i)), 0)
            for i in range(n)
        ]

    async def run() -> None:
        m.append_later(1, values(500))
        waiter = asyncio.create_task(g.settled())
        end = 501
        for _ in range(50):  # a write appended at every turn, faster than the drain applies them
            await asyncio.sleep(0)
            m.append_later(end, values(500))
            end += 500
            if waiter.done():
                break
        assert waiter.done() and m.appended_pending

    asyncio.run(run())


def test_settled_waits_for_records_a_write_appended_as_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    """The glue's own writes hand the view the objects they framed (machine contract 3b:
    ``append_records_later``); settled() must wait for those too, else the handler's ``latest()`` applies them
    all in one step."""
    monkeypatch.setattr(glue, "SLICE_S", 0.0)
    m = MetadataController(
        1, [encode_record(FeatureLevelRecord(name="metadata.version", feature_level=30), 0)]
    )
    m.become_leader(1, 0)
    assert m.activation_records() is not None and m.active
    g = glue.ControllerGlue(Any, m)  # type: ignore[arg-type]
    records = [
        ConfigRecord(resource_type=4, resource_name="", name="a", value=str(i)) for i in range(RECORDS)
    ]
    _, framed = m.frame(records)

    async def run() -> None:
        m.append_records_later(1, framed)
        assert m.appended_end == RECORDS + 1
        await g.settled()
        assert not m.appended_pending  # applied in the drain's slices before settled() returned

    asyncio.run(run())
    assert m.latest().offset == RECORDS


def test_write_settled_returns_with_what_others_appended_meanwhile_applied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A loop of writes each computed from ``latest()`` (fencing chunks) writes through ``write_settled``: when it
    returns, a large write appended by another handler meanwhile is already applied in the drain's slices, so
    the loop's next ``latest()`` applies nothing in one step."""
    monkeypatch.setattr(glue, "SLICE_S", 0.0)
    m = MetadataController(
        1, [encode_record(FeatureLevelRecord(name="metadata.version", feature_level=30), 0)]
    )
    m.become_leader(1, 0)
    assert m.activation_records() is not None and m.active
    end = [1]

    class Node:
        async def append(self, values: Any, on_range: Any) -> int:
            first = end[0]
            end[0] += len(values)
            g.machine.append_records_later(
                first + RECORDS, m.frame(others)[1]
            )  # another write, appended first
            on_range(OffsetRange(first, end[0] - 1, 1))
            await asyncio.sleep(0)
            return end[0] - 1

    g = glue.ControllerGlue(Node(), m)  # type: ignore[arg-type]
    others = [ConfigRecord(resource_type=4, resource_name="", name="b", value=str(i)) for i in range(RECORDS)]
    mine = [ConfigRecord(resource_type=4, resource_name="", name="a", value="x")]

    async def run() -> None:
        assert await g.write_settled(mine) == ErrorCode.NONE
        assert not m.appended_pending

    asyncio.run(run())
