"""Incremental replay (kraftd.controller.machine contracts 3 and 6, issue 22): a large committed batch is applied
a bounded number of records at a time, so the shell can spread it over event loop turns.

Invariants:
1. Replaying committed batches through ``enqueue`` and ``replay_some`` with any budgets, interleaved with more
   commits, builds the same image as replaying them at once; no call applies more than its budget.
2. ``high_watermark`` (what activation waits for) moves only once everything queued is replayed, and
   ``replayed_end`` only at batch boundaries.
3. The leader's appended records reach its uncommitted view by ``apply_appended`` in bounded steps, and all of
   them before ``latest()`` returns it.
4. A snapshot to load is applied in bounded steps too, and replaces the committed image only when complete.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from generated.feature_level_record import FeatureLevelRecord
from generated.partition_record import PartitionRecord
from generated.register_broker_record import RegisterBrokerRecord
from generated.topic_record import TopicRecord
from kraftd.controller.image import MetadataImage
from kraftd.controller.image_writer import image_from_batches, same_image, snapshot_values
from kraftd.controller.machine import MetadataController
from kraftd.core.log import LogBatch, OffsetAndEpoch
from kraftd.core.snapshots import build_snapshot
from kraftd.core.voters import VoterSet
from kwire.metadata_frame import encode_record
from kwire.records import build_data_batch


def _records(topics: int, per_topic: int) -> list[Any]:
    out: list[Any] = [FeatureLevelRecord(name="metadata.version", feature_level=21)]
    out += [
        RegisterBrokerRecord(broker_id=b, broker_epoch=b, incarnation_id=uuid.UUID(int=b + 1))
        for b in range(3)
    ]
    for t in range(topics):
        tid = uuid.UUID(int=(1 << 64) + t)
        out.append(TopicRecord(name=f"t{t}", topic_id=tid))
        out += [
            PartitionRecord(partition_id=p, topic_id=tid, replicas=[0, 1, 2], isr=[0, 1, 2], leader=p % 3)
            for p in range(per_topic)
        ]
    return out


def _batches(records: list[Any], sizes: list[int]) -> list[LogBatch]:
    out, offset, i, k = [], 0, 0, 0
    while i < len(records):
        values = [encode_record(r) for r in records[i : i + sizes[k % len(sizes)]]]
        data = build_data_batch(values, base_offset=offset, partition_leader_epoch=1, timestamp=0)
        out.append(LogBatch(offset, offset + len(values) - 1, 1, data))
        offset, i, k = offset + len(values), i + len(values), k + 1
    return out


RECORDS = _records(6, 40)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 120), min_size=1, max_size=5),
    budgets=st.lists(st.integers(1, 70), min_size=1, max_size=6),
    per_commit=st.integers(1, 4),
)
def test_chunked_replay_builds_the_image_replay_does(
    sizes: list[int], budgets: list[int], per_commit: int
) -> None:
    batches = _batches(RECORDS, sizes)
    whole = MetadataController(1, [])
    whole.replay(batches, batches[-1].next_offset)
    m = MetadataController(1, [])
    k = 0
    for start in range(0, len(batches), per_commit):
        commit = batches[start : start + per_commit]
        m.enqueue(commit, commit[-1].next_offset)
        budget = budgets[k % len(budgets)]
        k += 1
        assert m.replay_some(budget) <= budget  # invariant 1
        if m.replay_pending:
            assert m.high_watermark < commit[-1].next_offset  # invariant 2
        assert m.replayed_end in {0} | {b.next_offset for b in batches}
    while m.replay_pending:
        assert m.replay_some(budgets[0]) <= budgets[0]
    assert m.high_watermark == batches[-1].next_offset == m.replayed_end
    assert m.committed.checksum() == whole.committed.checksum()
    m.enqueue(batches, batches[-1].next_offset)  # delivered twice: nothing changes
    m.replay_some(None)
    assert m.committed.checksum() == whole.committed.checksum()


def test_activation_waits_until_the_queue_is_replayed() -> None:
    batches = _batches(RECORDS, [1000])
    m = MetadataController(1, [])
    m.become_leader(1, batches[-1].next_offset)
    m.enqueue(batches, batches[-1].next_offset)
    m.replay_some(100)
    assert m.activation_records() is None and not m.active
    m.replay_some(None)
    assert m.activation_records() == [] and m.active
    assert m.latest().offset == batches[-1].last_offset


def test_appended_records_apply_in_steps_and_all_before_latest() -> None:
    head, tail = RECORDS[:4], RECORDS[4:]
    m = MetadataController(1, [])
    m.replay(_batches(head, [10]), len(head))
    m.become_leader(1, len(head))
    assert m.activation_records() == []
    values = [encode_record(r) for r in tail]
    m.append_later(len(head), values)
    assert m.uncommitted is not None and not m.uncommitted.topics
    assert m.apply_appended(50) == 50 and m.apply_pending
    assert m.uncommitted.offset == len(head) + 49
    image = m.latest()  # invariant 3
    assert not m.apply_pending and image.offset == len(RECORDS) - 1
    assert sum(len(t.partitions) for t in image.topics.values()) == 240
    m.replay([_shifted(tail, len(head))], len(RECORDS))
    assert m.committed.checksum() == image.checksum()


def _shifted(records: list[Any], base: int) -> LogBatch:
    values = [encode_record(r) for r in records]
    data = build_data_batch(values, base_offset=base, partition_leader_epoch=1, timestamp=0)
    return LogBatch(base, base + len(values) - 1, 1, data)


def _snapshot_of(records: list[Any]) -> tuple[MetadataImage, list[LogBatch], int]:
    """The image of ``records`` and its KIP-630 snapshot's batches, ending at the offset after them."""
    image = MetadataController(1, [])
    image.replay(_batches(records, [50]), len(records))
    end = len(records)
    snap = build_snapshot(
        OffsetAndEpoch(end, 1),
        snapshot_values(image.committed),
        kraft_version=0,
        voters=VoterSet(()),
        now_ms=0,
        max_batch_bytes=4096,  # many batches: each is split into values only when reached
    )
    return image.committed, snap.batches, end


@settings(max_examples=20, deadline=None)
@given(budget=st.integers(1, 300))
def test_a_snapshot_loads_a_budget_at_a_time_and_replaces_the_image_whole(budget: int) -> None:
    """Contract 6a: no call applies more than its budget, the committed image is the old one until the snapshot
    is complete, and then it is the snapshot's image; queued batches the snapshot covers are skipped by offset,
    later ones replayed after it."""
    image, batches, end = _snapshot_of(RECORDS)
    m = MetadataController(2, [])
    old = m.committed
    m.load_later(batches, end)
    later = TopicRecord(name="after-the-snapshot", topic_id=uuid.UUID(int=7))
    covered = _batches(RECORDS[:30], [10])  # offsets 0-29: inside the snapshot
    data = build_data_batch([encode_record(later)], base_offset=end, partition_leader_epoch=1, timestamp=0)
    m.enqueue([*covered, LogBatch(end, end, 1, data)], end + 1)
    calls = 0
    while m.replay_pending:
        assert m.committed is old or m.committed.offset >= end - 1
        assert m.replay_some(budget) <= budget
        calls += 1
    assert calls >= len(RECORDS) // budget
    assert m.committed.offset == end and "after-the-snapshot" in m.committed.topic_ids
    expected = image_from_batches(batches, end)
    assert expected.offset == end - 1 and same_image(image, expected)
    assert m.committed.topic_ids.delete("after-the-snapshot") == expected.topic_ids
