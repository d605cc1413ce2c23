"""A load generator that appends through a node's RaftClient while that node leads (tests and benchmarks).

Contracts:
1. Every committed append is recorded as one line ``<first offset> <last offset> <prefix> <first seq>
   <commit wall ms> <latency us>`` in the ack file, written (line-buffered) only after the append resolved, so
   a line is never written for an uncommitted record. The record at ``first offset + i`` has the id
   ``<prefix>-<first seq + i>``; prefixes are ``<node id>p<pid>``, so ids are unique across runs of a node.
2. While the node is not the leader the workers idle (10 ms polls); appends that fail are not recorded.
3. ``in_flight`` workers each keep one append of ``batch`` records outstanding; the generator stops when
   ``stop`` is set.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import NamedTuple

from kraftd.core.replication import NotLeaderError
from kraftd.shell.node import ControllerNode
from kwire.errors import KraftError


class Ack(NamedTuple):
    first: int
    last: int
    prefix: str
    first_seq: int
    commit_ms: int
    latency_us: int

    def records(self) -> list[tuple[int, str]]:
        """(offset, record id) of every record of this append."""
        return [
            (self.first + i, f"{self.prefix}-{self.first_seq + i}") for i in range(self.last - self.first + 1)
        ]


def parse_ack_line(line: str) -> Ack:
    a, b, prefix, seq, ms, us = line.split()
    return Ack(int(a), int(b), prefix, int(seq), int(ms), int(us))


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
    me = node.config.node_id
    prefix = f"{me}p{os.getpid()}"
    next_seq = 1
    with ack_file.open("a", buffering=1) as out:

        async def worker() -> None:
            nonlocal next_seq
            while not stop.is_set():
                if node.known_leader() != me:
                    await asyncio.sleep(0.01)
                    continue
                first_seq = next_seq
                next_seq += batch
                values = [
                    f"{prefix}-{s}".encode().ljust(record_size, b".") for s in range(first_seq, next_seq)
                ]
                t0 = time.perf_counter()
                try:
                    last = await node.append(values)
                except (NotLeaderError, KraftError):
                    await asyncio.sleep(0.01)
                    continue
                latency_us = int((time.perf_counter() - t0) * 1_000_000)
                first = last - batch + 1
                out.write(f"{first} {last} {prefix} {first_seq} {int(time.time() * 1000)} {latency_us}\n")

        await asyncio.gather(*(worker() for _ in range(in_flight)))
