"""kraftd's 3-process quorum beside the floor (bench/floor.py) and, with ``--vs-kafka``, Kafka's own Raft.

Everything runs on loopback with fsync on, 100-byte records, 3 voters, the fetch timeout at 2 s, and the three
systems interleaved in the same run (so a noisy neighbour hurts them alike):
1. batched committed records/s: kraftd 64 appends x 200 records in flight at linger 25 ms (``--linger-ms``), at
   most ~12,800 records per linger + commit time; the floor the same, batching what is pending with no linger;
   Kafka's TestRaftServer appending single records as fast as it can at linger 25 ms (its log end offset
   is sampled over the same seconds);
2. commit latency at one in flight, linger 0: kraftd and the floor one append at a time (closed loop); Kafka's
   workload is open loop, so it runs at ``--kafka-rate`` records/s (one in flight whenever its latency is
   below 1/rate) and we read its own histogram (p75/p99/p999, integer ms) after its 60 s window has dropped
   the start-up;
3. failover: kill -9 of the leader to the first commit by the new leader (both measured the same way: the
   new leader's log line for its epoch's first high watermark; kraftd's first acknowledged append too);
4. graceful hand-off: the same with SIGTERM (the leader resigns with EndQuorumEpoch).

Usage: .venv/bin/python bench/quorum.py [--vs-kafka] [--json] [--seconds S] [--kills N] [--handoffs N] [--repeat R]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import floor  # noqa: E402
from kafka_raft import KafkaRaftQuorum, kafka_classpath  # noqa: E402

from kraftd.shell.loadgen import parse_ack_line  # noqa: E402
from tools.local_quorum import LocalQuorum, free_ports  # noqa: E402

RECORD_SIZE = 100
FETCH_TIMEOUT_MS = 2000
ROOTS: list[Path] = []
# Either log layout: "[ts] INFO kraftd.node: msg" or Kafka's "[ts] INFO msg (kraftd.node)".
FIRST_COMMIT = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] INFO .*node (\d+): high watermark \d+ is the first "
    r"commit as leader of epoch (\d+)"
)


def now_ms() -> int:
    return int(time.time() * 1000)


def new_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="kraftd-bench-"))
    ROOTS.append(root)
    return root


# ---------------------------------------------------------------------------------------------- kraftd
def read_acks(q: LocalQuorum) -> list[tuple[int, int, int, int]]:
    """(node, commit ms, latency us, record count) for every acknowledged append."""
    out = []
    for node in q.node_ids():
        path = q.ack_file(node)
        if path.exists():
            for line in path.read_text().splitlines():
                if line.count(" ") == 5:  # a line cut by kill -9 is skipped
                    a = parse_ack_line(line)
                    out.append((node, a.commit_ms, a.latency_us, a.last - a.first + 1))
    return out


def first_commits(q: LocalQuorum) -> list[tuple[int, int, int]]:
    """(wall ms, leader id, epoch) of every leader's first commit of an epoch, from the nodes' logs."""
    out = []
    for node in q.node_ids():
        path = q.log_file(node)
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                m = FIRST_COMMIT.match(line)
                if m:
                    ts = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                    out.append((int(ts * 1000), int(m.group(2)), int(m.group(3))))
    return sorted(out)


def kraftd_quorum(in_flight: int, linger_ms: int, batch: int = 1) -> LocalQuorum:
    extra = {
        "controller.quorum.append.linger.ms": str(linger_ms),
        "controller.quorum.fetch.timeout.ms": str(FETCH_TIMEOUT_MS),
    }
    q = LocalQuorum(new_root(), extra=extra, load=(in_flight, RECORD_SIZE, batch))
    q.start_all()
    q.wait_leader(timeout=30)
    return q


def kraftd_throughput(seconds: float, linger_ms: int = 25) -> float:
    q = kraftd_quorum(64, linger_ms, batch=200)
    try:
        time.sleep(1.0)  # warm-up
        t0 = now_ms()
        time.sleep(seconds)
        t1 = now_ms()
        n = sum(count for _, ms, _, count in read_acks(q) if t0 <= ms < t1)
        return n / ((t1 - t0) / 1000)
    finally:
        q.stop_all()


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of these processes (all their threads), from /proc (0 where unreadable)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def kraftd_latency(seconds: float) -> dict[str, Any]:
    """Also the three processes' CPU per commit (us): what a commit costs whatever the machine's load."""
    q = kraftd_quorum(1, 0)
    try:
        time.sleep(0.5)
        pids = [p.pid for p in q.procs.values()]
        t0, cpu0 = now_ms(), cpu_seconds(pids)
        time.sleep(seconds)
        cpu = cpu_seconds(pids) - cpu0
        lat = [us / 1e6 for _, ms, us, _ in read_acks(q) if ms >= t0]
        per_commit = round(cpu / len(lat) * 1e6) if lat else None
        return {**floor.summary_ms(lat), "commits": len(lat), "cpu_us_per_commit": per_commit}
    finally:
        q.stop_all()


def kraftd_failover(kills: int, sig: int) -> dict[str, list[int]]:
    """Per round: ms from the signal to the new leader's first commit (log) and to its first acked append."""
    q = kraftd_quorum(1, 0)
    by_log: list[int] = []
    by_ack: list[int] = []
    try:
        for _ in range(kills):
            info = q.wait_leader(timeout=30)
            time.sleep(0.5)
            old = info.leader_id
            at = now_ms()
            q.kill(old, sig)
            deadline = time.monotonic() + 30
            log_t = ack_t = None
            while (log_t is None or ack_t is None) and time.monotonic() < deadline:
                if log_t is None:
                    later = [ms for ms, node, _ in first_commits(q) if node != old and ms >= at]
                    log_t = min(later) if later else None
                if ack_t is None:
                    acks = [ms for node, ms, _, _ in read_acks(q) if node != old and ms >= at]
                    ack_t = min(acks) if acks else None
                time.sleep(0.02)
            if log_t is not None:
                by_log.append(log_t - at)
            if ack_t is not None:
                by_ack.append(ack_t - at)
            q.start(old)
            q.wait_leader(timeout=30, hosts=[old])
            time.sleep(0.5)
    finally:
        q.stop_all()
    return {"first_commit_ms": by_log, "first_ack_ms": by_ack}


# ---------------------------------------------------------------------------------------------- Kafka
def kafka_quorum(classpath: str, linger_ms: int, rate: int) -> KafkaRaftQuorum:
    kq = KafkaRaftQuorum(
        new_root(),
        free_ports(3),
        classpath,
        linger_ms=linger_ms,
        throughput=rate,
        record_size=RECORD_SIZE,
        fetch_timeout_ms=FETCH_TIMEOUT_MS,
    )
    kq.start_all()
    return kq


def kafka_throughput(classpath: str, seconds: float, rate: int) -> dict[str, Any]:
    kq = kafka_quorum(classpath, 25, rate)
    try:
        _, leader, epoch = kq.wait_leader(90)
        tails = {i: kq.tail(i) for i in kq.node_ids()}
        time.sleep(3.0)  # warm-up (JIT)
        e0, t0 = kq.committed_offset(tails), time.monotonic()
        time.sleep(seconds)
        e1, t1 = kq.committed_offset(tails), time.monotonic()
        own = kq.stats(leader)
        return {
            "target_rate": rate,
            "records_per_sec": round((e1 - e0) / (t1 - t0)),
            "own_meter_records_per_sec": round(own[0] / RECORD_SIZE) if own else None,
            "new_epochs_during_run": len([c for c in kq.first_commits() if c[2] > epoch]),
        }
    finally:
        kq.stop_all()


def kafka_latency(classpath: str, rate: int, window_s: float = 62.0) -> dict[str, Any]:
    kq = kafka_quorum(classpath, 0, rate)
    try:
        _, leader, _ = kq.wait_leader(90)
        time.sleep(window_s)  # two 30 s samples: the start-up has left the histogram's window
        seen = kq.stats_count(leader)
        deadline = time.monotonic() + 15
        while kq.stats_count(leader) <= seen and time.monotonic() < deadline:
            time.sleep(0.2)
        own = kq.stats(leader)
        if own is None:
            return {}
        rate_bps, p75, p99, p999 = own
        return {
            "rate": rate,
            "p75_ms": p75,
            "p99_ms": p99,
            "p999_ms": p999,
            "records_per_sec": round(rate_bps / RECORD_SIZE),
        }
    finally:
        kq.stop_all()


def kafka_failover(classpath: str, kills: int, sig: int, rate: int) -> list[int]:
    kq = kafka_quorum(classpath, 0, rate)
    times: list[int] = []
    try:
        _, leader, epoch = kq.wait_leader(90)
        for _ in range(kills):
            time.sleep(0.5)
            at = kq.signal(leader, sig)
            ms, new_leader, new_epoch = kq.wait_leader(30, after_epoch=epoch)
            times.append(ms - at)
            kq.start(leader)
            wait_follower(kq, leader, new_epoch, 90)
            leader, epoch = new_leader, new_epoch
    finally:
        kq.stop_all()
    return times


def wait_follower(kq: KafkaRaftQuorum, node: int, epoch: int, timeout: float) -> None:
    """Until ``node`` has learnt a high watermark in ``epoch`` (it rejoined) or a later epoch began."""
    pat = re.compile(
        rb"FollowerState \[RaftManager id=%d\] High watermark set to .* for the first time for epoch (\d+)"
        % node
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = kq.out_file(node).read_bytes()
        if any(int(e) >= epoch for e in pat.findall(data)):
            return
        time.sleep(0.1)
    raise TimeoutError(f"Kafka raft node {node} did not rejoin epoch {epoch} within {timeout}s")


# ---------------------------------------------------------------------------------------------- report
def spread(xs: list[float]) -> dict[str, Any]:
    if not xs:
        return {"n": 0}
    return {"median": statistics.median(xs), "max": max(xs), "min": min(xs), "n": len(xs)}


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0 or a != a or b != b:
        return None
    return round(a / b, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one machine-readable line")
    ap.add_argument("--vs-kafka", action="store_true", help="also run Kafka's TestRaftServer on 3 JVMs")
    ap.add_argument(
        "--seconds", type=float, default=5.0, help="measured seconds per throughput/latency point"
    )
    ap.add_argument("--kills", type=int, default=20, help="kill -9 rounds")
    ap.add_argument("--handoffs", type=int, default=5, help="SIGTERM rounds")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved repetitions of throughput and latency")
    ap.add_argument("--kafka-rate", type=int, default=100, help="Kafka's open-loop records/s for latency")
    ap.add_argument(
        "--kafka-rates",
        default="100000,200000",
        help="Kafka's open-loop records/s targets for throughput, best kept (unbounded, Kafka's leader loses "
        "check-quorum on a busy 2-core box)",
    )
    ap.add_argument("--linger-ms", type=int, default=25, help="kraftd's append linger for throughput")
    ap.add_argument(
        "--skip", default="", help="comma list of phases to skip: throughput,latency,failover,handoff"
    )
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    cp = kafka_classpath() if args.vs_kafka else None
    if args.vs_kafka and cp is None:
        sys.exit("--vs-kafka: no Kafka classpath (run scripts/fetch_kafka.sh or set KAFKA_CLASSPATH)")
    res: dict[str, Any] = {"load": [os.getloadavg()[0]], "floor": {}, "kraftd": {}, "kafka": {}, "runs": []}
    try:
        res["floor"]["disk"] = floor.disk_probe()
        for _ in range(args.repeat):
            run: dict[str, Any] = {}
            if "latency" not in skip:
                run["floor_latency"] = floor.pipeline(1, args.seconds, RECORD_SIZE)
                run["kraftd_latency"] = kraftd_latency(args.seconds)
                if cp:
                    run["kafka_latency"] = kafka_latency(cp, args.kafka_rate)
            if "throughput" not in skip:
                run["floor_throughput"] = floor.pipeline(64, args.seconds, RECORD_SIZE, batch=200)[
                    "records_per_sec"
                ]
                run["kraftd_throughput"] = round(kraftd_throughput(args.seconds, args.linger_ms))
                if cp:
                    tries = [kafka_throughput(cp, args.seconds, int(r)) for r in args.kafka_rates.split(",")]
                    run["kafka_throughput"] = max(tries, key=lambda t: t["records_per_sec"])
                    run["kafka_throughput_tries"] = tries
            run["load"] = os.getloadavg()[0]
            res["runs"].append(run)
        if "failover" not in skip:
            res["kraftd"]["failover"] = kraftd_failover(args.kills, signal.SIGKILL)
            if cp:
                res["kafka"]["failover_ms"] = kafka_failover(cp, args.kills, signal.SIGKILL, args.kafka_rate)
        if "handoff" not in skip:
            res["kraftd"]["handoff"] = kraftd_failover(args.handoffs, signal.SIGTERM)
            if cp:
                res["kafka"]["handoff_ms"] = kafka_failover(
                    cp, args.handoffs, signal.SIGTERM, args.kafka_rate
                )
        res["load"].append(os.getloadavg()[0])
    finally:
        for root in ROOTS:
            shutil.rmtree(root, ignore_errors=True)
    res["ratios"] = ratios(res)
    if args.json:
        print(json.dumps(res))
    else:
        report(res)


def ratios(res: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for run in res["runs"]:
        r: dict[str, Any] = {}
        k, f, j = run.get("kraftd_latency", {}), run.get("floor_latency", {}), run.get("kafka_latency", {})
        for p in ("p50", "p99", "p999"):
            r[f"latency_{p}_vs_floor"] = ratio(k.get(f"{p}_ms"), f.get(f"{p}_ms"))
        for p in ("p75", "p99", "p999"):
            r[f"latency_{p}_vs_kafka"] = ratio(k.get(f"{p}_ms"), j.get(f"{p}_ms"))
        r["throughput_vs_floor"] = ratio(run.get("kraftd_throughput"), run.get("floor_throughput"))
        r["throughput_vs_kafka"] = ratio(
            run.get("kraftd_throughput"), run.get("kafka_throughput", {}).get("records_per_sec")
        )
        out.append(r)
    return out


def report(res: dict[str, Any]) -> None:
    d = res["floor"]["disk"]
    print(f"load average at start/end: {res['load']}")
    print(f"disk: append 4 KiB + fdatasync p50 {d['p50_ms']} ms p99 {d['p99_ms']} ms")
    for i, (run, r) in enumerate(zip(res["runs"], res["ratios"], strict=True)):
        print(f"--- run {i + 1} (load {run['load']:.2f})")
        for name in ("floor_latency", "kraftd_latency", "kafka_latency"):
            if name in run:
                v = run[name]
                cols = "  ".join(
                    f"{p} {v[p + '_ms']} ms" for p in ("p50", "p75", "p99", "p999") if p + "_ms" in v
                )
                print(f"commit latency, 1 in flight, linger 0, {name.split('_')[0]:7s}: {cols}")
        for name in ("floor_throughput", "kraftd_throughput", "kafka_throughput"):
            if name in run:
                v = run[name]
                print(
                    f"committed records/s batched, {name.split('_')[0]:7s}: {v if isinstance(v, int) else v}"
                )
        print("ratios (kraftd / peer; < 1 means kraftd is lower):", json.dumps(r))
    for who in ("kraftd", "kafka"):
        for key, v in res[who].items():
            if isinstance(v, dict):
                for sub, xs in v.items():
                    print(f"{who} {key} {sub}: {spread(xs)}  all: {xs}")
            else:
                print(f"{who} {key}: {spread(v)}  all: {v}")


if __name__ == "__main__":
    main()
