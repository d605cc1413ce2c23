"""Batched read barriers on real processes (kraftd.shell.raft.reads contract 5, issue #25): many reads pipelined to a
follower share one barrier ticket, and every one of them still sees the write acknowledged just before it was
sent. One 3-process quorum for the module, about 10 s."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections.abc import Iterator

import pytest

from generated.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from generated.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kwire.client import KafkaClient
from kwire.framing import FrameDecoder, encode_frame
from kwire.headers import decode_response, encode_request
from tests.daemon.cluster import Cluster, free_ports

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

BROKER, VERSION, N = 4, 4, 200
DESCRIBE = DescribeConfigsRequest(
    resources=[DescribeConfigsResource(resource_type=BROKER, resource_name="1", configuration_keys=["k"])]
)


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, int, list[int]]]:
    q = Cluster(tmp_path_factory.mktemp("batching"), 3)
    mports = free_ports(3)
    for cfg, mport in zip(q.configs, mports, strict=True):
        with cfg.open("a") as f:
            f.write(f"metrics.port={mport}\n")
    q.start_all()
    try:
        yield q, q.wait_leader(30).leader_id, mports
    finally:
        q.stop_all()


def scrape(port: int) -> dict[str, float]:
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {
        n: float(v) for n, _, v in (ln.rpartition(" ") for ln in body.splitlines() if ln[:1] not in ("#", ""))
    }


async def write(port: int, value: str) -> None:
    """Set k=value on broker 1 at the leader; returns once acknowledged (committed)."""
    c = KafkaClient("127.0.0.1", port, client_id="t-write")
    req = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=BROKER,
                resource_name="1",
                configs=[AlterableConfig(name="k", config_operation=0, value=value)],
            )
        ]
    )
    deadline = time.monotonic() + 20  # a new leader answers NOT_CONTROLLER until its controller activates
    try:
        while (resp := await c.send(req)).responses[0].error_code != 0:
            assert time.monotonic() < deadline, resp
            await asyncio.sleep(0.1)
    finally:
        await c.close()


async def pipelined_reads(port: int, n: int) -> list[str | None]:
    """``n`` DescribeConfigs written in one go on one connection: the value of k in each answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            b"".join(encode_frame(encode_request(32, VERSION, i, "t-read", DESCRIBE)) for i in range(n))
        )
        decoder, frames = FrameDecoder(), []
        while len(frames) < n:
            data = await asyncio.wait_for(reader.read(1 << 16), 30)
            assert data, "the follower closed the connection"
            frames += decoder.feed(data)
        out: list[str | None] = []
        for f in frames:
            _, resp = decode_response(f, 32, VERSION)
            r = resp.results[0]
            assert r.error_code == 0, r
            out.append(next((c.value for c in r.configs if c.name == "k"), None))
        return out
    finally:
        writer.close()


def test_pipelined_follower_reads_share_one_barrier(quorum: tuple[Cluster, int, list[int]]) -> None:
    q, leader, mports = quorum
    follower = next(i for i in q.node_ids() if i != leader)
    asyncio.run(write(q.ports[leader - 1], "v0"))
    asyncio.run(pipelined_reads(q.ports[follower - 1], 1))  # connections to the leader set up
    before = scrape(mports[follower - 1])
    values = asyncio.run(pipelined_reads(q.ports[follower - 1], N))
    after = scrape(mports[follower - 1])
    assert values == ["v0"] * N
    reads = after['kraftd_reads_total{consistency="linearizable"}']
    reads -= before['kraftd_reads_total{consistency="linearizable"}']
    tickets = after["kraftd_read_barriers_total"] - before["kraftd_read_barriers_total"]
    assert reads == N, (reads, N)
    # A follower handles 16 requests of a connection at once (kwire.limits max_in_flight) and reads the rest as
    # those finish: one ticket per such wave at most, where each read used to take its own.
    assert 1 <= tickets <= N // 16 + 2, tickets


def test_batched_reads_see_the_write_acknowledged_before_them(quorum: tuple[Cluster, int, list[int]]) -> None:
    q, leader, _ = quorum
    for follower in (i for i in q.node_ids() if i != leader):
        for round_ in range(1, 6):
            value = f"v{follower}-{round_}"
            asyncio.run(write(q.ports[leader - 1], value))
            assert asyncio.run(pipelined_reads(q.ports[follower - 1], 50)) == [value] * 50
