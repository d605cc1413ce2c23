"""Checks after a chaos run (contract of tests/chaos): no acknowledged record lost or duplicated, identical logs.

Contracts:
1. :func:`read_acks` maps every acknowledged offset to its record id over all nodes' ack files (a line cut
   short by kill -9 was never reported and is skipped); the same offset acknowledged with two ids is a violation.
2. :func:`verify` first stops the load for good: every node is killed (-9, so no leader hands over and keeps
   acknowledging during shutdown) and restarted without its load generator. It then waits (bounded) until every
   voter's log end offset has passed the last acknowledged offset and all are equal, stops the nodes, and reads
   each node's log from disk: every acknowledged record must sit at its offset on
   every node, no record id may appear twice in a log, and the logs must be byte-identical batch for batch up to
   the shortest one's end (the common committed prefix).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from kraftd.shell.loadgen import parse_ack_line, record_id_of
from kraftd.storage.layout import partition_dir
from kraftd.storage.log import MetadataLog
from kwire.records import decode_batch
from tests.chaos.cluster import ChaosCluster


@dataclass
class Verdict:
    acked: int = 0
    lost: list[tuple[int, str, int]] = field(default_factory=list)  # (offset, id, node)
    duplicated: list[tuple[int, str]] = field(default_factory=list)  # (node, id)
    double_acks: list[int] = field(default_factory=list)
    divergent: list[str] = field(default_factory=list)
    common_prefix: int = 0
    log_ends: dict[int, int] = field(default_factory=dict)
    caught_up: bool = False

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.double_acks or self.divergent) and self.caught_up


def read_acks(c: ChaosCluster, v: Verdict) -> dict[int, str]:
    acks: dict[int, str] = {}
    for i in c.ids:
        path = c.ack_file(i)
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            if line.count(" ") != 5:
                continue
            for offset, rid in parse_ack_line(line).records():
                if acks.get(offset, rid) != rid:
                    v.double_acks.append(offset)
                acks[offset] = rid
    return acks


def _log(c: ChaosCluster, i: int) -> tuple[list[tuple[int, int, bytes]], dict[int, str]]:
    log = MetadataLog(partition_dir(c.data_dir(i)), 1 << 30, fsync=False)
    try:
        batches, records = [], {}
        for raw in log.batches():
            batch = decode_batch(raw)
            batches.append((batch.base_offset, batch.last_offset, bytes(raw)))
            if not batch.is_control:
                for rec in batch.records:
                    rid = record_id_of(rec.value or b"")
                    if rid:  # a controller's own metadata records are not the load's
                        records[batch.offset_of(rec)] = rid
        return batches, records
    finally:
        log.close()


def verify(c: ChaosCluster, timeout: float = 60) -> Verdict:
    v = Verdict()
    for i in list(c.procs):
        c.kill(i)
    for i in c.ids:
        c.start(i, load=False)
    acks = read_acks(c, v)
    v.acked = len(acks)
    target = max(acks) if acks else -1
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = c.describe(2000)
        if info is not None and info.leader_id >= 0 and all(r.log_end_offset > target for r in info.voters):
            ends = {r.log_end_offset for r in info.voters}
            if len(ends) == 1:
                v.caught_up = True
                break
        time.sleep(0.3)
    c.stop_all()
    logs = {i: _log(c, i) for i in c.ids}
    for i, (batches, records) in logs.items():
        v.log_ends[i] = batches[-1][1] + 1 if batches else 0
        for offset, rid in acks.items():
            if records.get(offset) != rid:
                v.lost.append((offset, rid, i))
        v.duplicated += [(i, rid) for rid, n in Counter(records.values()).items() if n > 1]
    v.common_prefix = min(v.log_ends.values())
    reference = [b for b in logs[c.ids[0]][0] if b[1] < v.common_prefix]
    for i in c.ids[1:]:
        mine = [b for b in logs[i][0] if b[1] < v.common_prefix]
        if mine != reference:
            first = next(
                (f"offset {a[0]}" for a, b in zip(reference, mine, strict=False) if a != b), "batch count"
            )
            v.divergent.append(f"node {i} differs from node {c.ids[0]} at {first}")
    return v
