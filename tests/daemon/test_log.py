"""The on-disk metadata log: appends, rolls, reads, truncation, epoch cache, recovery from damage."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kraftd.storage import fsio
from kraftd.storage.batches import peek
from kraftd.storage.epoch_checkpoint import EpochCheckpointFile, EpochEntry
from kraftd.storage.errors import LogAppendError, LogIOError
from kraftd.storage.log import MetadataLog, OffsetOutOfRangeError
from kwire.records import build_data_batch


def batch(base: int, epoch: int, n: int = 3, size: int = 20) -> bytes:
    values = [bytes([base % 251]) * size for _ in range(n)]
    return build_data_batch(values, base_offset=base, partition_leader_epoch=epoch, timestamp=0)


def fill(log: MetadataLog, epochs: list[int], n: int = 3) -> list[bytes]:
    out = []
    for e in epochs:
        b = batch(log.end_offset, e, n)
        log.append(b)
        out.append(b)
    log.flush()
    return out


def test_append_read_and_layout(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    written = fill(log, [1, 1, 2])
    assert (log.start_offset, log.end_offset, log.last_epoch, log.flushed_offset) == (0, 9, 2, 9)
    assert [p.name for p in log.segment_paths()] == ["00000000000000000000.log"]
    assert log.read(0, 1 << 20) == b"".join(written)
    assert log.read(4, 1) == written[1]  # the batch holding offset 4, even though larger than max_bytes
    assert log.read(9, 100) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(10, 100)
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n2 6\n"
    log.close()


def test_flushed_offset_only_moves_on_flush(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    log.append(batch(0, 1))
    assert (log.end_offset, log.flushed_offset) == (3, 0)
    assert log.read(0, 1 << 20, flushed_only=True) == b""
    assert log.flush() == 3
    assert log.read(0, 1 << 20, flushed_only=True) == batch(0, 1)


def test_append_rejects_gaps_old_epochs_bad_crc_and_partial_batches(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    fill(log, [2])
    with pytest.raises(LogAppendError, match="ends at 3"):
        log.append(batch(5, 2))
    with pytest.raises(LogAppendError, match="epoch 1 is below"):
        log.append(batch(3, 1))
    flipped = bytearray(batch(3, 2))
    flipped[-3] ^= 0x01
    with pytest.raises(LogAppendError, match="CRC"):
        log.append(bytes(flipped))
    with pytest.raises(LogAppendError, match="torn|trailing"):
        log.append(batch(3, 2)[:-4])
    # A rejected multi-batch append leaves nothing behind.
    with pytest.raises(LogAppendError):
        log.append(batch(3, 2) + bytes(flipped))
    assert log.end_offset == 3
    first, last = log.append(batch(100, 2), reassign=True)
    assert (first, last) == (3, 5)
    assert peek(log.read(3, 100)) is not None and peek(log.read(3, 100)).base_offset == 3  # type: ignore[union-attr]


def test_segments_roll_at_configured_size_and_reads_span_them(tmp_path: Path) -> None:
    one = len(batch(0, 1))
    log = MetadataLog(tmp_path, one * 2 + 10)
    fill(log, [1] * 5)
    names = [p.name for p in log.segment_paths()]
    assert names == ["00000000000000000000.log", "00000000000000000006.log", "00000000000000000012.log"]
    assert all(p.stat().st_size <= one * 2 + 10 for p in log.segment_paths())
    assert len(log.batches()) == 5
    assert [peek(b).base_offset for b in log.batches()] == [0, 3, 6, 9, 12]  # type: ignore[union-attr]
    log.close()
    reopened = MetadataLog(tmp_path, one * 2 + 10)
    assert reopened.end_offset == 15 and reopened.recovery_cuts == []


def test_truncation_removes_whole_batches_segments_and_epochs(tmp_path: Path) -> None:
    one = len(batch(0, 1))
    log = MetadataLog(tmp_path, one * 2 + 10)
    fill(log, [1, 1, 2, 3, 3])
    assert log.epoch_entries == [EpochEntry(1, 0), EpochEntry(2, 6), EpochEntry(3, 9)]
    assert log.truncate_to(7) == 6  # offset 7 sits inside the batch [6, 8]: that batch goes
    assert log.end_offset == 6 and log.flushed_offset == 6
    assert log.epoch_entries == [EpochEntry(1, 0)]
    assert EpochCheckpointFile(tmp_path).read() == [EpochEntry(1, 0)]
    assert [p.name for p in log.segment_paths()] == ["00000000000000000000.log", "00000000000000000006.log"]
    assert (tmp_path / "00000000000000000006.log").stat().st_size == 0
    assert not (tmp_path / "00000000000000000012.log").exists()
    log.append(batch(6, 4))
    log.flush()
    log.close()
    again = MetadataLog(tmp_path, one * 2 + 10)
    assert again.end_offset == 9 and again.epoch_entries == [EpochEntry(1, 0), EpochEntry(4, 6)]


def test_end_offset_for_epoch_follows_kafka(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    assert log.end_offset_for_epoch(0) == (0, 0)
    fill(log, [1, 3, 3, 5])
    assert log.end_offset_for_epoch(5) == (5, 12)
    assert log.end_offset_for_epoch(3) == (3, 9)
    assert log.end_offset_for_epoch(4) == (3, 9)
    assert log.end_offset_for_epoch(2) == (1, 3)
    assert log.end_offset_for_epoch(0) == (0, 0)
    assert log.end_offset_for_epoch(9) == (-1, -1)
    assert log.end_offset_for_epoch(-1) == (-1, -1)


def test_recovery_cuts_a_torn_tail_and_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    fill(log, [1, 1, 2])
    log.close()
    seg = tmp_path / "00000000000000000000.log"
    data = seg.read_bytes()
    seg.write_bytes(data[:-7])  # last batch torn mid-write
    with caplog.at_level(logging.WARNING, logger="kraftd.storage.log"):
        log = MetadataLog(tmp_path, 1 << 20)
    assert log.end_offset == 6 and log.last_epoch == 1
    assert len(log.recovery_cuts) == 1
    cut = log.recovery_cuts[0]
    assert cut.next_offset == 6 and "torn" in cut.reason
    assert "truncated" in caplog.text and "00000000000000000000.log" in caplog.text
    assert seg.stat().st_size == len(batch(0, 1)) * 2
    assert EpochCheckpointFile(tmp_path).read() == [EpochEntry(1, 0)]
    # The node appends again where the valid data ended.
    log.append(batch(6, 2))
    assert log.end_offset == 9


@pytest.mark.parametrize("where", ["crc", "payload", "attributes"])
def test_recovery_cuts_at_a_flipped_byte(tmp_path: Path, where: str) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    fill(log, [1, 1, 1, 1])
    log.close()
    seg = tmp_path / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    size = len(batch(0, 1))
    pos = size + {"crc": 18, "payload": size - 5, "attributes": 22}[where]
    data[pos] ^= 0x40
    seg.write_bytes(bytes(data))
    log = MetadataLog(tmp_path, 1 << 20)
    assert log.end_offset == 3  # only the batch before the damaged one survives
    assert "CRC" in log.recovery_cuts[0].reason
    assert log.read(0, 1 << 20) == bytes(data[:size])


def test_recovery_rejects_bad_length_and_base_offset(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    fill(log, [1, 1])
    log.close()
    seg = tmp_path / "00000000000000000000.log"
    good = seg.read_bytes()
    seg.write_bytes(good + batch(99, 1))  # valid CRC but the wrong offset
    log = MetadataLog(tmp_path, 1 << 20)
    assert log.end_offset == 6 and "base offset 99" in log.recovery_cuts[0].reason
    log.close()
    seg.write_bytes(good + b"\x00" * 8 + b"\xff\xff\xff\xff" + b"\x00" * 60)  # negative length
    log = MetadataLog(tmp_path, 1 << 20)
    assert log.end_offset == 6 and "length" in log.recovery_cuts[0].reason


def test_corruption_in_an_early_segment_drops_the_later_ones(tmp_path: Path) -> None:
    one = len(batch(0, 1))
    log = MetadataLog(tmp_path, one * 2 + 10)
    fill(log, [1] * 6)
    log.close()
    first = tmp_path / "00000000000000000000.log"
    data = bytearray(first.read_bytes())
    data[one + 30] ^= 0xFF
    first.write_bytes(bytes(data))
    log = MetadataLog(tmp_path, one * 2 + 10)
    assert log.end_offset == 3
    assert [p.name for p in log.segment_paths()] == ["00000000000000000000.log"]
    assert sorted(p.name for p in tmp_path.glob("*.log")) == ["00000000000000000000.log"]
    assert len(log.recovery_cuts) == 3


def test_epoch_checkpoint_is_rebuilt_from_the_log(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    fill(log, [2, 4])
    log.close()
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n1\n9 0\n")
    log = MetadataLog(tmp_path, 1 << 20)
    assert EpochCheckpointFile(tmp_path).read() == [EpochEntry(2, 0), EpochEntry(4, 3)]


def test_failed_fsync_on_flush_is_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    fill(log, [1])
    log.append(batch(3, 1))

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(fsio.os, "fsync", broken)
    with pytest.raises(LogIOError, match="fsync of segment"):
        log.flush()
    assert log.flushed_offset == 3  # nothing more was promised


def test_threaded_flush_and_truncation_voiding_it(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    log.append(batch(0, 1))
    target, run = log.begin_flush()
    log.append(batch(3, 1))  # appends may continue while the fsync runs
    run()
    assert log.complete_flush(target) == 3
    target, run = log.begin_flush()
    log.truncate_to(3)
    log.append(batch(3, 2))
    run()
    assert log.complete_flush(target) == 3  # the truncation voided the flush of the old bytes
    target, run = log.begin_flush()
    run()
    assert log.complete_flush(target) == 6


def test_threaded_flush_failure_is_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = MetadataLog(tmp_path, 1 << 20)
    log.append(batch(0, 1))
    target, run = log.begin_flush()
    monkeypatch.setattr(fsio.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(5, "EIO")))
    with pytest.raises(LogIOError):
        run()
    assert log.flushed_offset == 0
