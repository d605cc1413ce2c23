"""Appends made in one turn of the loop share one batch (kraftd.shell.node contract 7a with the adaptive linger,
kraftd.core.replication invariant 5a): issue 25's batched throughput."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kraftd.config import load_config
from kraftd.shell.node import ControllerNode
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.daemon.conftest import write_properties
from tools.storage_cli import format_directory


def _single_voter(tmp_path: Path, linger_ms: int) -> ControllerNode:
    cfg = tmp_path / "s.properties"
    (port,) = free_ports(1)
    extra = {"controller.quorum.append.linger.ms": str(linger_ms)}
    write_properties(cfg, 1, port, tmp_path / "d", voters=f"1@127.0.0.1:{port}", extra=extra)
    format_directory(load_config(cfg), CLUSTER_ID)
    return ControllerNode(load_config(cfg), seed=1)


def _batches_holding(node: ControllerNode, offsets: list[int]) -> set[int]:
    """The base offsets of the batches that hold these offsets."""
    lo, hi = min(offsets), max(offsets)
    return {b.base_offset for b in node.core.log.batches if b.base_offset <= hi and b.last_offset >= lo}


def test_appends_of_one_turn_share_one_batch_with_a_linger(tmp_path: Path) -> None:
    """Ten appenders resumed in the same turn (as a commit resumes a closed append loop's workers) are written as
    one batch at once, without waiting the linger, since nothing else is in flight."""

    async def run() -> set[int]:
        node = _single_voter(tmp_path, 25)
        await node.start()
        try:
            await node.wait_for_leader(10)
            await node.append([b"warm-up"])
            while node.core.high_watermark < node.core.log.end_offset:  # the activation records, committed
                await asyncio.sleep(0.01)
            offsets = await asyncio.gather(*(node.append([b"r%d" % i]) for i in range(10)))
            return _batches_holding(node, offsets)
        finally:
            await node.stop()

    assert len(asyncio.run(run())) == 1
