"""The in-memory replicated log: contiguity, epoch cache, truncation, divergence validation."""

from __future__ import annotations

import pytest

from kraftd.core.batches import data_batch, leader_change_batch, split_batches
from kraftd.core.log import LogInconsistencyError, OffsetAndEpoch, ReplicatedLog
from kwire.errors import CorruptRecordError
from kwire.records import decode_batch


def _log(*spec: tuple[int, int]) -> ReplicatedLog:
    log = ReplicatedLog()
    for epoch, count in spec:
        log.append(data_batch(log.end_offset, epoch, [b"v"] * count, 0))
    return log


def test_append_must_be_contiguous_and_epoch_monotonic() -> None:
    log = _log((1, 2))
    with pytest.raises(LogInconsistencyError):
        log.append(data_batch(5, 1, [b"x"], 0))
    log.append(data_batch(2, 3, [b"x"], 0))
    with pytest.raises(LogInconsistencyError):
        log.append(data_batch(3, 2, [b"x"], 0))
    assert (log.end_offset, log.last_epoch) == (3, 3)


def test_end_offset_for_epoch() -> None:
    log = _log((1, 2), (1, 1), (3, 2), (5, 1))  # epoch 1: 0-2, epoch 3: 3-4, epoch 5: 5
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(3, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(3, 1)
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(5, 3)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(6, 5)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)


def test_validate_reports_divergence() -> None:
    log = _log((1, 3), (3, 2))
    assert log.validate(0, 0) is None
    assert log.validate(3, 1) is None
    assert log.validate(5, 3) is None
    assert log.validate(5, 2) == OffsetAndEpoch(3, 1)  # no epoch 2: epoch 1 ends at 3
    assert log.validate(4, 1) == OffsetAndEpoch(3, 1)  # epoch 1 is shorter here
    assert log.validate(9, 3) == OffsetAndEpoch(5, 3)  # ahead of our end


def test_truncate_drops_whole_batches_and_epochs() -> None:
    log = _log((1, 2), (2, 3), (4, 1))  # 0-1@1, 2-4@2, 5@4
    assert log.truncate_to(3) == 2  # mid-batch: the whole batch goes
    assert log.last_epoch == 1
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(2, 1)
    assert log.truncate_to(2) == 2
    assert log.truncate_to(0) == 0 and log.batches == []


def test_read_returns_at_least_one_batch() -> None:
    log = _log((1, 1), (1, 1), (1, 1))
    assert [b.base_offset for b in log.read(1, 1)] == [1]
    assert [b.base_offset for b in log.read(0, 10_000)] == [0, 1, 2]
    assert log.read(3, 10_000) == []


def test_batches_are_real_record_batches() -> None:
    b = data_batch(7, 3, [b"a", b"bc"], 1234)
    decoded = decode_batch(b.data)
    assert (decoded.base_offset, decoded.partition_leader_epoch) == (7, 3)
    assert [r.value for r in decoded.records] == [b"a", b"bc"]
    lc = leader_change_batch(9, 3, 1, [1, 2, 3], [1, 2], 0)
    assert lc.is_control and decode_batch(lc.data).is_control
    assert split_batches(b.data + lc.data) == [b, lc]


def test_split_rejects_corruption() -> None:
    data = bytearray(data_batch(0, 1, [b"a"], 0).data)
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        split_batches(bytes(data))
