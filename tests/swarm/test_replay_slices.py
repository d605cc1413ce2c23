"""tools.swarm.replay contract 7: the shared replay works in slices of the swarm's one loop, so the brokers'
heartbeats never wait for a whole snapshot or catch-up answer to be applied (issue 24 §3: mistaken fences at 1,000 x
1M; docs/SWARM.md, session 19). Slices are cut by records (``SLICE_S`` 0: every ``CHECK_EVERY`` records), not timed."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from generated.partition_record import PartitionRecord
from generated.topic_record import TopicRecord
from kraftd.core.batches import data_batch
from kwire.metadata_frame import encode_record
from tools.swarm import replay as replay_mod
from tools.swarm.replay import SharedReplay

OLD, NEW = uuid.UUID(int=1), uuid.UUID(int=2)


def topic(base: int, topic_id: uuid.UUID, name: str, partitions: int) -> bytes:
    records: list[object] = [TopicRecord(name=name, topic_id=topic_id)]
    records += [
        PartitionRecord(partition_id=p, topic_id=topic_id, replicas=[100, 101], isr=[100, 101], leader=100)
        for p in range(partitions)
    ]
    return data_batch(base, 1, [encode_record(r, 0) for r in records], 0).data


def partitions(replay: SharedReplay) -> int:
    return sum(len(t.partitions) for t in replay.image.topics.values())


@pytest.fixture(autouse=True)
def cut_by_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay_mod, "SLICE_S", 0.0, raising=False)


def test_a_heartbeat_ready_meanwhile_runs_before_a_snapshot_is_applied() -> None:
    async def run() -> tuple[list[tuple[int, bool]], SharedReplay]:
        replay = SharedReplay()
        replay.feed(topic(0, OLD, "old", 10))
        assert partitions(replay) == 10  # a small answer: applied in the same turn
        seen: list[tuple[int, bool]] = []

        async def heartbeats() -> None:  # another broker's coroutine, ready while the snapshot applies
            for _ in range(10_000):
                if partitions(replay) == 1000:
                    return
                seen.append((partitions(replay), "old" in replay.image.topic_ids))
                await asyncio.sleep(0)

        replay.load_snapshot(topic(0, NEW, "new", 1000), 1001)
        assert replay.next_offset == 1001
        await asyncio.gather(heartbeats())
        return seen, replay

    seen, replay = asyncio.run(run())
    # Before contract 7 the snapshot was applied inside load_snapshot: no other coroutine ran until it was done.
    assert len(seen) >= 10  # 1,000 records in slices of CHECK_EVERY (32)
    # the old image is gone at the snapshot's first slice (not kept beside the new one), the new one grows
    assert all(n < 1000 and not old for n, old in seen)
    assert [n for n, _ in seen] == sorted(n for n, _ in seen)
    assert partitions(replay) == 1000 and list(replay.image.topic_ids) == ["new"]
    assert replay.applied_offset == replay.next_offset == 1001 and replay.leader_counts() == {100: 1000}


def test_answers_fed_while_the_replay_works_are_applied_after_it_in_offset_order() -> None:
    async def run() -> SharedReplay:
        replay = SharedReplay()
        replay.feed(topic(0, OLD, "old", 500))
        assert not replay.idle and replay.next_offset == 501
        replay.feed(topic(0, OLD, "old", 500))  # another broker's same answer: nothing queued again
        replay.feed(topic(501, NEW, "new", 5))
        assert replay.next_offset == 507 and replay.applied_offset < 501
        while not replay.idle:
            await asyncio.sleep(0)
        return replay

    replay = asyncio.run(run())
    assert replay.topic_offset == {"old": 0, "new": 501} and partitions(replay) == 505
    assert replay.records_applied == 507 and replay.image.offset == 506
