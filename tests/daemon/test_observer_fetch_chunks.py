"""kraftd.shell.apis.observer_fetches: a wave of observers' Fetches is stepped in chunks, so a request read while it
is stepped (a heartbeat) waits for one chunk, not the wave. Counted work (core steps), a real one-node quorum."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from generated.request_header import RequestHeader
from kraftd.shell.apis.observer_fetches import CHUNK
from kraftd.shell.net.transport import ConnectionInfo
from tests.daemon.cluster import CLUSTER_ID
from tests.helpers.daemon import leading_single_node
from tools.swarm import frames

WAVE = 300


async def _run(tmp_path: Path) -> dict[str, Any]:
    async with leading_single_node(tmp_path) as node:
        core = node.core
        answers: list[Any] = []
        before = core.steps
        for i in range(WAVE):  # the observers' Fetches one turn of the loop reads after a commit
            header = RequestHeader(request_api_key=1, request_api_version=17, correlation_id=i, client_id="b")
            body = frames.observer_fetch(CLUSTER_ID, 100 + i, uuid.uuid4(), core.epoch, 0, 0, -1)
            info = ConnectionInfo(
                i, ("127.0.0.1", 40000 + i), ("127.0.0.1", node.config.listeners[0].port), "CONTROLLER"
            )
            assert node.router.fast(header, body, info, answers.append)
        inline = core.steps - before
        waited: list[int] = []
        # A request read in this turn (a heartbeat's callback): how many observer steps ran before it.
        asyncio.get_running_loop().call_soon(lambda: waited.append(core.steps - before))
        for _ in range(200):
            await asyncio.sleep(0.01)
            if len(answers) == WAVE and waited:
                break
        return {
            "inline": inline,
            "waited": waited[0],
            "answers": len(answers),
            "errors": [a.error_code for a in answers if a.error_code]
            + [p.error_code for a in answers for r in a.responses for p in r.partitions if p.error_code],
            "callbacks": node.router.fastpath.observer_fetches.callbacks,
        }


def test_a_wave_of_observer_fetches_is_stepped_in_chunks(tmp_path: Path) -> None:
    out = asyncio.run(_run(tmp_path))
    assert out["answers"] == WAVE and out["errors"] == []
    assert out["inline"] == 0  # none stepped while the listener reads
    # a request read meanwhile waits for one chunk (and the node's own steps: ticks, a commit), not the wave
    assert out["waited"] <= CHUNK + 8
    assert out["callbacks"] >= WAVE // CHUNK
