"""DescribeConfigs on the listener's fast path (kraftd.shell.raft.reads contract 7, kraftd.shell.apis.routing
contract 6c, issue #25), on an in-process single-voter node over a real socket: pipelined reads take no handler
task, share a ticket, and their answers leave in request order in one write per ticket. Counted, not timed."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest

from generated.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from generated.describe_configs_response import DescribeConfigsResponse
from kraftd.shell.node import ControllerNode
from kraftd.shell.raft import reads as shell_reads
from kwire import answers
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import decode_response, encode_request
from tests.helpers.daemon import single_node

N = 16  # one connection's in-flight limit (kwire.limits)
DESCRIBE, VERSION = 32, 4


def frames(n: int, first: int = 0) -> bytes:
    return b"".join(
        encode_frame(
            encode_request(
                DESCRIBE,
                VERSION,
                cid,
                "t",
                DescribeConfigsRequest(
                    resources=[
                        DescribeConfigsResource(
                            resource_type=4, resource_name=str(cid % 3), configuration_keys=None
                        )
                    ]
                ),
            )
        )
        for cid in range(first, first + n)
    )


async def read_n(reader: asyncio.StreamReader, n: int) -> list[tuple[int, DescribeConfigsResponse]]:
    decoder, out = FrameDecoder(), []
    while len(out) < n:
        data = await asyncio.wait_for(reader.read(1 << 16), 10)
        assert data, "connection closed"
        out += [decode_response(f, DESCRIBE, VERSION) for f in decoder.feed(data)]
    return out


def count_respond(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The requests answered through a handler task (kwire.answers.Answering._respond), by api key."""
    seen: list[int] = []
    real = answers.Answering._respond

    async def respond(self: Any, req: Any, *args: Any) -> Any:
        seen.append(req.api_key)
        return await real(self, req, *args)

    monkeypatch.setattr(answers.Answering, "_respond", respond)
    return seen


@pytest.mark.parametrize("consistency", ["linearizable", "stale"])
def test_pipelined_reads_take_no_task_and_answer_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, consistency: str
) -> None:
    tasks = count_respond(monkeypatch)

    async def run() -> tuple[list[Any], int, int, float, int]:
        node: ControllerNode = single_node(tmp_path)
        await node.start()
        node.reads.stale = consistency == "stale"
        try:
            await node.wait_for_leader(10)
            await node.reads.describe_configs(DescribeConfigsRequest(resources=[]))  # committed in its epoch
            reader, writer = await asyncio.open_connection("127.0.0.1", node.server.port)
            tickets, writes = node.reads.tickets._value.get(), node.server.stats.writes
            encodes = node.server.shared.encodes
            tasks.clear()
            writer.write(frames(N))
            got = await read_n(reader, N)
            writer.write(frames(N, N))  # and again on the same connection
            got += await read_n(reader, N)
            served = node.reads.served.labels(consistency).value
            writer.close()
            return (
                got,
                int(node.reads.tickets._value.get() - tickets),
                node.server.stats.writes - writes,
                served,
                node.server.shared.encodes - encodes,
            )
        finally:
            await node.stop()

    got, tickets, writes, served, encodes = asyncio.run(run())
    assert tasks == [], tasks  # before: one handler task per read
    assert [c for c, _ in got] == list(range(2 * N))
    assert [r.results[0].resource_name for _, r in got] == [str(c % 3) for c in range(2 * N)]
    assert all(r.results[0].error_code == 0 for _, r in got)
    assert served >= 2 * N
    if consistency == "linearizable":
        assert 1 <= tickets <= 4, tickets
        assert writes <= tickets + 2, (
            writes,
            tickets,
        )  # contract 7: one write per ticket (a segment may split)
        # Contract 7a: the reads of a ticket asking the same share one response, encoded once (3 resource
        # names here); before, every read's body was encoded (32).
        assert encodes <= 3 * tickets, (encodes, tickets)
    else:
        assert tickets == 0


async def _never_resolved(
    node: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A leader whose read barriers never resolve, and a connection to it. The tickets never reach the core: a
    ticket the core queued would be resolved by any step (a tick), answering the reads before the barrier fails
    (the CI hang of stop 31)."""
    await node.wait_for_leader(10)
    await node.reads.describe_configs(DescribeConfigsRequest(resources=[]))
    reader, writer = await asyncio.open_connection("127.0.0.1", node.server.port)
    fake = iter(range(1 << 30, 1 << 31))
    monkeypatch.setattr(node.client, "read_barrier", lambda: next(fake))
    monkeypatch.setattr(node.reads, "_due", lambda: None)
    return reader, writer


async def _parked(node: Any, n: int) -> None:
    async with asyncio.timeout(10):
        while sum(len(v) for v in node.reads._fast.values()) < n:
            await asyncio.sleep(0.01)


def test_a_failed_barrier_answers_the_fast_reads_with_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Contract 1 on the fast path: a barrier that fails answers NOT_CONTROLLER, never the local image."""

    async def run() -> list[Any]:
        node = single_node(tmp_path)
        await node.start()
        try:
            reader, writer = await _never_resolved(node, monkeypatch)
            writer.write(frames(3))
            await _parked(node, 3)
            node.reads.fail_all()
            got = await read_n(reader, 3)
            writer.close()
            return [r.results[0].error_code for _, r in got]
        finally:
            await node.stop()

    assert asyncio.run(run()) == [shell_reads.ErrorCode.NOT_CONTROLLER] * 3


def test_a_parked_fast_read_holds_few_objects_the_collector_tracks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Contract 7 with kwire.server contract 11j (issue 25): a linearizable fast read waiting on its ticket holds
    its parsed request, its slot and one reply object per layer, no closures: a turn's batch of waiting reads is
    alive at the young collections inside that turn, which scan (and promote) every object it holds. Counted
    with ``gc.get_objects`` (tracked objects alive), 15 reads parked beside a first one (a connection's in-flight limit: 16)."""

    def tracked() -> int:
        gc.collect()
        return len(gc.get_objects())

    async def run() -> float:
        node = single_node(tmp_path)
        await node.start()
        try:
            reader, writer = await _never_resolved(node, monkeypatch)
            writer.write(frames(1))  # the connection's own objects exist before counting
            await _parked(node, 1)
            before = tracked()
            writer.write(frames(N - 1, 1))
            await _parked(node, N)
            held = (tracked() - before) / (N - 1)
            node.reads.fail_all()
            await read_n(reader, N)
            writer.close()
            return held
        finally:
            await node.stop()

    held = asyncio.run(run())
    assert held <= 20, held  # before: 41 (five closures' functions, cell tuples and cells; two contexts)
