"""A load generator that appends through a node's RaftClient while that node leads (tests and benchmarks).

Contracts:
1. Every committed append is recorded as one line ``<offset> <record id> <commit wall ms> <latency us>`` in the
   ack file, written (line-buffered) only after the append resolved, so a line is never written for an
   uncommitted record. Record ids are ``<node id>p<pid>-<sequence>``: unique across runs of a node.
2. While the node is not the leader the workers idle (10 ms polls); appends that fail are not recorded.
3. ``in_flight`` workers each keep one append of ``batch`` records outstanding; the generator stops when
   ``stop`` is set.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from pathlib import Path

from kraftd.core.replication import NotLeaderError
from kraftd.shell.node import ControllerNode
from kwire.errors import KraftError


def record_value(record_id: str, size: int) -> bytes:
    raw = record_id.encode("ascii")
    return raw + b"." * max(0, size - len(raw))


def record_id_of(value: bytes) -> str:
    return value.split(b".", 1)[0].decode("ascii", "replace")


async def run_load(
    node: ControllerNode,
    ack_file: Path,
    *,
    in_flight: int,
    record_size: int,
    stop: asyncio.Event,
    batch: int = 1,
) -> None:
    seq = itertools.count(1)
    me = node.config.node_id
    prefix = f"{me}p{os.getpid()}"
    with ack_file.open("a", buffering=1) as out:

        async def worker() -> None:
            while not stop.is_set():
                if node.core.leader_id() != me:
                    await asyncio.sleep(0.01)
                    continue
                rids = [f"{prefix}-{next(seq)}" for _ in range(batch)]
                t0 = time.perf_counter()
                try:
                    last = await node.append([record_value(rid, record_size) for rid in rids])
                except (NotLeaderError, KraftError):
                    await asyncio.sleep(0.01)
                    continue
                latency_us = int((time.perf_counter() - t0) * 1_000_000)
                ms = int(time.time() * 1000)
                first = last - len(rids) + 1
                out.write("".join(f"{first + i} {rid} {ms} {latency_us}\n" for i, rid in enumerate(rids)))

        await asyncio.gather(*(worker() for _ in range(in_flight)))
