"""metadata.log.segment.ms (Kafka's time-based roll of the metadata log): an old enough non-empty active segment
rolls on the next append; size and age each roll on their own; the key is read from server.properties."""

from __future__ import annotations

from pathlib import Path

from kraftd.config import DEFAULT_SEGMENT_MS, config_from_properties
from kraftd.storage.log import MetadataLog
from kwire.records import build_data_batch


def batch(base: int) -> bytes:
    return build_data_batch([b"v" * 20], base_offset=base, partition_leader_epoch=1, timestamp=0)


def test_the_active_segment_rolls_once_older_than_segment_ms(tmp_path: Path) -> None:
    now = [1000.0]
    log = MetadataLog(tmp_path, 1 << 30, fsync=False, segment_ms=60_000, clock=lambda: now[0])
    log.append(batch(0))
    now[0] += 59.9
    log.append(batch(1))
    assert len(log.segment_paths()) == 1
    now[0] += 0.1  # 60 s after the segment's first append
    log.append(batch(2))
    assert [p.name for p in log.segment_paths()] == [f"{0:020d}.log", f"{2:020d}.log"]
    now[0] += 30
    log.append(batch(3))
    assert len(log.segment_paths()) == 2  # the new segment's age counts from its own first append
    log.close()


def test_without_segment_ms_only_size_rolls(tmp_path: Path) -> None:
    now = [0.0]
    log = MetadataLog(tmp_path, 1 << 30, fsync=False, clock=lambda: now[0])
    for i in range(3):
        log.append(batch(i))
        now[0] += 10**9
    assert len(log.segment_paths()) == 1
    log.close()


def test_the_key_is_parsed_with_kafkas_default() -> None:
    base = {
        "node.id": "1",
        "process.roles": "controller",
        "controller.listener.names": "CONTROLLER",
        "listeners": "CONTROLLER://127.0.0.1:9093",
        "controller.quorum.voters": "1@127.0.0.1:9093",
    }
    assert config_from_properties(base).segment_ms == DEFAULT_SEGMENT_MS == 604_800_000
    assert config_from_properties({**base, "metadata.log.segment.ms": "5000"}).segment_ms == 5000
