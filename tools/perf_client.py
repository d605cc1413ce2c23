"""``kraftd perf``: a client of a running quorum that appends NoOpRecords through the leader (kraftd's
KraftdAppend RPC, api key 651) and reports commit throughput and latency percentiles.

Contracts:
1. Every appended value is a NoOpRecord in the metadata record frame (frame version 1, api key 20,
   version 0, body = empty tagged fields): a valid metadata record for any KRaft peer replicating the log.
2. The leader is found as kafka-metadata-quorum finds it (DescribeCluster, endpoint type 2, to the
   bootstrap controllers); a NOT_LEADER_OR_FOLLOWER answer re-discovers it and retries that append, so a
   leader change slows the run but does not end it. Only committed appends count.
3. A latency is the time from sending one KraftdAppend to its committed answer. Every wait is bounded by
   ``timeout``; running out of time or any other error code ends the run with one message.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass

from generated.describe_cluster_request import DescribeClusterRequest
from generated.kraftd_append_request import KraftdAppendRequest, Record
from kraftd.shell.net.transport import PeerConnection, PeerError
from kwire.errors import ErrorCode, KraftError
from kwire.metadata_frame import encode_metadata_record

NOOP_RECORD_KEY = 20
NOOP_RECORD = encode_metadata_record(NOOP_RECORD_KEY, 0, b"\x00")  # 01 14 00 00
PER_CONNECTION = 16  # kwire.server's default in-flight requests per connection


class PerfError(KraftError):
    """The run could not finish (no leader, an unexpected error code, out of time)."""


@dataclass(frozen=True, slots=True)
class Leader:
    node_id: int
    host: str
    port: int
    cluster_id: str


async def find_leader(hosts: list[tuple[str, int]], deadline: float, avoid: int = -1) -> Leader:
    """The active controller named by any bootstrap controller (contract 2); retried until ``deadline``."""
    last = "no bootstrap controller answered"
    while time.monotonic() < deadline:
        for host, port in hosts:
            conn = PeerConnection(host, port, client_id="kraftd-perf", timeout_ms=2000)
            try:
                resp = await conn.request(DescribeClusterRequest(endpoint_type=2))
            except PeerError as exc:
                last = str(exc)
                continue
            finally:
                await conn.close()
            node = next((b for b in resp.brokers if b.broker_id == resp.controller_id), None)
            if resp.error_code == ErrorCode.NONE and node is not None and node.broker_id != avoid:
                return Leader(node.broker_id, node.host, node.port, resp.cluster_id)
            last = f"{host}:{port} knows no active controller yet"
        await asyncio.sleep(0.1)
    raise PerfError(f"no leader found: {last}")


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (0 for an empty one)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


async def run_perf(
    hosts: list[tuple[str, int]], *, records: int, batch: int, in_flight: int, timeout: float
) -> dict[str, float]:
    deadline = time.monotonic() + timeout
    leader = await find_leader(hosts, deadline)
    leaders = {leader.node_id}
    conns: list[PeerConnection] = []
    lock = asyncio.Lock()
    latencies: list[float] = []
    state = {"sent": 0, "committed": 0, "retries": 0}

    def open_conns(lead: Leader) -> None:
        n = max(1, math.ceil(in_flight / PER_CONNECTION))
        conns[:] = [
            PeerConnection(lead.host, lead.port, client_id="kraftd-perf", timeout_ms=int(timeout * 1000))
            for _ in range(n)
        ]

    async def rediscover(seen: PeerConnection) -> None:
        nonlocal leader
        async with lock:
            if seen not in conns:
                return  # another worker already moved to the new leader
            old = list(conns)
            leader = await find_leader(hosts, deadline)
            leaders.add(leader.node_id)
            open_conns(leader)
            for c in old:
                await c.close()

    async def worker(i: int) -> None:
        while state["sent"] < records:
            n = min(batch, records - state["sent"])
            state["sent"] += n
            req = KraftdAppendRequest(
                cluster_id=leader.cluster_id,
                timeout_ms=max(1, int((deadline - time.monotonic()) * 1000)),
                records=[Record(NOOP_RECORD) for _ in range(n)],
            )
            while True:
                if time.monotonic() > deadline:
                    raise PerfError(f"timed out after {timeout}s with {state['committed']} records committed")
                conn = conns[i % len(conns)]
                t0 = time.perf_counter()
                try:
                    resp = await conn.request(req)
                except PeerError as exc:
                    if exc.error_code == ErrorCode.UNSUPPORTED_VERSION:
                        raise PerfError(
                            f"leader {leader.node_id} does not serve KraftdAppend (api key 651): "
                            "kraftd perf needs a kraftd leader"
                        ) from None
                    state["retries"] += 1
                    await rediscover(conn)
                    continue
                if resp.error_code == ErrorCode.NONE:
                    latencies.append(time.perf_counter() - t0)
                    state["committed"] += n
                    break
                if resp.error_code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT):
                    state["retries"] += 1
                    await asyncio.sleep(0.05)
                    await rediscover(conn)
                    continue
                raise PerfError(f"append failed: {ErrorCode(resp.error_code).name}: {resp.error_message}")

    open_conns(leader)
    start = time.perf_counter()
    try:
        await asyncio.gather(*(worker(i) for i in range(in_flight)))
    finally:
        for c in conns:
            await c.close()
    elapsed = time.perf_counter() - start
    latencies.sort()
    return {
        "records": float(state["committed"]),
        "appends": float(len(latencies)),
        "seconds": elapsed,
        "records_per_sec": state["committed"] / elapsed if elapsed else 0.0,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p95_ms": percentile(latencies, 95) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
        "max_ms": (latencies[-1] if latencies else 0.0) * 1000,
        "retries": float(state["retries"]),
        "leaders": float(len(leaders)),
    }
