"""KIP-630 snapshots of the metadata image (kraftd.controller.image_writer): the image rebuilt from a snapshot at
offset N equals the image replayed from the log up to N, over random record sequences (hypothesis) and over the
log a real Kafka 4.3.1 controller wrote; the snapshot holds the image (features first, no history, no NoOps)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generated.feature_level_record import FeatureLevelRecord
from generated.no_op_record import NoOpRecord
from kraftd.controller.apply import apply_record
from kraftd.controller.features import MV_ELR, record_version
from kraftd.controller.image import MetadataImage
from kraftd.controller.image_writer import (
    SnapshotInTransaction,
    image_from_values,
    image_records,
    same_image,
    snapshot_values,
)
from kwire.batches import iter_batches
from kwire.metadata_frame import decode_metadata_record, encode_record
from tests.helpers.controller import logs
from tests.helpers.controller import replay as _replay


@settings(max_examples=300, deadline=None)
@given(logs(), st.data())
def test_the_image_rebuilt_from_a_snapshot_equals_the_replayed_log(
    log: tuple[int, list[Any]], data: st.DataObject
) -> None:
    mv, records = log
    values = [encode_record(r, record_version(type(r).API_KEY, mv)) for r in records]
    n = data.draw(st.integers(1, len(values)))  # the snapshot ends at offset n
    image = MetadataImage()
    _replay(image, values[:n])
    if image.pending_transaction is not None:
        with pytest.raises(SnapshotInTransaction):
            snapshot_values(image)
        return
    snap = snapshot_values(image)
    loaded = image_from_values(snap, n)
    assert same_image(loaded, image)
    assert snapshot_values(loaded) == snap  # a snapshot of the loaded image is the same snapshot
    # Loading, then replaying the rest of the log, equals replaying the whole log.
    _replay(loaded, values[n:], n)
    whole = MetadataImage()
    _replay(whole, values)
    assert same_image(loaded, whole)


def test_the_snapshot_holds_the_image_in_kafkas_order_not_the_history() -> None:
    log = Path(__file__).parent / "fixtures" / "kafka-4.3.1-controller-00000000000000000000.log"
    image = MetadataImage()
    count = 0
    for view in iter_batches(log.read_bytes()):
        batch = view.decode()
        if batch.is_control:
            continue
        for rec in batch.records:
            assert rec.value is not None
            key, version, obj = decode_metadata_record(rec.value)
            apply_record(image, batch.base_offset + rec.offset_delta, key, version, obj)
            count += 1
    records = image_records(image)
    kinds = [type(r).__name__ for r in records]
    assert kinds[0] == "FeatureLevelRecord" and records[0].name == "metadata.version"
    assert kinds == ["FeatureLevelRecord"] * 6 + ["RegisterControllerRecord", "ConfigRecord"]
    assert count > len(records)  # the NoOps and transaction markers are history, not image
    snap = snapshot_values(image)
    assert same_image(image_from_values(snap, image.offset + 1), image)


def test_values_that_are_no_metadata_records_never_grow_the_image_or_its_snapshot() -> None:
    """Image invariant 2a: a load generator's raw values replay as nothing (they used to pile up in ``other`` and
    be rewritten by every snapshot, so throughput fell as the log grew); framed records around them still apply."""
    from kraftd.controller.machine import MetadataController
    from kraftd.core.batches import data_batch

    mv = MV_ELR
    feature = encode_record(FeatureLevelRecord("metadata.version", mv), 0)
    raw = [f"1p7-{i}".encode().ljust(100, b".") for i in range(50)]
    noop = encode_record(NoOpRecord(), 0)
    machine = MetadataController(1, [])
    batches = [data_batch(0, 1, [feature, *raw[:25]], 0), data_batch(26, 1, [*raw[25:], noop], 0)]
    machine.replay(batches, 52)
    image = machine.committed
    assert image.offset == 51
    assert image.other == () and image.features["metadata.version"] == mv
    assert snapshot_values(image) == [feature]
