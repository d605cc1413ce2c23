"""Start-up: time to ready and memory of a controller loading a large metadata log, kraftd vs Kafka 4.3.1.

Usage: .venv/bin/python bench/startup.py [--records N] [--partitions P] [--json] [--keep DIR]

The directory (one per run, default N = 1,000,000 records):
1. A single-voter controller directory is formatted by kraftd's formatter (metadata.version 4.3-IV0, static voter
   set) and kraftd is started once so that, as the first leader, it writes its LeaderChange and bootstrap records.
2. kraftd's own storage writer (``MetadataLog.append``) then appends, in the leader's epoch, what a controller of a
   busy cluster accumulates: 3 broker registrations, and per topic (N / 100 topics, or P / 10 with ``--partitions``;
   issue 24 asks for P = 100k and 1M) a TopicRecord, a ConfigRecord
   and 10 PartitionRecords (RF 3), then PartitionChangeRecords (leader moves) up to N records in all. The records
   are kraftd's generated metadata record types framed at the versions Kafka writes for the metadata.version,
   1,000 to a batch: byte for byte what a Kafka controller's log holds.
3. A snapshot copy: kraftd's image of the whole log written by kraftd's snapshot writer at the log end offset, with
   the log reset to start there (what a node holds after installing that snapshot).

Each directory is copied byte for byte for every start. "Ready" = the process answers a validate-only CreateTopics
for the last topic of the log with TOPIC_ALREADY_EXISTS: it is the active controller of its single-voter quorum and
its image holds the loaded log (Kafka's controller and kraftd both refuse with NOT_CONTROLLER until they have
replayed the log up to their new epoch). "listening" is the first answer of any kind. Each kind is started twice on
its copy (first start, then a restart after SIGTERM): a directory written by kraftd has no ``.kafka_cleanshutdown``
marker, so Kafka's first start also recovers the segments (its real behaviour on that directory); the restart is
on a directory Kafka itself shut down. Snapshotting is disabled in both kinds during the measurement so the bytes
loaded stay the same. RSS is /proc/<pid>/status VmRSS 3 s (``--settle``) after ready; Kafka's heap in use is ``jcmd GC.heap_info``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generated.config_record import ConfigRecord  # noqa: E402
from generated.create_topics_request import CreatableTopic, CreateTopicsRequest  # noqa: E402
from generated.partition_change_record import PartitionChangeRecord  # noqa: E402
from generated.partition_record import PartitionRecord  # noqa: E402
from generated.register_broker_record import BrokerEndpoint, BrokerFeature, RegisterBrokerRecord  # noqa: E402
from generated.topic_record import TopicRecord  # noqa: E402
from kraftd.controller.features import record_version  # noqa: E402
from kraftd.controller.image_writer import image_from_batches, snapshot_values  # noqa: E402
from kraftd.core.batches import data_batch  # noqa: E402
from kraftd.core.log import LogBatch, OffsetAndEpoch  # noqa: E402
from kraftd.core.snapshots import build_snapshot  # noqa: E402
from kraftd.core.types import VoterSet  # noqa: E402
from kraftd.shell.net.transport import PeerConnection, PeerError  # noqa: E402
from kraftd.storage.batches import peek  # noqa: E402
from kraftd.storage.log import MetadataLog  # noqa: E402
from kraftd.storage.snapshots import write_snapshot  # noqa: E402
from kraftd.storage.uuids import random_uuid  # noqa: E402
from kraftd.testing.broker_load import metadata_records  # noqa: E402
from kraftd.testing.kafka import Node  # noqa: E402
from kraftd.testing.quorum import MixedQuorum  # noqa: E402
from kwire.metadata_frame import encode_record  # noqa: E402

TOPIC_ALREADY_EXISTS = 36
RECORDS_PER_BATCH = 1000
SEGMENT_BYTES = 1 << 30
# Server JVM flags for the Kafka controller (the fixture's JVM_OPTS favour short-lived test JVMs).
KAFKA_JVM = ["-Xms1g", "-Xmx4g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true"]
PROPS = {
    # No snapshot while measuring: the bytes loaded stay the ones generated.
    "metadata.log.max.record.bytes.between.snapshots": str(1 << 50),
    "metadata.log.max.snapshot.interval.ms": "0",
}


# ---------------------------------------------------------------------------------------------- the directory


def topic_name(i: int) -> str:
    return f"topic-{i:06d}"


def bench_records(
    total: int, mv: int, already: int, partitions: int | None = None
) -> tuple[list[bytes], str]:
    """The framed values appended after kraftd's own first records (``already`` of them); the last topic's name."""

    def enc(rec: Any) -> bytes:
        return encode_record(rec, record_version(type(rec).API_KEY, mv))

    brokers = [(b, random_uuid()) for b in (1001, 1002, 1003)]
    out = [
        enc(
            RegisterBrokerRecord(
                broker_id=b,
                incarnation_id=random_uuid(),
                broker_epoch=10 + b,
                end_points=[BrokerEndpoint("PLAINTEXT", "127.0.0.1", 19000 + b, 0)],
                features=[BrokerFeature("metadata.version", 1, mv)],
                rack=None,
                fenced=True,
                log_dirs=[d],
            )
        )
        for b, d in brokers
    ]
    topics = max(1, (partitions // 10) if partitions else total // 100)
    ids = [random_uuid() for _ in range(topics)]
    dirs = dict(brokers)
    for t, tid in enumerate(ids):
        out.append(enc(TopicRecord(name=topic_name(t), topic_id=tid)))
        out.append(
            enc(
                ConfigRecord(
                    resource_type=2, resource_name=topic_name(t), name="retention.ms", value="86400000"
                )
            )
        )
        for p in range(10):
            reps = [brokers[(t + p + k) % 3][0] for k in range(3)]
            out.append(
                enc(
                    PartitionRecord(
                        partition_id=p,
                        topic_id=tid,
                        replicas=reps,
                        isr=reps,
                        leader=reps[0],
                        leader_epoch=0,
                        partition_epoch=0,
                        directories=[dirs[r] for r in reps],
                    )
                )
            )
    k = 0
    while len(out) + already < total:
        t, p = divmod(k % (topics * 10), 10)
        reps = [brokers[(t + p + j) % 3][0] for j in range(3)]
        rnd = k // (topics * 10) + 1
        out.append(
            enc(PartitionChangeRecord(partition_id=p, topic_id=ids[t], leader=reps[rnd % 3], isr=reps))
        )
        k += 1
    return out, topic_name(topics - 1)


def log_batches(partition_dir: Path) -> list[LogBatch]:
    out = []
    for seg in sorted(partition_dir.glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while (h := peek(data, pos)) is not None and pos + h.size <= len(data):
            out.append(
                LogBatch(h.base_offset, h.last_offset, h.epoch, data[pos : pos + h.size], h.is_control)
            )
            pos += h.size
    return out


def build(work: Path, total: int, partitions: int | None = None) -> dict[str, Any]:
    """Steps 1-3 of the module docstring; returns the directories and what was written."""
    t0 = time.monotonic()
    q = MixedQuorum(work / "gen", ["kraftd"], extra=PROPS)
    node = q.nodes[0]

    def metadata_version() -> int | None:
        got = metadata_records(node.metadata_dir)
        return next(
            (d.record.feature_level for _, d in got if getattr(d.record, "name", "") == "metadata.version"),
            None,
        )

    try:
        q.start_all()
        q.wait_for("kraftd's first records committed", lambda i: i.leader_id == 1 and i.high_watermark > 0)
        deadline = time.monotonic() + 60
        while metadata_version() is None:
            if time.monotonic() > deadline:
                raise SystemExit(f"kraftd wrote no metadata.version record within 60 s\n{node.tail()}")
            time.sleep(0.1)
    finally:
        q.stop_all()
    first = metadata_records(node.metadata_dir)
    mv = metadata_version()
    assert mv is not None
    log = MetadataLog(node.metadata_dir, SEGMENT_BYTES, fsync=False)
    epoch, start_end = log.last_epoch, log.end_offset
    values, last_topic = bench_records(total, mv, len(first), partitions)
    t_enc = time.monotonic()
    now_ms = int(time.time() * 1000)
    for i in range(0, len(values), RECORDS_PER_BATCH):
        log.append(data_batch(log.end_offset, epoch, values[i : i + RECORDS_PER_BATCH], now_ms).data)
    log.fsync_enabled = True
    log.flush()
    end = log.end_offset
    log.close()
    t_log = time.monotonic()
    snap_dir = work / "snapshot-data"
    shutil.copytree(node.data_dir, snap_dir)
    part = snap_dir / node.metadata_dir.name
    image = image_from_batches(log_batches(part), end)
    snap = build_snapshot(
        OffsetAndEpoch(end, epoch),
        snapshot_values(image),
        kraft_version=0,
        voters=VoterSet(()),
        now_ms=now_ms,
        max_batch_bytes=8 * 1024 * 1024,
    )
    write_snapshot(part, snap)
    slog = MetadataLog(part, SEGMENT_BYTES)
    slog.reset_to(end)
    slog.close()
    t_snap = time.monotonic()
    return {
        "cluster_id": q.cluster_id,
        "log_dir": node.data_dir,
        "snapshot_dir": snap_dir,
        "end_offset": end,
        "records": len(first) + len(values),
        "kraftd_records": len(first),
        "first_offset_written": start_end,
        "last_topic": last_topic,
        "log_bytes": sum(p.stat().st_size for p in node.metadata_dir.glob("*.log")),
        "snapshot_bytes": len(snap.data),
        "gen_s": {
            "format_and_bootstrap": round(t_enc - t0, 1),
            "append": round(t_log - t_enc, 1),
            "snapshot": round(t_snap - t_log, 1),
        },
    }


# ---------------------------------------------------------------------------------------------- measuring


async def probe(port: int, topic: str) -> int | None:
    """The error code of a validate-only CreateTopics for ``topic``, or None when nothing answered."""
    conn = PeerConnection("127.0.0.1", port, client_id="bench-startup", timeout_ms=5000)
    try:
        req = CreateTopicsRequest(
            topics=[CreatableTopic(name=topic, num_partitions=1, replication_factor=1)],
            timeout_ms=5000,
            validate_only=True,
        )
        resp = await conn.request(req)
        return int(resp.topics[0].error_code)
    except PeerError:
        return None
    finally:
        await conn.close()


def rss_kib(pid: int) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    m = re.search(r"VmRSS:\s+(\d+) kB", text)
    return int(m.group(1)) if m else -1


def heap_used_kib(pid: int) -> int | None:
    done = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60)
    m = re.search(r"heap\s+total (\d+)K, used (\d+)K", done.stdout)
    return int(m.group(2)) if m else None


def start_and_wait(q: MixedQuorum, node: Node, topic: str, timeout: float, settle: float) -> dict[str, Any]:
    t0 = time.monotonic()
    node.start()
    assert node.proc is not None
    listening = None
    deadline = t0 + timeout
    while True:
        code = asyncio.run(probe(node.port, topic))
        now = time.monotonic()
        if code is not None and listening is None:
            listening = now - t0
        if code == TOPIC_ALREADY_EXISTS:
            break
        if now > deadline or not node.alive():
            raise SystemExit(
                f"{node.kind} was not ready within {timeout}s (last answer {code})\n{node.tail()}"
            )
        time.sleep(0.02)
    ready = now - t0
    info = q.describe(timeout_ms=10000)
    time.sleep(settle)
    out: dict[str, Any] = {
        "listening_s": round(listening or ready, 3),
        "ready_s": round(ready, 3),
        "high_watermark": info.high_watermark,
        "leader_epoch": info.leader_epoch,
        "rss_mib": round(rss_kib(node.proc.pid) / 1024, 1),
    }
    if node.kind == "kafka":
        used = heap_used_kib(node.proc.pid)
        out["heap_used_mib"] = round(used / 1024, 1) if used is not None else None
    return out


def measure(
    kind: str, source: Path, built: dict[str, Any], root: Path, args: argparse.Namespace
) -> dict[str, Any]:
    timeout, settle = args.timeout, args.settle
    q = MixedQuorum(root, [kind], cluster_id=built["cluster_id"], extra=PROPS, format_nodes=False)
    node = q.nodes[0]
    if kind == "kafka":
        node.jvm_opts = KAFKA_JVM
        node.log_level = args.kafka_log_level
    shutil.copytree(source, node.data_dir)
    try:
        first = start_and_wait(q, node, built["last_topic"], timeout, settle)
        assert first["high_watermark"] >= built["end_offset"], (first, built["end_offset"])
        if args.no_restart:
            return {"first": first}
        code = node.stop(signal.SIGTERM, timeout=120)
        restart = start_and_wait(q, node, built["last_topic"], timeout, settle)
        restart["previous_exit"] = code
        return {"first": first, "restart": restart}
    finally:
        q.stop_all()


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="records in the metadata log (default 1M)")
    ap.add_argument(
        "--partitions",
        type=int,
        help="partitions in the log, 10 per topic (default records / 10); the log holds at least their records",
    )
    ap.add_argument("--json", action="store_true", help="print one machine-readable line")
    ap.add_argument(
        "--keep", type=Path, help="work in DIR and keep it (default: a temporary directory, removed)"
    )
    ap.add_argument(
        "--kafka-log-level",
        default="INFO",
        help="the Kafka controller's root log level (INFO, its default, logs a line per replayed PartitionRecord)",
    )
    ap.add_argument("--timeout", type=float, default=900, help="seconds a start may take")
    ap.add_argument(
        "--settle", type=float, default=3.0, help="seconds after ready before reading RSS and heap"
    )
    ap.add_argument("--no-restart", action="store_true", help="measure the first start only")
    args = ap.parse_args()
    starts = ("first",) if args.no_restart else ("first", "restart")
    work = args.keep or Path(tempfile.mkdtemp(prefix="kraftd-startup-"))
    try:
        built = build(work, args.records, args.partitions)
        res: dict[str, Any] = {
            "bench": "startup",
            "records": built["records"],
            "partitions": args.partitions or max(1, args.records // 100) * 10,
            "end_offset": built["end_offset"],
            "log_mib": round(built["log_bytes"] / 2**20, 1),
            "snapshot_mib": round(built["snapshot_bytes"] / 2**20, 1),
            "generate_s": built["gen_s"],
            "kafka_log_level": args.kafka_log_level,
        }
        for case, source in (("log", built["log_dir"]), ("snapshot", built["snapshot_dir"])):
            for kind in ("kraftd", "kafka"):
                res[f"{case}_{kind}"] = measure(kind, source, built, work / f"{case}-{kind}", args)
            for start in starts:
                k, j = res[f"{case}_kraftd"][start], res[f"{case}_kafka"][start]
                res[f"{case}_{start}_ratio"] = {
                    "ready": ratio(k["ready_s"], j["ready_s"]),
                    "rss_vs_jvm_rss": ratio(k["rss_mib"], j["rss_mib"]),
                    "rss_vs_heap_used": ratio(k["rss_mib"], j.get("heap_used_mib")),
                }
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(res))
        return
    print(f"metadata log: {res['records']} records, {res['log_mib']} MiB; snapshot {res['snapshot_mib']} MiB")
    print(f"generating took {res['generate_s']} s")
    for case in ("log", "snapshot"):
        for start in starts:
            k, j = res[f"{case}_kraftd"][start], res[f"{case}_kafka"][start]
            print(
                f"{case:8s} {start:7s} kraftd ready {k['ready_s']:7.2f} s rss {k['rss_mib']:7.1f} MiB | "
                f"kafka ready {j['ready_s']:7.2f} s rss {j['rss_mib']:7.1f} MiB heap used {j.get('heap_used_mib')} MiB"
                f" | ratios {json.dumps(res[f'{case}_{start}_ratio'])}"
            )


if __name__ == "__main__":
    main()
