"""kraftd.core.snapshotting invariant 3a: FetchSnapshot chunks never cross a block of ``fetch_max_bytes`` and share
its bytes: every answer within one block is the block or a view of it, not a slice copied per answer (issue 24, 1,000
x 1M: 121 GB of 8 MiB copies, one per observer and chunk, docs/SWARM.md session 20)."""

from __future__ import annotations

from typing import Any

from kraftd.core import effects as fx
from kraftd.core import messages as m
from kraftd.core.events import RequestReceived
from kraftd.core.snapshotting import BLOCKS_KEPT
from kraftd.core.types import ReplicaKey
from tests.core.test_snapshots import grown_cluster, snapshot_values


def test_chunks_within_one_block_share_its_bytes() -> None:
    p, leader = grown_cluster(fetch_max_bytes=300)  # blocks of 300 bytes
    snap = leader.create_snapshot(leader.high_watermark, snapshot_values(leader))
    leader.poll()
    sid, data = snap.snapshot_id, snap.data
    assert len(data) > 3 * 300

    def ask(observer: int, pos: int, max_bytes: int = 1 << 20) -> Any:
        req = m.fetch_snapshot_request("c", ReplicaKey(observer, None), leader.epoch, sid, pos, max_bytes)
        token = 1000 + observer
        (resp,) = [
            e.message
            for e in leader.step(RequestReceived(p.now, token, req))
            if isinstance(e, fx.SendResponse) and e.token == token
        ]
        part = m.single_partition(resp)
        assert part is not None and part.error_code == 0 and part.position == pos
        return part.unaligned_records

    first, second = ask(100, 300), ask(101, 300)
    assert bytes(first) == data[300:600]
    assert first is second  # one block for both observers; before: two slices of 300 bytes, `is` False
    inside = ask(102, 350)  # a chunk ends at its block's end, a view of the block
    assert isinstance(inside, memoryview) and inside.obj is first and bytes(inside) == data[350:600]
    short = ask(103, 0, 7)
    assert isinstance(short, memoryview) and bytes(short) == data[:7]
    assert ask(104, 0) is short.obj  # the block the short chunk is a view of
    for k in range(BLOCKS_KEPT + 1):  # the least recently used block is dropped past BLOCKS_KEPT
        if k * 300 < len(data):
            ask(105, k * 300)
    assert len(leader.snapshot_blocks) <= BLOCKS_KEPT
