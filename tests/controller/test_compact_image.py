"""The compact image (issue 24): a PartitionState's lists are shared between partitions (apply contract 6), the
partitions-by-broker indexes are per-topic bit masks (partition_index contract 2a), and the active leader's view
shares the committed image once it has caught up (machine contract 3a). None of it shows in what the image holds:
checksum and snapshot bytes equal those of the list representation (golden values computed on the tree before)."""

from __future__ import annotations

import hashlib
import tracemalloc
import uuid
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from generated.clear_elr_record import ClearElrRecord
from generated.feature_level_record import FeatureLevelRecord
from generated.partition_change_record import PartitionChangeRecord
from generated.partition_record import PartitionRecord
from generated.register_broker_record import RegisterBrokerRecord
from generated.remove_topic_record import RemoveTopicRecord
from generated.topic_record import TopicRecord
from kraftd.controller import partition_index
from kraftd.controller.apply import apply_record
from kraftd.controller.features import record_version
from kraftd.controller.image import MetadataImage
from kraftd.controller.image_writer import snapshot_values
from kraftd.controller.machine import MetadataController
from kraftd.core.log import LogBatch, OffsetAndEpoch
from kraftd.core.snapshots import build_snapshot, read_snapshot
from kraftd.core.types import VoterSet
from kwire.metadata_frame import decode_metadata_record, encode_record
from kwire.records import build_data_batch, decode_batch
from tests.helpers.controller import logs

MV = 30
BROKERS = 7
DIRS = [uuid.UUID(int=(7 << 64) + b) for b in range(BROKERS)]
# Computed from golden_values() on the list representation (commit baceafb, before issue 24's changes).
GOLDEN_SNAPSHOT = "c6e4ef46516dea445481413664c296cf242bba5d0036172d49e50f89d943d7af"
GOLDEN_CHECKSUM = "43e6377f6447349c04b24d142be749271e011bd7139e86b428edda11047be947"


def _tid(t: int) -> uuid.UUID:
    return uuid.UUID(int=(1 << 64) + t)


def golden_values() -> list[bytes]:
    """Brokers with directories, 20 topics x 60 partitions and one of 1,100 (ids past the masks), then ISR, leader,
    ELR, replica and directory changes, a ClearElrRecord and a topic removed."""
    recs: list[Any] = [FeatureLevelRecord(name="metadata.version", feature_level=MV)]
    recs += [
        RegisterBrokerRecord(
            broker_id=b, broker_epoch=b, incarnation_id=uuid.UUID(int=b + 1), log_dirs=[DIRS[b]]
        )
        for b in range(BROKERS)
    ]
    for t, count in [*((t, 60) for t in range(20)), (20, 1100)]:
        recs.append(TopicRecord(name=f"t{t:03d}", topic_id=_tid(t)))
        for p in range(count):
            reps = [(t + p + k) % BROKERS for k in range(3)]
            recs.append(
                PartitionRecord(
                    partition_id=p,
                    topic_id=_tid(t),
                    replicas=reps,
                    isr=reps,
                    leader=reps[0],
                    directories=[DIRS[r] for r in reps],
                )
            )
    for i in range(0, 1100, 7):
        t, p = (20, i) if i % 2 else (i % 20, i % 60)
        reps = [(t + p + k) % BROKERS for k in range(3)]
        recs.append(
            PartitionChangeRecord(
                partition_id=p,
                topic_id=_tid(t),
                isr=reps[1:],
                leader=reps[1],
                eligible_leader_replicas=reps[:1],
                last_known_elr=[],
            )
        )
    recs.append(ClearElrRecord(topic_name="t003"))
    new = [6, 5, 4]
    recs.append(
        PartitionChangeRecord(
            partition_id=3,
            topic_id=_tid(2),
            replicas=new,
            isr=new,
            leader=6,
            directories=[DIRS[r] for r in new],
        )
    )
    recs.append(RemoveTopicRecord(topic_id=_tid(5)))
    return [encode_record(r, record_version(type(r).API_KEY, MV)) for r in recs]


def _replay(image: MetadataImage, values: list[bytes], start: int = 0) -> None:
    for i, value in enumerate(values):
        key, version, rec = decode_metadata_record(value)
        apply_record(image, start + i, key, version, rec)


def _digests(image: MetadataImage) -> tuple[str, str]:
    return hashlib.sha256(b"".join(snapshot_values(image))).hexdigest(), image.checksum()


def test_snapshot_bytes_and_checksum_are_those_of_the_list_representation() -> None:
    image = MetadataImage()
    _replay(image, golden_values())
    assert _digests(image) == (GOLDEN_SNAPSHOT, GOLDEN_CHECKSUM)
    assert partition_index.consistent(image)


def test_equal_replica_sets_are_one_shared_list() -> None:
    image = MetadataImage()
    _replay(image, golden_values())
    a, b = image.topics[_tid(7)].partitions[0], image.topics[_tid(14)].partitions[0]  # replicas 0,1,2 both
    assert a.replicas == b.replicas == [0, 1, 2]
    assert a is b and a.replicas is image.topics[_tid(12)].partitions[2].replicas  # one state, one list
    assert a.directories is image.topics[_tid(12)].partitions[2].directories and a.adding_replicas is a.elr
    before = image.copy()
    _replay(
        image, [encode_record(PartitionChangeRecord(partition_id=0, topic_id=_tid(7), isr=[1, 2]), 2)], 10**6
    )
    assert image.topics[_tid(7)].partitions[0].isr == [1, 2] and a.isr == b.isr == [
        0,
        1,
        2,
    ]  # no list changed in place
    assert before.topics[_tid(7)].partitions[0].isr == [0, 1, 2]


@settings(max_examples=200, deadline=None)
@given(logs())
def test_masked_indexes_equal_a_scan_of_the_partitions(log: tuple[int, list[Any]]) -> None:
    """Partition ids on both sides of the mask bound (patched to 2 here) are indexed alike, in copies too."""
    mv, records = log
    with mock.patch.object(partition_index, "MASKED", 2):
        image = MetadataImage()
        _replay(image, [encode_record(r, record_version(type(r).API_KEY, mv)) for r in records[:1]])
        for t in range(3):
            _replay(image, [encode_record(TopicRecord(name=f"m{t}", topic_id=_tid(t)), 0)], image.offset + 1)
            for p in range(5):
                rec = PartitionRecord(
                    partition_id=p, topic_id=_tid(t), replicas=[0, 1, 2], isr=[0, 1], leader=p % 3
                )
                _replay(image, [encode_record(rec, record_version(3, mv))], image.offset + 1)
        copy = image.copy()
        _replay(
            image,
            [encode_record(r, record_version(type(r).API_KEY, mv)) for r in records[1:]],
            image.offset + 1,
        )
        for img in (image, copy):
            assert partition_index.consistent(img)
            for b in range(4):
                scan = [
                    (tid, pid)
                    for tid, t in sorted(img.topics.items(), key=lambda kv: kv[1].name)
                    for pid, p in sorted(t.partitions.items())
                    if b in p.isr
                ]
                assert partition_index.keys(img, img.isr_index, b) == scan


@settings(max_examples=100, deadline=None)
@given(logs(), st.integers(1, 5))
def test_the_leader_view_shares_the_committed_image_once_caught_up(
    log: tuple[int, list[Any]], per: int
) -> None:
    """Machine contract 3a: appended in batches of ``per`` records, committed one batch behind; the view always
    equals the committed image plus what is appended, and shares its maps whenever it caught up."""
    mv, records = log
    values = [encode_record(r, record_version(type(r).API_KEY, mv)) for r in records]
    m = MetadataController(1, [])
    m.reshare_records = 1
    m.replay(
        [
            LogBatch(
                0, 0, 1, build_data_batch(values[:1], base_offset=0, partition_leader_epoch=1, timestamp=0)
            )
        ],
        1,
    )
    m.become_leader(1, 1)
    assert m.activation_records() == []
    pending: list[LogBatch] = []
    for start in range(1, len(values), per):
        chunk = values[start : start + per]
        m.on_appended(start, chunk)
        data = build_data_batch(chunk, base_offset=start, partition_leader_epoch=1, timestamp=0)
        pending.append(LogBatch(start, start + len(chunk) - 1, 1, data))
        if len(pending) > 1:
            m.replay([pending.pop(0)], pending[0].base_offset)
    m.replay(pending, len(values))
    whole = MetadataImage()
    _replay(whole, values)
    assert m.uncommitted is not None and m.latest().checksum() == m.committed.checksum() == whole.checksum()
    if len(values) > 1 and m.committed.pending_transaction is None:
        assert m.uncommitted.topics is m.committed.topics  # shared, not held twice


def test_a_snapshot_frames_each_record_as_it_is_made() -> None:
    """image_writer contract 4: writing a snapshot of 12k partitions allocates the values it returns and little
    more (the record objects of the whole image were ~7 MB more, alive at once)."""
    image = MetadataImage()
    _replay(image, golden_values())
    for t in range(100, 110):  # more partitions, in states of their own (distinct leader epochs)
        _replay(image, [encode_record(TopicRecord(name=f"x{t}", topic_id=_tid(t)), 0)], image.offset + 1)
        recs = [
            PartitionRecord(
                partition_id=p, topic_id=_tid(t), replicas=[0, 1, 2], isr=[0, 1, 2], leader=0, leader_epoch=p
            )
            for p in range(1000)
        ]
        _replay(image, [encode_record(r, 2) for r in recs], image.offset + 1)
    tracemalloc.start()
    try:
        values = snapshot_values(image)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(values) > 12_000 and peak - current < 1 << 20, (current, peak)


def test_a_snapshot_holds_its_bytes_once() -> None:
    """kraftd.core.snapshots invariant 3: the snapshot the core keeps (and serves FetchSnapshot from) costs its
    bytes, not its bytes again as batches; the batches cut from it on demand are the ones it was built from."""
    values = [bytes([i % 251]) * 200 for i in range(20_000)]  # 4 MB of values
    voters = VoterSet(())
    tracemalloc.start()
    try:
        snap = build_snapshot(
            OffsetAndEpoch(20_000, 3),
            values,
            kraft_version=0,
            voters=voters,
            now_ms=5,
            max_batch_bytes=1 << 20,
        )
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 1.2 * len(snap.data), (held, len(snap.data))
    assert [r.value for b in snap.batches for r in decode_batch(b.data).records] == values
    assert read_snapshot(snap.snapshot_id, snap.data) == snap
