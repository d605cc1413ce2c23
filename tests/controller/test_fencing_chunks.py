"""Fencing in bounded writes (kraftd.shell.controller.fencing, issue 22): the chunked writes end in the image one atomic
``brokers.fence`` gives, each write holds at most CHUNK partition moves, and the broker is fenced only by the
last one, when no ISR holds it any more."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from generated.create_topics_request import CreatableTopic, CreateTopicsRequest
from kraftd.controller import brokers, partition_index, topics
from kraftd.controller.image_writer import same_image
from kraftd.shell.controller import fencing
from kwire.errors import ErrorCode
from tests.helpers.controller import apply_records as _apply
from tests.helpers.controller import cluster as _cluster
from tests.helpers.controller import heartbeat as _hb


def _recorder(image: Any) -> tuple[list[list[Any]], Callable[[list[Any]], Awaitable[ErrorCode]]]:
    """A write that applies its records to ``image`` at once (committed), and the list of writes it saw."""
    writes: list[list[Any]] = []

    async def write(records: list[Any]) -> ErrorCode:
        writes.append(records)
        _apply(image, records)
        return ErrorCode.NONE

    return writes, write


@pytest.mark.parametrize("chunk", [7, 50, 10_000])
def test_chunked_fencing_ends_where_one_fence_write_ends(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(fencing, "CHUNK", chunk)
    image, _ = _cluster(4)
    req = CreateTopicsRequest(topics=[CreatableTopic(f"t{i}", 30, 3) for i in range(4)])
    _apply(image, topics.create_topics(image, req, random.Random(5))[0])
    holding = len(brokers.holding(image, 2, isr=True))
    one_shot = image.copy()
    _apply(one_shot, brokers.fence(one_shot, 2))
    writes: list[list[Any]] = []

    async def write(records: list[Any]) -> ErrorCode:
        assert not image.brokers[2].fenced  # only the last write fences it
        writes.append(records)
        _apply(image, records)
        return ErrorCode.NONE

    assert asyncio.run(fencing.fence_in_chunks(lambda: image, write, 2)) == ErrorCode.NONE
    assert image.brokers[2].fenced
    assert all(2 not in p.isr and p.leader != 2 for t in image.topics.values() for p in t.partitions.values())
    moves = sum(len(w) for w in writes) - 1  # every record but the fence record
    assert moves == holding > 0  # one change per partition whose ISR held the broker
    assert all(len(w) <= chunk + 1 for w in writes)
    assert len(writes) == max(1, -(-moves // chunk))
    assert same_image(image, one_shot)


@pytest.mark.parametrize("chunk", [7, 50, 10_000])
def test_chunked_controlled_shutdown_ends_where_one_heartbeat_ends(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Contract 4 (issue 24): the chunked writes plus the heartbeat's own records hold at most CHUNK moves each,
    mark the broker in controlled shutdown in the first, and end in the image the one-shot heartbeat gives."""
    monkeypatch.setattr(fencing, "CHUNK", chunk)
    image, hb = _cluster(4)
    req = CreateTopicsRequest(topics=[CreatableTopic(f"t{i}", 30, 3) for i in range(4)])
    _apply(image, topics.create_topics(image, req, random.Random(5))[0])
    holding = len(brokers.holding(image, 2, isr=True))
    one_shot = image.copy()
    _apply(one_shot, brokers.heartbeat(one_shot, _hb(one_shot, 2, want_shut_down=True), hb, 0).records)
    writes, write = _recorder(image)

    epoch = image.brokers[2].epoch
    assert asyncio.run(fencing.shut_down_in_chunks(lambda: image, write, 2, epoch)) == ErrorCode.NONE
    last = brokers.heartbeat(image, _hb(image, 2, want_shut_down=True), hb, 0).records
    writes.append(last)
    _apply(image, last)
    assert image.brokers[2].in_controlled_shutdown and not image.brokers[2].fenced
    assert all(2 not in p.isr and p.leader != 2 for t in image.topics.values() for p in t.partitions.values())
    moves = [r for w in writes for r in w if type(r).__name__ == "PartitionChangeRecord"]
    assert len(moves) == holding > 0
    assert all(len(w) <= chunk + 1 for w in writes)
    assert len(writes) == max(1, -(-holding // chunk))
    assert same_image(image, one_shot)


@pytest.mark.parametrize("chunk", [7, 50, 10_000])
def test_chunked_unfencing_ends_where_one_heartbeat_ends(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """Contract 5: a fenced broker that is the last ISR member of many leaderless partitions is unfenced and
    elected in writes of at most CHUNK elections, ending in the image the one-shot heartbeat gives."""
    monkeypatch.setattr(fencing, "CHUNK", chunk)
    image, hb = _cluster(4)
    req = CreateTopicsRequest(topics=[CreatableTopic(f"t{i}", 30, 3) for i in range(4)])
    _apply(image, topics.create_topics(image, req, random.Random(5))[0])
    for bid in (1, 3, 4, 2):  # 2 last: it stays the sole ISR member of its partitions, which go leaderless
        _apply(image, brokers.fence(image, bid))
    leaderless = [
        k for k in brokers.holding(image, 2, isr=True) if image.topics[k[0]].partitions[k[1]].leader < 0
    ]
    assert image.brokers[2].fenced and len(leaderless) > 7
    one_shot = image.copy()
    _apply(one_shot, brokers.heartbeat(one_shot, _hb(one_shot, 2), hb, 0).records)
    writes, write = _recorder(image)

    epoch = image.brokers[2].epoch
    assert asyncio.run(fencing.unfence_in_chunks(lambda: image, write, 2, epoch)) == ErrorCode.NONE
    out = brokers.heartbeat(image, _hb(image, 2), hb, 0)
    writes.append(out.records)
    _apply(image, out.records)
    assert not out.is_fenced and not image.brokers[2].fenced
    assert all(image.topics[t].partitions[p].leader == 2 for t, p in leaderless)
    assert all(len(w) <= chunk + 1 for w in writes if w)
    assert len(writes) > 2 if chunk < len(leaderless) else len(writes) == 1
    assert same_image(image, one_shot)


def test_a_heartbeat_during_a_running_shutdown_loop_waits_for_it_instead_of_starting_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Contract 6: the broker's heartbeats every interval while its chunks commit start no second loop over the
    same partitions (two unguarded loops write the same moves twice)."""
    monkeypatch.setattr(fencing, "CHUNK", 7)

    def setup() -> tuple[Any, list[list[Any]], Callable[[list[Any]], Awaitable[ErrorCode]], int, int]:
        image, _ = _cluster(4)
        req = CreateTopicsRequest(topics=[CreatableTopic(f"t{i}", 30, 3) for i in range(4)])
        _apply(image, topics.create_topics(image, req, random.Random(5))[0])
        writes: list[list[Any]] = []

        async def write(records: list[Any]) -> ErrorCode:
            await asyncio.sleep(0)  # the commit's round trip: other heartbeats run meanwhile
            writes.append(records)
            _apply(image, records)
            return ErrorCode.NONE

        return image, writes, write, len(brokers.holding(image, 2, isr=True)), image.brokers[2].epoch

    def moved(writes: list[list[Any]]) -> list[tuple[Any, int]]:
        return [
            (r.topic_id, r.partition_id)
            for w in writes
            for r in w
            if type(r).__name__ == "PartitionChangeRecord"
        ]

    image, writes, write, holding, epoch = setup()

    async def unguarded() -> None:
        loop = lambda: fencing.shut_down_in_chunks(lambda: image, write, 2, epoch)  # noqa: E731
        first = asyncio.ensure_future(loop())
        await asyncio.sleep(0)
        await asyncio.gather(first, loop())

    asyncio.run(unguarded())
    assert len(moved(writes)) > len(
        set(moved(writes))
    )  # the defect: the second loop wrote the same moves again

    image, writes, write, holding, epoch = setup()
    guard = fencing.OneAtATime()

    async def guarded() -> None:
        loop = lambda: fencing.shut_down_in_chunks(lambda: image, write, 2, epoch)  # noqa: E731
        first = asyncio.ensure_future(guard.run(2, loop))
        await asyncio.sleep(0)
        assert await asyncio.gather(first, guard.run(2, loop)) == [ErrorCode.NONE, ErrorCode.NONE]

    asyncio.run(guarded())
    keys = moved(writes)
    assert (
        len(keys) == len(set(keys)) and len(keys) >= holding - 7
    )  # each move once; the last chunk is the heartbeat's
    assert all(len(w) <= 7 + 1 for w in writes)


@pytest.mark.parametrize("shut_down", [False, True])
def test_the_brokers_partitions_are_listed_a_chunk_at_a_time_not_all_before_the_first_write(
    monkeypatch: pytest.MonkeyPatch, shut_down: bool
) -> None:
    """Contract 7: before the first write, only the first chunk's topics had their partitions listed (listing
    all of a broker's ISR entries at 1M partitions was one 170-220 ms step); the writes cover every partition."""
    monkeypatch.setattr(fencing, "CHUNK", 10)
    image, _ = _cluster(4)
    req = CreateTopicsRequest(topics=[CreatableTopic(f"t{i}", 10, 3) for i in range(40)])
    _apply(image, topics.create_topics(image, req, random.Random(5))[0])
    holding = brokers.holding(image, 2, isr=True)
    listed: list[int] = []
    bits = partition_index._bits
    monkeypatch.setattr(partition_index, "_bits", lambda mask: listed.append(1) or bits(mask))
    at_first_write: list[int] = []
    writes: list[list[Any]] = []

    async def write(records: list[Any]) -> ErrorCode:
        if not at_first_write:
            at_first_write.append(len(listed))
        writes.append(records)
        _apply(image, records)
        return ErrorCode.NONE

    epoch = image.brokers[2].epoch
    if shut_down:
        asyncio.run(fencing.shut_down_in_chunks(lambda: image, write, 2, epoch))
    else:
        asyncio.run(fencing.fence_in_chunks(lambda: image, write, 2))
    topics_held = len({tid for tid, _ in holding})
    assert topics_held >= 30
    assert (
        at_first_write[0] <= 2 * 10 + 2
    )  # a chunk of 10 partitions and the next (lookahead): ~20 topics' masks
    moved = {
        (r.topic_id, r.partition_id) for w in writes for r in w if type(r).__name__ == "PartitionChangeRecord"
    }
    assert len(moved) >= len(holding) - (
        10 if shut_down else 0
    )  # shutdown: the last chunk is the heartbeat's


def test_unfencing_chunks_list_only_their_own_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Contracts 5 and 7: each unfencing chunk's elections look up that chunk's partitions only (each chunk
    used to list every leaderless partition of the image: O(leaderless) a chunk, 20k at 1M), and the
    leaderless partitions are listed a chunk at a time."""
    monkeypatch.setattr(fencing, "CHUNK", 7)
    image, _ = _cluster(4)
    req = CreateTopicsRequest(topics=[CreatableTopic(f"t{i}", 30, 3) for i in range(4)])
    _apply(image, topics.create_topics(image, req, random.Random(5))[0])
    for bid in (1, 3, 4, 2):  # 2 last: the sole ISR member of its partitions, which go leaderless
        _apply(image, brokers.fence(image, bid))
    leaderless = partition_index.keys(image, image.leader_index, partition_index.NO_LEADER)
    assert len(leaderless) > 3 * 7
    listed_all: list[int] = []
    keys = partition_index.keys
    monkeypatch.setattr(partition_index, "keys", lambda *a: listed_all.append(1) or keys(*a))
    writes, write = _recorder(image)
    epoch = image.brokers[2].epoch
    assert asyncio.run(fencing.unfence_in_chunks(lambda: image, write, 2, epoch)) == ErrorCode.NONE
    assert not listed_all  # neither the loop nor any chunk's elect_offline listed every leaderless partition
    assert len(writes) == -(-len(leaderless) // 7) and all(len(w) <= 7 + 1 for w in writes)
    assert not image.brokers[2].fenced
    mine = [(t, p) for t, p in leaderless if 2 in image.topics[t].partitions[p].isr]
    assert mine and all(image.topics[t].partitions[p].leader == 2 for t, p in mine)
