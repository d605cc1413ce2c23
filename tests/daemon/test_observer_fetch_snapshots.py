"""kraftd.shell.apis.observer_fetches contract 8: an observer's FetchSnapshot is queued and stepped in chunks like its
Fetch, under the same bound on what waits in the listener's outboxes (contract 7), instead of one coroutine each
answered at once (1,000 x 1M: lagging brokers behind the log start grew a leader by 3.8 GB in 5 s, docs/SWARM.md,
session 16). Counted work."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from generated.request_header import RequestHeader
from kraftd.core import messages as m
from kraftd.core.log import OffsetAndEpoch
from kraftd.core.types import ReplicaKey
from kraftd.shell.apis.observer_fetches import records_bytes
from kraftd.shell.net.transport import ConnectionInfo
from kwire.errors import ErrorCode
from tests.daemon.cluster import CLUSTER_ID
from tests.helpers.daemon import leading_single_node

N = 50


async def _run(tmp_path: Path) -> dict[str, Any]:
    async with leading_single_node(tmp_path) as node:
        core = node.core
        answers: list[Any] = []
        offered, before = [], core.steps
        for i in range(N):
            header = RequestHeader(request_api_key=59, request_api_version=1, correlation_id=i, client_id="b")
            body = m.fetch_snapshot_request(
                CLUSTER_ID, ReplicaKey(100 + i, None), core.epoch, OffsetAndEpoch(10, 1), 0, 8 << 20
            )
            info = ConnectionInfo(i, ("127.0.0.1", 40000 + i), ("127.0.0.1", 1), "CONTROLLER")
            offered.append(node.router.fast(header, body, info, answers.append))
        inline = core.steps - before
        for _ in range(200):
            await asyncio.sleep(0.01)
            if len(answers) == N:
                break
        return {
            "offered": offered,
            "inline": inline,
            "answers": answers,
            "callbacks": node.router.fastpath.observer_fetches.callbacks,
        }


def test_observers_fetch_snapshots_are_queued_and_stepped_in_chunks(tmp_path: Path) -> None:
    out = asyncio.run(_run(tmp_path))
    assert all(out["offered"])  # before: False, each a coroutine of its own on the listener's slow path
    assert out["inline"] == 0
    assert len(out["answers"]) == N
    codes = {p.error_code for a in out["answers"] for t in a.topics for p in t.partitions}
    assert codes == {ErrorCode.SNAPSHOT_NOT_FOUND}  # no snapshot: the core's own answer
    assert out["callbacks"] >= 1


def test_a_snapshot_chunk_counts_as_records() -> None:
    chunk = bytes(3000)
    resp = m.fetch_snapshot_response(
        ErrorCode.NONE, ErrorCode.NONE, 1, 1, OffsetAndEpoch(5, 1), 9000, 0, chunk
    )
    assert records_bytes(resp) == 3000  # before: 0 (contract 6 and 2a counted a Fetch answer's records only)
