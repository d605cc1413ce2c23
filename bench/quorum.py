"""Benchmark a real 3-process kraftd quorum on loopback (fsync on, 100-byte records).

Measures, each in a fresh quorum:
1. committed records/s with batching (many appends in flight, linger 25 ms);
2. p50/p99 commit latency with one append in flight, at linger 0 and at linger 25 ms;
3. failover: kill -9 of the leader to the first commit by the new leader, median and max of N rounds.

Targets (goals, not gates): >= 100k records/s batched; p99 <= 2 ms at linger 0 with one in flight;
failover <= fetch timeout (2000 ms) + 250 ms.

Usage: .venv/bin/python bench/quorum.py [--json] [--seconds S] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kraftd.shell.loadgen import parse_ack_line  # noqa: E402
from tools.local_quorum import LocalQuorum  # noqa: E402

RECORD_SIZE = 100
ROOTS: list[Path] = []


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


def quorum(in_flight: int, linger_ms: int, batch: int = 1) -> LocalQuorum:
    root = Path(tempfile.mkdtemp(prefix="kraftd-bench-"))
    ROOTS.append(root)
    extra = {"controller.quorum.append.linger.ms": str(linger_ms)}
    q = LocalQuorum(root, extra=extra, load=(in_flight, RECORD_SIZE, batch))
    q.start_all()
    q.wait_leader(timeout=30)
    return q


def throughput(seconds: float) -> float:
    q = quorum(64, 25, batch=200)
    try:
        time.sleep(1.0)  # warm-up
        t0 = int(time.time() * 1000)
        time.sleep(seconds)
        t1 = int(time.time() * 1000)
        n = sum(count for _, ms, _, count in read_acks(q) if t0 <= ms < t1)
        return n / ((t1 - t0) / 1000)
    finally:
        q.stop_all()


def latency(seconds: float, linger_ms: int) -> tuple[float, float]:
    q = quorum(1, linger_ms)
    try:
        time.sleep(0.5)
        t0 = int(time.time() * 1000)
        time.sleep(seconds)
        lat = sorted(us for _, ms, us, _ in read_acks(q) if ms >= t0)
        if not lat:
            return float("nan"), float("nan")
        return lat[len(lat) // 2] / 1000, lat[min(len(lat) - 1, int(len(lat) * 0.99))] / 1000
    finally:
        q.stop_all()


def failover(rounds: int) -> list[float]:
    q = quorum(1, 0)
    times: list[float] = []
    try:
        for _ in range(rounds):
            info = q.wait_leader(timeout=30)
            time.sleep(0.5)
            killed_at = int(time.time() * 1000)
            q.kill(info.leader_id, signal.SIGKILL)
            deadline = time.monotonic() + 30
            first = None
            while first is None and time.monotonic() < deadline:
                later = [ms for node, ms, _, _ in read_acks(q) if node != info.leader_id and ms > killed_at]
                first = min(later) if later else None
                time.sleep(0.02)
            if first is not None:
                times.append(first - killed_at)
            q.start(info.leader_id)
            time.sleep(1.0)
    finally:
        q.stop_all()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one machine-readable line")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    rps = throughput(args.seconds)
    p50_0, p99_0 = latency(args.seconds, 0)
    p50_25, p99_25 = latency(args.seconds, 25)
    fo = failover(args.rounds)
    for root in ROOTS:
        shutil.rmtree(root, ignore_errors=True)
    result = {
        "records_per_sec_batched": round(rps),
        "p50_ms_linger0": round(p50_0, 3),
        "p99_ms_linger0": round(p99_0, 3),
        "p50_ms_linger25": round(p50_25, 3),
        "p99_ms_linger25": round(p99_25, 3),
        "failover_ms_median": statistics.median(fo) if fo else None,
        "failover_ms_max": max(fo) if fo else None,
        "failover_rounds": len(fo),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"committed records/s (64 appends x 200 records in flight, linger 25 ms): {result['records_per_sec_batched']}"
        )
        print(f"commit latency, 1 in flight, linger 0:  p50 {p50_0:.2f} ms  p99 {p99_0:.2f} ms")
        print(f"commit latency, 1 in flight, linger 25: p50 {p50_25:.2f} ms  p99 {p99_25:.2f} ms")
        print(
            f"failover (kill -9 -> first commit): median {result['failover_ms_median']} ms, max {result['failover_ms_max']} ms over {len(fo)}"
        )


if __name__ == "__main__":
    main()
