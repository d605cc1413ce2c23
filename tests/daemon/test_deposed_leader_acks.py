"""Regression (found by the chaos harness, seed 2): a deposed leader must not acknowledge its pending appends
when its high watermark, now advanced as a follower, passes their offsets (those offsets hold the new leader's
records). Before the fix, node 1 of a 3-node run acknowledged offsets 1445-1446 after losing epoch 3; the
final logs held epoch 4's LeaderChange and node 2's records there."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from kraftd.config import load_config
from kraftd.core.replication import NotLeaderError
from kraftd.core.types import LeaderAndEpoch, Role
from kraftd.shell.node import ControllerNode
from tools.local_quorum import write_properties


def test_pending_appends_fail_when_leadership_moves_before_they_commit(tmp_path: Path) -> None:
    cfg = write_properties(tmp_path / "s.properties", 1, 9, tmp_path / "d", "1@127.0.0.1:9")

    async def main() -> None:
        node = ControllerNode(load_config(cfg))
        loop = asyncio.get_running_loop()
        node._on_leader(LeaderAndEpoch(1, 3))  # we lead epoch 3 and append offsets 1445 and 1446
        mine = [loop.create_future(), loop.create_future()]
        node.commits.waiters = [(1445, 3, mine[0]), (1446, 3, mine[1])]
        node._on_leader(LeaderAndEpoch(1, 3))  # the same leadership again: nothing fails
        assert not any(f.done() for f in mine)
        node._on_leader(LeaderAndEpoch(2, 4))  # deposed: node 2 leads epoch 4
        node.client = SimpleNamespace(node=SimpleNamespace(role=Role.FOLLOWER, epoch=4))  # type: ignore[assignment]
        node._commit(2000)  # as a follower our high watermark passes both offsets
        for fut in mine:
            with pytest.raises(NotLeaderError, match="leadership changed"):
                fut.result()

    asyncio.run(main())


def test_appends_of_the_current_epoch_still_resolve_on_commit(tmp_path: Path) -> None:
    cfg = write_properties(tmp_path / "s.properties", 1, 9, tmp_path / "d", "1@127.0.0.1:9")

    async def main() -> None:
        node = ControllerNode(load_config(cfg))
        node._on_leader(LeaderAndEpoch(1, 3))
        fut = asyncio.get_running_loop().create_future()
        node.commits.waiters = [(10, 3, fut)]
        # The committed batch at offset 10 is epoch 3's, as the core's log reports it (contract 7).
        log = SimpleNamespace(read=lambda offset, n: [SimpleNamespace(epoch=3)])
        node.client = SimpleNamespace(node=SimpleNamespace(role=Role.LEADER, epoch=3, log=log))  # type: ignore[assignment]
        node._commit(11)
        assert fut.result() == 10

    asyncio.run(main())
