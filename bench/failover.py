"""Failover at scale (issue 22): a 3-controller kraftd quorum holding N partitions, its loop's longest stalls and
its failover time.

Usage: .venv/bin/python bench/failover.py [--partitions 10000,100000,1000000] [--kills 2] [--json]

For each N, a fresh quorum (``metadata.log.max.record.bytes.between.snapshots`` 4 MiB, so snapshots are written
while the image grows; everything else default: fetch timeout 2 s, election timeout 1 s) and 5 emulated brokers
heartbeating every 0.5 s (kraftd.testing.heartbeaters), then these phases, each with the longest event loop stall
any node logged during it (``event loop stalled for N ms``, kraftd.shell.observe.looplag: only stalls above 100 ms
are logged, so "<100" means none was):
1. ``create``: N partitions (topics of 100, RF 3) created with CreateTopics, 50 topics (5,000 partitions) a request;
2. ``kill``: ``--kills`` times, kill -9 of the leader: elections, seconds to the new stable leader (DescribeQuorum
   twice a second on the survivors), seconds until every broker's heartbeat was answered again, the new leader's
   longest stall; then the killed node restarts (``restart``: its stall while loading the image) and catches up;
3. ``fence``: one broker stops heartbeating; the leader fences it after the session timeout (9 s), moving the
   ~N/5 partitions it leads.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kraftd.testing.failover import create, kill_leader  # noqa: E402
from kraftd.testing.heartbeaters import Brokers  # noqa: E402
from tools.local_quorum import CLUSTER_ID  # noqa: E402
from tools.local_quorum import LocalQuorum as Cluster  # noqa: E402

STALL = re.compile(r"^\[([0-9-]+ [0-9:,]+)\] WARNING node \d+: event loop stalled for (\d+) ms")


class Stalls:
    """The longest stall each node logged since the last mark (byte offsets into the node logs)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.marks = {n: 0 for n in cluster.node_ids()}

    def since_mark(self) -> int | str:
        worst = 0
        for n in self.cluster.node_ids():
            path = self.cluster.log_file(n)
            data = path.read_bytes() if path.exists() else b""
            for line in data[self.marks[n] :].decode(errors="replace").splitlines():
                if m := STALL.match(line):
                    worst = max(worst, int(m.group(2)))
            self.marks[n] = len(data)
        return worst if worst else "<100"


async def run(n: int, kills: int, root: Path) -> dict[str, Any]:
    extra = {"metadata.log.max.record.bytes.between.snapshots": str(4 << 20)}
    cluster = Cluster(root, extra=extra)
    cluster.start_all()
    brokers = Brokers(cluster.ports, CLUSTER_ID, 5)
    out: dict[str, Any] = {"partitions": n}
    try:
        await asyncio.to_thread(cluster.wait_leader, 30)
        brokers.start()
        await brokers.wait_unfenced(60)
        stalls = Stalls(cluster)
        stalls.since_mark()
        out["create_s"] = round(await create(cluster, n, 50), 1)
        await asyncio.sleep(5)
        out["create_stall_ms"] = stalls.since_mark()
        out["kills"] = []
        for _ in range(kills):
            kill = await kill_leader(cluster, brokers, 15)
            summary = kill.summary()
            summary["stall_ms"] = stalls.since_mark()
            t0 = time.monotonic()
            cluster.start(kill.killed)
            await asyncio.sleep(10 + n / 20_000)  # the restarted node loads its snapshot and log, catches up
            summary["restart_stall_ms"] = stalls.since_mark()
            summary["restart_wait_s"] = round(time.monotonic() - t0, 1)
            out["kills"].append(summary)
        victim = brokers.brokers[0]
        brokers.pause(victim.broker_id)
        await asyncio.sleep(15)  # session timeout 9 s, then the fencing writes
        out["fence_stall_ms"] = stalls.since_mark()
        out["fence_others_fenced"] = sum(b.fenced_again for b in brokers.brokers[1:])
    finally:
        await brokers.stop()
        cluster.stop_all()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", default="10000,100000,1000000")
    ap.add_argument("--kills", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    for n in (int(x) for x in args.partitions.split(",")):
        work = Path(tempfile.mkdtemp(prefix="kraftd-failover-bench-"))
        try:
            res = asyncio.run(run(n, args.kills, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(json.dumps({"bench": "failover", **res}) if args.json else res, flush=True)


if __name__ == "__main__":
    main()
