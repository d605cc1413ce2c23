"""The metadata image's memory at scale, in process (issue 24): what a follower and the active leader hold for P
partitions, without a swarm or sockets.

Usage: .venv/bin/python bench/memory.py [--partitions 100000,1000000] [--brokers 30] [--json] [--breakdown]

For each P (P/100 topics x 100 partitions, RF 3, each replica on its broker's one log directory, as the swarm
registers them; written at metadata.version 4.3-IV0 with directories), in a fresh process:
- ``follower``: the records framed as the log holds them, decoded and replayed into a committed image
  (``MetadataController.replay``, 50 topics per batch, as CreateTopics requests of 50 topics write them);
- ``leader``: the same through the active leader: each batch appended (``on_appended``: decoded and applied to the
  uncommitted view), then committed (``replay``), as the shell does.
Each reports the process's RSS growth (/proc VmRSS) over the empty image, per partition, with the log's own bytes
(``log_mib``, the batches the in-memory log keeps until a snapshot) kept out of it. Then the leader's committed image is
written as a KIP-630 snapshot as the node writes it (``snapshot_values``, ``build_snapshot``; the core keeps the
snapshot it serves FetchSnapshot from): ``snapshot_mib`` is its size, ``after_snapshot_mib`` the RSS growth over the
image once the values are dropped (the snapshot kept, plus whatever the process did not give back).
``--breakdown`` adds the largest allocation sites (tracemalloc, slower). Run from an older tree (``PYTHONPATH``)
to measure it there.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generated.feature_level_record import FeatureLevelRecord  # noqa: E402
from generated.partition_record import PartitionRecord  # noqa: E402
from generated.register_broker_record import RegisterBrokerRecord  # noqa: E402
from generated.topic_record import TopicRecord  # noqa: E402
from generated.unfence_broker_record import UnfenceBrokerRecord  # noqa: E402
from kraftd.controller.image_writer import snapshot_values  # noqa: E402
from kraftd.controller.machine import MetadataController  # noqa: E402
from kraftd.core.log import LogBatch, OffsetAndEpoch  # noqa: E402
from kraftd.core.snapshots import build_snapshot  # noqa: E402
from kraftd.core.types import VoterSet  # noqa: E402
from kwire.metadata_frame import encode_record  # noqa: E402
from kwire.records import build_data_batch  # noqa: E402

MV = 30  # 4.3-IV0: PartitionRecord v2 (directories, ELR fields)
PER_TOPIC = 100
TOPICS_PER_BATCH = 50


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def batches(partitions: int, brokers: int) -> Iterator[list[bytes]]:
    dirs = [uuid.UUID(int=(7 << 64) + b) for b in range(brokers)]
    head: list[Any] = [FeatureLevelRecord(name="metadata.version", feature_level=MV)]
    for b in range(brokers):
        inc = uuid.UUID(int=b + 1)
        head.append(
            RegisterBrokerRecord(broker_id=b, broker_epoch=b + 10, incarnation_id=inc, log_dirs=[dirs[b]])
        )
        head.append(UnfenceBrokerRecord(id=b, epoch=b + 10))
    yield [encode_record(r, 3 if type(r).API_KEY == 0 else 0) for r in head]
    topics = max(1, partitions // PER_TOPIC)
    for first in range(0, topics, TOPICS_PER_BATCH):
        values = []
        for t in range(first, min(topics, first + TOPICS_PER_BATCH)):
            tid = uuid.UUID(int=(1 << 64) + t)
            values.append(encode_record(TopicRecord(name=f"t{t:07d}", topic_id=tid), 0))
            for p in range(PER_TOPIC):
                reps = [(t + p + k) % brokers for k in range(3)]
                rec = PartitionRecord(
                    partition_id=p,
                    topic_id=tid,
                    replicas=reps,
                    isr=reps,
                    leader=reps[0],
                    directories=[dirs[r] for r in reps],
                )
                values.append(encode_record(rec, 2))
        yield values


def run(partitions: int, brokers: int, leader: bool, breakdown: bool) -> dict[str, Any]:
    if breakdown:
        import tracemalloc

        tracemalloc.start(1)
    m = MetadataController(1, [])
    gc.collect()
    before = rss_mib()
    log: list[LogBatch] = []
    offset = 0
    first = True
    for values in batches(partitions, brokers):
        data = build_data_batch(values, base_offset=offset, partition_leader_epoch=1, timestamp=0)
        batch = LogBatch(offset, offset + len(values) - 1, 1, data)
        log.append(batch)  # the in-memory log keeps it (kraftd.core.log), counted apart
        if leader and not first:
            m.on_appended(offset, values)
        m.replay([batch], batch.next_offset)
        if leader and first:  # the bootstrap records commit, then the leader activates (machine contract 2)
            m.become_leader(1, batch.next_offset)
            m.activation_records()
        first = False
        offset = batch.next_offset
    gc.collect()
    log_mib = sum(len(b.data) for b in log) / 2**20
    grown = rss_mib() - before - log_mib
    out: dict[str, Any] = {
        "partitions": partitions,
        "brokers": brokers,
        "role": "leader" if leader else "follower",
        "rss_mib": round(grown, 1),
        "bytes_per_partition": round(grown * 2**20 / partitions),
        "log_mib": round(log_mib, 1),
        "checksum": m.committed.checksum()[:16] if partitions <= 100_000 else None,
    }
    if breakdown:
        snap = tracemalloc.take_snapshot()
        out["top"] = [str(s) for s in snap.statistics("lineno")[:8]]
    if leader and not breakdown:
        image_rss = rss_mib()
        values = snapshot_values(m.committed)
        kept = build_snapshot(
            OffsetAndEpoch(offset, 1),
            values,
            kraft_version=0,
            voters=VoterSet(()),
            now_ms=0,
            max_batch_bytes=8 << 20,
        )
        del values
        gc.collect()
        out["snapshot_mib"] = round(len(kept.data) / 2**20, 1)
        out["after_snapshot_mib"] = round(rss_mib() - image_rss, 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", default="100000,1000000")
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--breakdown", action="store_true")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # P,leader: run one point in this process
    a = ap.parse_args()
    if a.one:
        p, role = a.one.split(",")
        print(json.dumps(run(int(p), a.brokers, role == "leader", a.breakdown)))
        return
    results = []
    for p in (int(x) for x in a.partitions.split(",")):
        for role in ("follower", "leader"):
            cmd = [sys.executable, __file__, "--one", f"{p},{role}", "--brokers", str(a.brokers)]
            cmd += ["--breakdown"] if a.breakdown else []
            r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            results.append(r)
            if not a.json:
                print(
                    f"P={p:>9,} {role:<8} image {r['rss_mib']:>8.1f} MiB  {r['bytes_per_partition']:>5} B/partition"
                    f"  (log {r['log_mib']:.1f} MiB apart)"
                    + (
                        f"; snapshot {r['snapshot_mib']} MiB, RSS +{r['after_snapshot_mib']} MiB after writing it"
                        if "snapshot_mib" in r
                        else ""
                    ),
                    flush=True,
                )
                for line in r.get("top", []):
                    print("    " + line)
    if a.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
