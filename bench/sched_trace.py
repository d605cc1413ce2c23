"""A scheduler trace of one bench/reads.py throughput phase (issue 25): is a core idle while a server waits?

Contracts:
1. The run is bench/reads.py's: one linearizable 3-process quorum on loopback, the same pool of clients and the
   same phase (bench.reads_load contract 2), aimed at the leader alone or spread over the three controllers. For
   ``--trace-seconds`` inside the phase's window, ``perf record -a`` records the scheduler's tracepoints
   (sched_switch, sched_waking, sched_wakeup, sched_migrate_task), the one trace that works on this kernel
   (issue 25, session 17: ``perf sched record`` gave no wake-ups, and CONFIG_SCHEDSTATS is off, so
   /proc/<pid>/sched has no wake-up counts). Needs perf and the right to trace the whole system.
1a. ``--phase latency`` traces bench/reads.py's latency samples instead: one linearizable read at a time at a
   follower, from a thread of this process (the "client" of the analysis); ``read_ms_p50_p99`` over all of them;
   ``--consistency stale`` runs the quorum with stale reads, for the same figures without a barrier.
2. :func:`analyze` is a pure function of ``perf script`` lines and the run's pids (servers leader first, clients):
   per CPU the idle seconds per second, and the idle seconds while one of the run's processes was runnable and
   waiting on the other CPU ("idle beside a waiter"); those idle episodes per second, their durations, whose
   sleep began each (S0 the leader, S1-S2 the followers, C a client) and how each ended (a waiter pulled to the
   idle CPU, or a task woken onto it); the run's wake-ups per second by (woken, waker) kind, placed on the
   waker's CPU or not, and "stacked": put on a busy CPU while another CPU was idle. A task is tracked as waiting
   from its wake-up (or its preemption) until it is switched in; a wait older than 100 ms is taken as a lost
   event and ignored.
   ``wakeup_to_run_us_p50_p90_p99_n``: per process, from its wake-up to its switch-in (only the switch-ins traced,
   see 2a: a wake-up onto an idle CPU 1 is missing from it).
2a. On this VM the switch out of CPU 1's idle task is never traced (perf and tracefs alike; its wake-ups are), so
   an idle period also ends at the first wake-up aimed at that CPU, a waiter migrated to it, or any event of
   another task on it, whichever is first.
3. Per process, from /proc/<pid>/sched and schedstat at the trace's two ends: migrations, voluntary and
   involuntary switches and run-queue wait per second (these need no CONFIG_SCHEDSTATS).

Usage: .venv/bin/python bench/sched_trace.py [--phase spread|alone|latency] [--seconds S] [--trace-seconds T]
       [--in-flight N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.reads import _latencies, _seed  # noqa: E402
from bench.reads_load import DESCRIBE, phase, ready  # noqa: E402
from tools.local_quorum import LocalQuorum  # noqa: E402

_LINE = re.compile(r"^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s*(.*)$")
_FIELD = re.compile(r"(\w+)=(\S+)")
LOST = 0.1  # contract 2: a wait older than this (seconds) is a lost event
_SCHED = ("se.nr_migrations", "nr_voluntary_switches", "nr_involuntary_switches")


def _kind(names: dict[int, str], pid: int) -> str:
    """S (a server), C (a client), idle or other."""
    return names[pid][:1] if pid in names else ("idle" if pid == 0 else "other")


class _Cpus:
    """Contract 2's state: who runs and who waits on each CPU, and each idle CPU's period."""

    def __init__(self, names: dict[int, str]) -> None:
        self.names = names
        self.cur: dict[int, int] = {}
        self.waiting: dict[int, dict[int, float]] = defaultdict(dict)  # cpu -> {pid: waiting since}
        self.on: dict[int, int] = {}  # pid -> the CPU it waits on
        self.idle_since: dict[int, float] = {}
        self.slept: dict[int, int] = {}  # idle CPU -> the task whose sleep began the period
        self.beside_since: dict[int, float] = {}  # idle CPU -> since when one of ours waits elsewhere
        self.period_beside: dict[int, float] = {}  # idle CPU -> beside-a-waiter seconds in this period
        self.idle = Counter[int]()
        self.beside = 0.0
        self.episodes: list[float] = []
        self.ended = Counter[str]()
        self.began = Counter[str]()
        self.woke: dict[int, float] = {}  # ours, woken and not yet switched in
        self.delays: dict[str, list[float]] = defaultdict(list)  # by name: wake-up -> switched in, seconds

    def wait(self, pid: int, cpu: int, ts: float) -> None:
        self.unwait(pid)
        self.waiting[cpu][pid], self.on[pid] = ts, cpu

    def unwait(self, pid: int) -> None:
        if pid in self.on:
            self.waiting[self.on.pop(pid)].pop(pid, None)

    def start_idle(self, cpu: int, ts: float, prev: int) -> None:
        self.idle_since[cpu], self.period_beside[cpu], self.slept[cpu] = ts, 0.0, prev
        self.cur[cpu] = 0

    def end_idle(self, cpu: int, ts: float, pid: int, how: str) -> None:
        self._close(cpu, ts)
        self.idle[cpu] += ts - self.idle_since.pop(cpu)
        if (b := self.period_beside.pop(cpu)) > 0:
            self.episodes.append(b)
            self.ended[f"{how} {_kind(self.names, pid)}"] += 1
            self.began[self.names.get(self.slept[cpu], "other")] += 1
        self.cur[cpu] = pid

    def _close(self, cpu: int, ts: float) -> None:
        if cpu in self.beside_since:
            d = ts - self.beside_since.pop(cpu)
            self.beside += d
            self.period_beside[cpu] += d

    def recheck(self, ts: float) -> None:
        """After each event: each idle CPU is beside a waiter while one of ours waits on another CPU."""
        for cpu in self.idle_since:
            now = any(
                p in self.names and ts - since < LOST
                for c, q in self.waiting.items()
                if c != cpu
                for p, since in q.items()
            )
            if now and cpu not in self.beside_since:
                self.beside_since[cpu] = ts
            elif not now:
                self._close(cpu, ts)


def _pcts(xs: list[float]) -> list[float]:
    xs = sorted(xs)
    return [round(xs[min(len(xs) - 1, int(len(xs) * q))] * 1e6) for q in (0.5, 0.9, 0.99)] + [len(xs)]


def analyze(lines: list[str], servers: list[int], clients: list[int]) -> dict[str, Any]:
    """Contract 2."""
    names = {p: f"S{i}" for i, p in enumerate(servers)} | {p: "C" for p in clients}
    st = _Cpus(names)
    waker: dict[int, tuple[int, int]] = {}
    wakes = Counter[str]()
    first = last = None
    cpus: set[int] = set()
    for line in lines:
        m = _LINE.match(line)
        if not m:
            continue
        _, pid_s, cpu_s, ts_s, ev, rest = m.groups()
        pid, cpu, ts = int(pid_s), int(cpu_s), float(ts_s)
        first = ts if first is None else first
        last = ts
        cpus.add(cpu)
        f = dict(_FIELD.findall(rest))
        if pid and cpu in st.idle_since:  # contract 2a: a task runs there, so the CPU's idle ended unseen
            st.end_idle(cpu, ts, pid, "woken")
        if ev == "sched_switch":
            prev, nxt = int(f["prev_pid"]), int(f["next_pid"])
            if prev and f["prev_state"].startswith("R"):
                st.wait(prev, cpu, ts)
            st.unwait(nxt)
            if nxt in st.woke:
                st.delays[names[nxt]].append(ts - st.woke.pop(nxt))
            if nxt == 0:
                st.start_idle(cpu, ts, prev)
            elif cpu in st.idle_since:
                st.end_idle(cpu, ts, nxt, "woken")
            st.cur[cpu] = nxt
        elif ev == "sched_waking":
            waker[int(f["pid"])] = (pid, cpu)
        elif ev == "sched_wakeup":
            p, target = int(f["pid"]), int(f["target_cpu"])
            if p in names:
                by, by_cpu = waker.pop(p, (-1, -1))
                wakes[f"{_kind(names, p)}<-{_kind(names, by) if by >= 0 else 'irq'}"] += 1
                wakes["on the waker's CPU" if by_cpu == target else "elsewhere"] += 1
                idle_elsewhere = any(st.cur.get(c) == 0 for c in st.cur if c != target)
                if st.cur.get(target, 0) != 0 and idle_elsewhere:
                    wakes["stacked (busy target, another CPU idle)"] += 1
            st.wait(p, target, ts)
            if p in names:
                st.woke[p] = ts
            if target in st.idle_since:
                st.end_idle(target, ts, p, "woken")
        elif ev == "sched_migrate_task":
            p, dst = int(f["pid"]), int(f["dest_cpu"])
            if p in st.on:
                st.wait(p, dst, st.waiting[st.on[p]][p])
                if dst in st.idle_since:
                    st.end_idle(dst, ts, p, "pulled")
        st.recheck(ts)
    span = (last - first) if first is not None and last is not None and last > first else 1.0
    episodes = sorted(st.episodes)

    def pct(q: float) -> float:
        return round(episodes[min(len(episodes) - 1, int(len(episodes) * q))] * 1e6) if episodes else 0.0

    return {
        "span_s": round(span, 3),
        "idle_cores": round(sum(st.idle.values()) / span, 3),
        "idle_cores_each_cpu": [round(st.idle[c] / span, 3) for c in sorted(cpus)],
        "idle_beside_a_waiter_cores": round(st.beside / span, 3),
        "idle_beside_a_waiter_episodes_per_s": round(len(episodes) / span),
        "idle_beside_a_waiter_us_p50_p90": [pct(0.5), pct(0.9)],
        "idle_beside_a_waiter_ended_by_per_s": {k: round(v / span) for k, v in st.ended.most_common()},
        "idle_beside_a_waiter_after_the_sleep_of_per_s": {
            k: round(v / span) for k, v in st.began.most_common()
        },
        "wakeups_per_s": {k: round(v / span) for k, v in wakes.most_common()},
        "wakeup_to_run_us_p50_p90_p99_n": {k: _pcts(v) for k, v in sorted(st.delays.items())},
    }


def _sched(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/sched").read_text().splitlines():
        k, _, v = line.partition(":")
        if k.strip() in _SCHED:
            out[k.strip()] = float(v)
    out["wait_s"] = int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    return out


_EVENTS = ("sched:sched_switch", "sched:sched_waking", "sched:sched_wakeup", "sched:sched_migrate_task")


def _record(data: Path, seconds: float) -> float:
    """Contract 1: ``perf record -a`` of the scheduler's tracepoints for ``seconds``; the seconds it took."""
    cmd = ["perf", "record", "-q", "-a", "-o", str(data)]
    for e in _EVENTS:
        cmd += ["-e", e]
    t0 = time.monotonic()
    subprocess.run([*cmd, "--", "sleep", str(seconds)], check=True, capture_output=True)
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phase", choices=("spread", "alone", "latency"), default="spread")
    ap.add_argument("--seconds", type=float, default=5.0, help="the phase's window")
    ap.add_argument("--trace-seconds", type=float, default=2.0, help="traced inside the window, after 1 s")
    ap.add_argument("--consistency", choices=("linearizable", "stale"), default="linearizable")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--in-flight", type=int, default=256)
    ap.add_argument("--keep", type=Path, help="keep perf.data and the perf script text here")
    ap.add_argument(
        "--json", action="store_true", help="one JSON line (the only output; as the other benchmarks)"
    )
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kraftd-sched-trace-"))
    data = work / "perf.data"
    q = LocalQuorum(work, 3, extra={"kraftd.read.consistency": args.consistency})
    res: dict[str, Any] = {"phase": args.phase, "consistency": args.consistency}
    try:
        q.start_all()
        lead = q.wait_leader(30).leader_id
        asyncio.run(_seed(q.ports[lead - 1]))
        servers = [q.procs[i].pid for i in sorted(q.procs, key=lambda i: i != lead)]
        if args.phase == "latency":
            follower = next(i for i in q.node_ids() if i != lead)
            clients, span, before, after = _latency(q.ports[follower - 1], servers, data, args, res)
        else:
            clients, span, before, after = _throughput(q, lead, servers, data, args, res)
        text = subprocess.run(
            ["perf", "script", "-i", str(data)], check=True, capture_output=True, text=True
        ).stdout
        res.update(analyze(text.splitlines(), servers, clients))
        pids = servers + clients
        res["per_process_per_s"] = {
            (f"S{servers.index(p)}" if p in servers else f"C{clients.index(p)}"): {
                k: round((after[p][k] - before[p][k]) / span, 2) for k in after[p]
            }
            for p in pids
        }
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(data, args.keep / "perf.data")
            (args.keep / "perf.txt").write_text(text)
    finally:
        q.stop_all()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(res))


Samples = tuple[list[int], float, dict[int, dict[str, float]], dict[int, dict[str, float]]]


def _throughput(
    q: LocalQuorum, lead: int, servers: list[int], data: Path, args: Any, res: dict[str, Any]
) -> Samples:
    """Contract 1: a throughput phase of bench/reads.py, traced inside its window."""
    targets = list(q.ports) if args.phase == "spread" else [q.ports[lead - 1]]
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        pool.map(ready, range(args.workers))
        clients = sorted(p.pid for p in multiprocessing.active_children())
        phase(pool, list(q.ports), args.workers, args.in_flight, 1.0, servers)  # warm-up, unmeasured
        out: dict[str, Any] = {}
        run = threading.Thread(
            target=lambda: out.update(
                phase(pool, targets, args.workers, args.in_flight, args.seconds, servers)
            )
        )
        run.start()
        time.sleep(1.3)
        before, span, after = _traced(servers + clients, data, args.trace_seconds)
        run.join()
    res["reads_per_s"] = round(out["reads_per_s"])
    res["phase_idle_cores"] = out["idle_cores"]
    res["phase_each_server_cpu_per_s"] = out["each_server_cpu_per_s"]
    res["phase_others_cores"] = out["others_cores"]
    return clients, span, before, after


def _traced(
    pids: list[int], data: Path, seconds: float
) -> tuple[dict[int, dict[str, float]], float, dict[int, dict[str, float]]]:
    """Each pid's scheduler counters before and after ``seconds`` of trace, and the trace's span."""
    before = {p: _sched(p) for p in pids}
    span = _record(data, seconds)
    return before, span, {p: _sched(p) for p in pids}


def _latency(port: int, servers: list[int], data: Path, args: Any, res: dict[str, Any]) -> Samples:
    """Contract 1a: bench/reads.py's latency samples (one read at a time at a follower), traced."""
    lat: list[float] = []
    tid: list[int] = []
    stop = threading.Event()

    def reads() -> None:
        tid.append(threading.get_native_id())
        while not stop.is_set():  # until the trace ends: stale reads are 3x faster than linearizable ones
            lat.extend(asyncio.run(_latencies(port, 1000, DESCRIBE)))

    run = threading.Thread(target=reads)
    run.start()
    time.sleep(1.0)
    before, span, after = _traced(servers + tid, data, args.trace_seconds)
    stop.set()
    run.join()
    lat.sort()
    res["reads"] = len(lat)
    res["read_ms_p50_p99"] = [round(lat[len(lat) // 2], 3), round(lat[int(len(lat) * 0.99)], 3)]
    return tid, span, before, after


if __name__ == "__main__":
    main()
