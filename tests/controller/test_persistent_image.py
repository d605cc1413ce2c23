"""The persistent metadata image (kraftd.controller.image invariant 3, apply contract 5; issue 22): the leader's
uncommitted view opens by sharing the committed image's maps (no copy), records applied to either side never show
in the other, and a rollback (resign) drops the view without touching the committed image."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from generated.feature_level_record import FeatureLevelRecord
from generated.partition_record import PartitionRecord
from generated.register_broker_record import RegisterBrokerRecord
from generated.topic_record import TopicRecord
from kraftd.controller.features import MV_ELR, record_version
from kraftd.controller.image import MetadataImage
from kraftd.controller.machine import MetadataController
from kwire.metadata_frame import encode_record
from tests.helpers.controller import TOPICS, logs
from tests.helpers.controller import replay as _replay


def _values(mv: int, records: list[Any]) -> list[bytes]:
    return [encode_record(r, record_version(type(r).API_KEY, mv)) for r in records]


@settings(max_examples=300, deadline=None)
@given(logs(), st.data())
def test_records_applied_to_a_copy_never_show_in_the_original(
    log: tuple[int, list[Any]], data: st.DataObject
) -> None:
    """Every record type, on every side: the copy and the original evolve independently, and each equals an
    image that replayed the same records from scratch."""
    mv, records = log
    values = _values(mv, [records[0], *_populated(mv), *records[1:]])
    k = data.draw(st.integers(len(values) - len(records) + 1, len(values)))
    original = MetadataImage()
    _replay(original, values[:k])
    before = original.checksum()
    view = original.copy()
    _replay(view, values[k:], k)
    assert original.checksum() == before
    whole = MetadataImage()
    _replay(whole, values)
    assert view.checksum() == whole.checksum()
    # ... and the other way round: the original moves on, a copy taken before stays as it was.
    snap = original.copy()
    _replay(original, values[k:], k)
    assert snap.checksum() == before and original.checksum() == whole.checksum()


def _populated(mv: int) -> list[Any]:
    """Every topic, partition and broker the random records name, so that their changes find something."""
    out: list[Any] = [TopicRecord(name=f"t{t.int}", topic_id=t) for t in TOPICS]
    elr = [1] if mv >= MV_ELR else None
    for t in TOPICS:
        out += [
            PartitionRecord(
                partition_id=p,
                topic_id=t,
                replicas=[0, 1],
                isr=[0, 1],
                leader=0,
                eligible_leader_replicas=elr,
                last_known_elr=elr,
            )
            for p in range(3)
        ]
    out += [RegisterBrokerRecord(broker_id=b, broker_epoch=5 * b, incarnation_id=TOPICS[b]) for b in range(4)]
    return out


def _controller_with(partitions: int) -> MetadataController:
    m = MetadataController(1, [])
    recs: list[Any] = [FeatureLevelRecord(name="metadata.version", feature_level=27)]
    recs.append(TopicRecord(name="t", topic_id=TOPICS[0]))
    recs += [
        PartitionRecord(partition_id=p, topic_id=TOPICS[0], replicas=[1], isr=[1], leader=1)
        for p in range(partitions)
    ]
    _replay(m.committed, _values(27, recs))
    m.high_watermark = m.committed.offset + 1
    return m


def test_activation_opens_the_uncommitted_view_by_sharing_the_committed_maps() -> None:
    """No step of a failover copies the image: the view shares every map until a record changes one."""
    m = _controller_with(50)
    m.become_leader(3, m.high_watermark)
    assert m.activation_records() == []
    view = m.uncommitted
    assert view is not None and view is not m.committed
    assert view.topics is m.committed.topics and view.brokers is m.committed.brokers
    assert view.configs is m.committed.configs and view.features is m.committed.features
    committed = m.committed.checksum()
    tid = TOPICS[0]
    from generated.partition_change_record import PartitionChangeRecord

    m.on_appended(
        m.high_watermark, m.encode([PartitionChangeRecord(partition_id=7, topic_id=tid, leader=-1)])
    )
    assert view.topics[tid].partitions[7].leader == -1 and m.committed.topics[tid].partitions[7].leader == 1
    assert view.topics[tid].partitions[8] is m.committed.topics[tid].partitions[8]  # the rest still shared
    m.resign(4)  # rollback on leadership loss: the view is dropped, the committed image untouched
    assert m.uncommitted is None and m.committed.checksum() == committed
