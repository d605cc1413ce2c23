"""A load generator that appends through a node's RaftClient while that node leads (tests and benchmarks).

Contracts:
1. Every committed append is recorded as one line ``<first offset> <last offset> <prefix> <first seq>
   <commit wall ms> <latency us>`` in the ack file, written (line-buffered) only after the append resolved, so
   a line is never written for an uncommitted record. The record at ``first offset + i`` has the id
   ``<prefix>-<first seq + i>``; prefixes are ``<node id>p<pid>``, so ids are unique across runs of a node.
2. While the node is not the active controller the workers idle (10 ms polls): leading is not enough, the
   controller's activation records (metadata.version first of all) must be in the log before any load record,
   as a Kafka controller in the quorum stops on a committed batch that precedes metadata.version. Appends that
   fail are not recorded.
3. ``in_flight`` workers each keep one append of ``batch`` records outstanding; the generator stops when
   ``stop`` is set.
4. With ``noop_frames`` every value is a framed metadata NoOpRecord (frame version 1, api key 20, version 0)
   whose one unknown tagged field (tag 0) carries the id and padding, so a real Kafka controller in the quorum
   replays it as a no-op; :func:`record_id_of` reads both forms.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path
from typing import NamedTuple

from kraftd.core.replication import NotLeaderError
from kraftd.shell.node import ControllerNode
from kwire.errors import KraftError
from kwire.varint import decode_unsigned_varint, encode_unsigned_varint


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


NOOP_FRAME = b"\x01\x14\x00"  # frame version 1, NoOpRecord (api key 20), version 0


def noop_frame(payload: bytes) -> bytes:
    """Contract 4: a NoOpRecord whose tagged field 0 holds ``payload``."""
    return NOOP_FRAME + b"\x01\x00" + encode_unsigned_varint(len(payload)) + payload


LOAD_ID = re.compile(r"\d+p\d+-\d+")


def record_id_of(value: bytes) -> str:
    """The load generator's id of a record (contract 1), or "" for any other record (a controller's own)."""
    if value.startswith(NOOP_FRAME + b"\x01\x00"):
        try:
            size, pos = decode_unsigned_varint(value, len(NOOP_FRAME) + 2)
        except KraftError:
            return ""
        value = value[pos : pos + size]
    rid = value.split(b".", 1)[0].decode("ascii", "replace")
    return rid if LOAD_ID.fullmatch(rid) else ""


async def run_load(
    node: ControllerNode,
    ack_file: Path,
    *,
    in_flight: int,
    record_size: int,
    stop: asyncio.Event,
    batch: int = 1,
    noop_frames: bool = False,
) -> None:
    me = node.config.node_id
    prefix = f"{me}p{os.getpid()}"
    next_seq = 1
    with ack_file.open("a", buffering=1) as out:

        async def worker() -> None:
            nonlocal next_seq
            while not stop.is_set():
                if node.known_leader() != me or not node.controller.machine.active:
                    await asyncio.sleep(0.01)
                    continue
                first_seq = next_seq
                next_seq += batch
                values = [
                    f"{prefix}-{s}".encode().ljust(record_size, b".") for s in range(first_seq, next_seq)
                ]
                if noop_frames:
                    values = [noop_frame(v) for v in values]
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
