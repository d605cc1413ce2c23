"""Where a linearizable read's time goes (issue 25): one read at a time at a follower, split by hop.

Two 3-process quorums on loopback (``linearizable`` and ``stale``), both started with ``KRAFTD_STAGE_TRACE``
(kwire.stagetrace), as is this client. ``--samples`` reads one at a time (closed loop) at a follower of each,
alternated in 10 slices like bench/reads.py's latency phase. Each read is then cut at the first stage marks of
each process inside its window (CLOCK_MONOTONIC, one clock for every process):

- linearizable: ``c->F`` (client write to the follower's read), ``F ask`` (its parse, barrier, ReadsDue step and
  ReadOffset write), ``F->L``, ``L answer`` (parse and the answer between steps), ``L->F``, ``F answer`` (the
  answer's decode, the ResponseReceived step, the DescribeConfigs answer), ``F->c``, ``c decode``;
- stale: ``c->F``, ``F answer``, ``F->c``, ``c decode``.

A ``->`` segment holds the socket write after the mark, the loopback delivery and the reader's wake-up. Per stage
p50 / p90 / p99 in us and its mean over the slowest 1% of reads; the slowest 1% are listed with the garbage
collections that started inside them. ``schedstat`` sums ``/proc/<pid>/task/*/schedstat`` of the three servers
over each mode's slices: CPU and run-queue wait (scheduled but not running) per read in us, and time slices per
read (about one per wake-up). The marks cost CPU: traced reads are ~5-10% slower than bench/reads.py's.

Usage: .venv/bin/python bench/read_stages.py [--samples K] [--out DIR] [--base-port P]
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODES = ("linearizable", "stale")
PLANS = {  # (process, first mark after the previous cut, stage ending at that mark)
    "linearizable": [
        ("F", "srv.read", "c->F"),
        ("F", "cli.write.650", "F ask"),
        ("L", "srv.read", "F->L"),
        ("L", "srv.write", "L answer"),
        ("F", "cli.read", "L->F"),
        ("F", "srv.write", "F answer"),
        ("client", "cli.read", "F->c"),
    ],
    "stale": [("F", "srv.read", "c->F"), ("F", "srv.write", "F answer"), ("client", "cli.read", "F->c")],
}


def schedstat(pid: int) -> list[int]:
    """CPU ns, run-queue wait ns, time slices of every thread of ``pid``."""
    tot = [0, 0, 0]
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{t}/schedstat").read_text().split()
        except OSError:
            continue
        for i in range(3):
            tot[i] += int(fields[i])
    return tot


def measure(samples: int, base_port: int | None, trace: Path) -> dict[str, Any]:
    """Run both quorums and the reads (this process must have imported kwire with the trace on)."""
    import asyncio
    import shutil

    from bench.reads import _seed
    from bench.reads_load import DESCRIBE
    from kwire import stagetrace
    from kwire.client import KafkaClient
    from tools.local_quorum import LocalQuorum, free_ports

    async def reads(port: int, n: int, windows: list[tuple[int, int]]) -> None:
        c = KafkaClient("127.0.0.1", port, client_id="bench-latency")
        await c.connect()
        for _ in range(n):
            a = time.monotonic_ns()
            await c.send(DESCRIBE)
            windows.append((a, time.monotonic_ns()))
        await c.close()

    roots = [Path(tempfile.mkdtemp(prefix="kraftd-bench-stages-")) for _ in MODES]
    ports = free_ports(6) if base_port is None else [base_port + i for i in range(6)]
    qs = {
        mode: LocalQuorum(root, 3, ports=ports[3 * k : 3 * k + 3], extra={"kraftd.read.consistency": mode})
        for k, (mode, root) in enumerate(zip(MODES, roots, strict=True))
    }
    run: dict[str, Any] = {
        "windows": {m: [] for m in MODES},
        "schedstat": {},
        "roles": {os.getpid(): "client"},
    }
    try:
        followers = {}
        for q in qs.values():
            q.start_all()
        for mode, q in qs.items():
            leader = q.wait_leader(30).leader_id
            asyncio.run(_seed(q.ports[leader - 1]))
            followers[mode] = f = next(i for i in q.node_ids() if i != leader)
            for i, p in q.procs.items():
                run["roles"][p.pid] = f"{mode}.{'L' if i == leader else 'F' if i == f else 'O'}"
        sched = {m: [0, 0, 0] for m in MODES}
        for _ in range(10):
            for mode, q in qs.items():
                pids = [p.pid for p in q.procs.values()]
                before = [schedstat(p) for p in pids]
                asyncio.run(reads(q.ports[followers[mode] - 1], max(1, samples // 10), run["windows"][mode]))
                for b, a in zip(before, [schedstat(p) for p in pids], strict=True):
                    sched[mode] = [s + y - x for s, x, y in zip(sched[mode], b, a, strict=True)]
        for mode in MODES:
            n = len(run["windows"][mode])
            cpu, wait, slices = sched[mode]
            run["schedstat"][mode] = {
                "servers_cpu_us_per_read": round(cpu / n / 1e3, 1),
                "servers_runq_wait_us_per_read": round(wait / n / 1e3, 1),
                "servers_slices_per_read": round(slices / n, 2),
            }
    finally:
        for q in qs.values():
            q.stop_all()
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
        stagetrace.dump()
    return run


def load(trace: Path, roles: dict[int, str]) -> dict[str, tuple[list[int], list[str]]]:
    marks = {}
    for f in trace.glob("*.trace"):
        role = roles.get(int(f.stem))
        if role is not None:
            rows = sorted((int(a), b) for a, b in (ln.split(" ", 1) for ln in f.read_text().splitlines()))
            marks[role] = ([r[0] for r in rows], [r[1] for r in rows])
    return marks


def _first(marks: tuple[list[int], list[str]], stage: str, after: int, before: int) -> int | None:
    ts, names = marks
    i = bisect.bisect_left(ts, after)
    while i < len(ts) and ts[i] <= before:
        if names[i] == stage:
            return ts[i]
        i += 1
    return None


def _gcs(marks: dict[str, tuple[list[int], list[str]]], after: int, before: int) -> list[str]:
    out = []
    for role, (ts, names) in marks.items():
        i = bisect.bisect_left(ts, after)
        while i < len(ts) and ts[i] <= before:
            if names[i].startswith("gc.start"):
                out.append(f"{role}:{names[i]}")
            i += 1
    return out


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def split(run: dict[str, Any], marks: dict[str, tuple[list[int], list[str]]]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for mode, plan in PLANS.items():
        rows = []
        for a, b in run["windows"][mode]:
            cut, seg = a, []
            for who, stage, _ in plan:
                at = _first(marks["client" if who == "client" else f"{mode}.{who}"], stage, cut, b)
                if at is None:
                    break
                seg.append((at - cut) / 1e3)
                cut = at
            else:
                seg.append((b - cut) / 1e3)
                rows.append(((b - a) / 1e3, seg, _gcs(marks, a, b)))
        rows.sort(key=lambda r: r[0])
        tail = rows[int(0.99 * len(rows)) - 1 :]
        totals = [r[0] for r in rows]
        rep: dict[str, Any] = {
            "reads": len(rows),
            "total_p50_p99_us": [round(_pct(totals, p)) for p in (0.5, 0.99)],
        }
        for k, name in enumerate([n for _, _, n in plan] + ["c decode"]):
            xs = [r[1][k] for r in rows]
            rep[name] = [round(_pct(xs, p), 1) for p in (0.5, 0.9, 0.99)]
            rep[name].append(round(statistics.mean(r[1][k] for r in tail), 1))
        rep["slowest"] = [[round(t), [round(s) for s in seg], gcs] for t, seg, gcs in tail]
        rep.update(run["schedstat"][mode])
        report[mode] = rep
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=2000, help="reads per consistency")
    ap.add_argument("--out", type=Path, default=None, help="keep the traces here (default: a temp dir)")
    ap.add_argument("--base-port", type=int, default=None, help="6 ports from here (default: free ones)")
    ap.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="kraftd-read-stages-"))
    trace = out / "trace"
    trace.mkdir(parents=True, exist_ok=True)
    os.environ["KRAFTD_STAGE_TRACE"] = str(trace)  # before kwire is imported: stagetrace reads it once
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    run = measure(args.samples, args.base_port, trace)
    report = split(run, load(trace, run["roles"]))
    (out / "report.json").write_text(json.dumps(report))
    if args.json:
        print(json.dumps(report))
        return
    print("stage: p50 / p90 / p99 / mean of the slowest 1% (us)")
    for mode, rep in report.items():
        print(f"{mode}: {rep['reads']} reads, p50 / p99 {rep['total_p50_p99_us']} us")
        for key, value in rep.items():
            if key not in ("reads", "total_p50_p99_us", "slowest"):
                print(f"  {key:32} {value}")
        for row in rep["slowest"]:
            print(f"  slow {row}")


if __name__ == "__main__":
    main()
