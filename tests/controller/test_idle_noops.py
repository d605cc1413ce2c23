"""metadata.max.idle.interval.ms: the active controller appends a NoOpRecord every interval, as Kafka's
QuorumController does, only at a metadata.version that has the record (3.3-IV1, level 5, on); 0 turns it off;
followers write none."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from generated.feature_level_record import FeatureLevelRecord
from generated.no_op_record import NoOpRecord
from kraftd.config import load_config
from kraftd.controller.machine import MetadataController, decode_batches
from kraftd.shell.node import ControllerNode
from kwire.metadata_frame import encode_record
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.daemon.conftest import write_properties
from tests.helpers.daemon import wait_active
from tools.storage_cli import format_directory

NOOP = 20


def _active(level: int) -> MetadataController:
    m = MetadataController(
        1, [encode_record(FeatureLevelRecord(name="metadata.version", feature_level=level), 0)]
    )
    assert m.idle_records() == []  # not the active controller
    m.become_leader(1, 0)
    assert m.activation_records() is not None and m.active
    return m


def test_idle_records_only_where_the_metadata_version_has_noop_records() -> None:
    assert _active(4).idle_records() == []  # 3.3-IV0: no NoOpRecord yet
    assert _active(5).idle_records() == [NoOpRecord()]
    assert _active(30).idle_records() == [NoOpRecord()]
    follower = _active(30)
    follower.resign(2)
    assert follower.idle_records() == []


def _noops(node: ControllerNode) -> int:
    return sum(1 for d in decode_batches(node.core.log.batches) if d.api_key == NOOP)


def _run(tmp_path: Path, interval_ms: int, seconds: float) -> tuple[int, int, float]:
    (port,) = free_ports(1)
    cfg = write_properties(
        tmp_path / "s.properties",
        1,
        port,
        tmp_path / "d",
        voters=f"1@127.0.0.1:{port}",
        extra={"metadata.max.idle.interval.ms": str(interval_ms)},
    )
    format_directory(load_config(cfg), CLUSTER_ID)

    async def run() -> tuple[int, int, float]:
        node = ControllerNode(load_config(cfg), seed=1)
        await node.start()
        try:
            await node.wait_for_leader(10)
            await wait_active(node, 15)
            start, first = time.monotonic(), _noops(node)
            while time.monotonic() - start < seconds:
                await asyncio.sleep(0.05)
            return first, _noops(node), time.monotonic() - start
        finally:
            await node.stop()

    return asyncio.run(run())


def test_the_active_controller_writes_a_noop_every_idle_interval(tmp_path: Path) -> None:
    first, last, elapsed = _run(tmp_path, 50, 2.0)
    written = last - first
    # One per 50 ms at most (each waits for the previous one's commit); a loaded box may write fewer.
    assert 5 <= written <= elapsed * 1000 / 50 + 2, (written, elapsed)


def test_an_interval_of_zero_writes_none(tmp_path: Path) -> None:
    first, last, _ = _run(tmp_path, 0, 1.0)
    assert first == last == 0
