"""A broker swarm against three kraftd controllers and, with ``--vs-kafka``, against three Kafka 4.3.1 controllers,
one kind after the other with the same swarm (kraft-swarm, docs/SWARM.md), for each N in ``--brokers`` (issue 24 §2).

For each (kind, N, P):
1. registration: seconds until all N brokers are RUNNING (registered, caught up, unfenced);
2. CreateTopics of P partitions (P/100 topics x 100 partitions, RF 3, 50 topics per request) with the swarm
   running: partitions/s; the leader's RSS before and after;
3. propagation, once every observer fetched what creation wrote: ``--propagation-topics`` one-partition topics
   created one at a time; for each, the delay until each observer has fetched its TopicRecord and seen it
   committed, p50/p99 over every (topic, broker): from the commit on the leader (issue 24 §2's definition,
   ``from_commit_p50``/``from_commit_p99``: the first read showing the commit, the CreateTopics answer or a
   Fetch answer's high watermark, tools.swarm.swarm contract 3a) and from sending CreateTopics (``p50``/``p99``,
   which include the commit itself); the mean over topics of send-to-commit and of first-to-last observer;
4. steady: ``--steady`` seconds: heartbeat round trip p50/p99/max, errors, mistaken fences; the leader's CPU
   seconds per 1,000 heartbeats and CPU share; the swarm's own CPU share;
5. memory: the leader's RSS (/proc VmRSS) and, for Kafka, its heap in use (jcmd GC.heap_info);
6. controlled shutdown of the broker leading the most partitions: until it was told to shut down and leads none;
   also from its first WantShutDown heartbeat, and the heartbeats it took (bench/scale_phases.py);
7. broker failure: the swarm stops the next such broker (kill -9 of a broker): until the log fences it and it leads
   no partition (the controllers' broker.session.timeout.ms is 9 s); also from the session's start (its last
   answered heartbeat), and the fence record's delay after the session's end (bench/scale_phases.py);
8. controller failover: kill -9 of the leader: a new leader known to the brokers, every broker's heartbeat answered
   again, the epochs it took, mistaken fences; ``--kills K`` kills K leaders in a row (each killed controller
   restarted and caught up before the next kill) and reports the median and max of the times; each kill comes
   ``scale_phases.kill_delay_s`` (1-1.5 s, the same for both kinds) after the phase before it; also when the brokers'
   observers knew the new leader (median and last).
For kraftd, each step also records the longest event loop stall any controller logged during it
(``event loop stalled for N ms``, kraftd.shell.observe.looplag: logged above 100 ms, so "<100" means none was),
and the most CPU time the loop's thread used during a logged stall (``loop_stall_cpu_ms``: on a loaded machine a
stall far longer than its CPU time was other processes, not the loop's work).
Each phase also records the brokers' closed connections by channel and reason (``disconnects``: request timeouts on
``raft-client`` are observers' Fetches the leader held past their timeout; tools.swarm.swarm contract 6), also for
a point that stopped early (phase ``stopped``). Printed: each point's kraftd/Kafka ratios, then each cost's growth
with N and with P, linear or better in P or not (bench/scale_growth.py); one table from several runs' ``--json``
or stderr files: ``bench/scale_table.py a.json b.json``. Cold start and restart are bench/startup.py's.

Usage: .venv/bin/python bench/scale.py [--vs-kafka] [--json] [--brokers 100,300] [--partitions 10000,100000]
       [--steady 60] [--propagation-topics 10] [--kills 1]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_phases import (  # noqa: E402
    catch_up_figures,
    failover_summary,
    failure_figures,
    fence_traces,
    kill_delay_s,
    shutdown_figures,
    swarm_pauses,
)
from scale_table import table  # noqa: E402
from startup import KAFKA_JVM, heap_used_kib, rss_kib  # noqa: E402

from kraftd.testing.swarm import SwarmCluster  # noqa: E402
from tools.heap import unpooled_large_buffers  # noqa: E402
from tools.process_limits import raise_open_files_limit  # noqa: E402
from tools.swarm.lifecycle import STOPPED  # noqa: E402
from tools.swarm.swarm import cpu_seconds, percentile  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
STALL = re.compile(rb"event loop stalled for (\d+) ms(?: \(loop thread CPU (\d+) ms\))?")
STALL_LOGGED_MS = 100  # kraftd.shell.observe.looplag.WARN_MS


class Stalls:
    """The longest event loop stall the kraftd controllers logged since the last :meth:`take` (None for Kafka),
    and (``cpu``) the most CPU time a logged stall's loop thread used: far below the stall, the machine was busy
    elsewhere (kraftd.shell.observe.looplag contract 3)."""

    def __init__(self, c: SwarmCluster) -> None:
        self.c = c
        self.marks: dict[int, int] = {}
        self.cpu: dict[str, int | str] = {}
        self.take()

    def take(self, phase: str = "") -> int | str | None:
        if self.c.kind != "kraftd":
            return None
        worst, cpu = 0, 0
        for node in self.c.q.nodes:
            data = node.log_file.read_bytes() if node.log_file.exists() else b""
            for m in STALL.finditer(data, self.marks.get(node.node_id, 0)):
                worst = max(worst, int(m.group(1)))
                cpu = max(cpu, int(m.group(2) or 0))
            self.marks[node.node_id] = len(data)
        if phase:
            self.cpu[phase] = cpu or f"<{STALL_LOGGED_MS}"
        return worst or f"<{STALL_LOGGED_MS}"


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def wait(what: str, predicate: Callable[[], bool], timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.02)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


def leader_pid(c: SwarmCluster) -> int:
    info = c.quorum(5000)
    assert info is not None and info.leader_id > 0, "no leader"
    proc = c.q.node(info.leader_id).proc
    assert proc is not None
    return proc.pid


def peak_rss_mib(pid: int) -> float:
    """The process's peak RSS so far (/proc VmHWM)."""
    m = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return round(int(m.group(1)) / 1024, 1) if m else -1.0


def memory(c: SwarmCluster) -> dict[str, Any]:
    """The leader's RSS and peak, the highest peak of the live controllers, Kafka's heap in use, the swarm's RSS
    and peak (this process: the swarm runs on a thread of it), issue 24 §1-2."""
    pid = leader_pid(c)
    out: dict[str, Any] = {
        "leader_rss_mib": round(rss_kib(pid) / 1024, 1),
        "leader_peak_mib": peak_rss_mib(pid),
    }
    out["swarm_rss_mib"] = round(rss_kib(os.getpid()) / 1024, 1)
    out["swarm_peak_mib"] = peak_rss_mib(os.getpid())
    out["controllers_peak_mib"] = max(peak_rss_mib(n.proc.pid) for n in c.q.nodes if n.proc and n.alive())
    if c.kind == "kafka":
        used = heap_used_kib(pid)
        out["heap_used_mib"] = round(used / 1024, 1) if used is not None else None
    return out


class Stopped(TimeoutError):
    """SIGTERM (``timeout`` around a quiet run): the point stops, and what it measured so far is printed."""


def on_sigterm(signum: int, frame: Any) -> None:
    raise Stopped("stopped by SIGTERM")


def progress(out: dict[str, Any], phase: str, swarm: Any) -> None:
    """Each phase's end, seconds from the point's start, in ``phases_s`` and on stderr as it happens, and the
    disconnects counted in it."""
    at = round(time.monotonic() - out["started"], 1)
    out.setdefault("phases_s", {})[phase] = at
    disconnects(out, phase, swarm)
    print(
        f"# {out['kind']} N={out['brokers']} P={out['partitions']}: {phase} at {at} s, "
        f"disconnects {out['disconnects'][phase]}",
        file=sys.stderr,
        flush=True,
    )


def disconnects(out: dict[str, Any], phase: str, swarm: Any) -> None:
    """The brokers' connections closed since the previous phase, by ``"channel: reason"`` (issue 24: what a
    broker operator watches; tools.swarm.swarm contract 6)."""
    before: Counter[str] = Counter()
    for counts in out.setdefault("disconnects", {}).values():
        before.update(counts)
    out["disconnects"][phase] = dict(sorted((Counter(swarm.disconnects) - before).items()))


def steps(c: SwarmCluster, n: int, p: int, args: argparse.Namespace, out: dict[str, Any]) -> None:
    swarm = c.swarm
    out["registered_s"] = round(c.run(swarm.wait_running(600), 610), 2)
    progress(out, "registered", swarm)
    out["memory_before"] = memory(c)
    stalls = Stalls(c)
    out["loop_stall_ms"] = stall = {}
    swarm_cpu0 = cpu_seconds()
    result, took = c.create_topics("s", p // 100, 100)
    errors = Counter(e for e in result.values() if e)
    created = p - sum(errors.values()) * 100
    out["create_topics"] = {
        "partitions": p,
        "seconds": round(took, 2),
        "per_s": round(created / took),
        "failed_topics_by_error": dict(errors),
        "swarm_cpu_pct": round((cpu_seconds() - swarm_cpu0) / took * 100, 1),
    }
    total = lambda: sum(len(t.partitions) for t in swarm.replay.image.topics.values())  # noqa: E731
    wait("the replayed image to hold every created partition", lambda: total() >= created, 300)

    # every observer at the log's end: propagation measures a commit's fan-out, not the rest of creation's
    # (and the swarm's replay idle: tools.swarm.replay contract 7 applies in slices)
    def caught_up() -> bool:
        return swarm.replay.idle and all(b.fetch_end >= swarm.replay.next_offset for b in swarm.running())

    wait("every observer to fetch the created partitions", caught_up, 300)
    out["memory_after_create"] = memory(c)
    stall["create_topics"] = stalls.take("create_topics")
    progress(out, "created", swarm)
    out["catch_up"] = catch_up_figures(swarm, out["started"])

    delays: list[float] = []
    from_commit: list[float] = []
    to_commit: list[float] = []
    spreads: list[float] = []
    for i in range(args.propagation_topics):
        w = swarm.watch(f"prop{i}-0")  # before the request: every observer's fetch time is seen
        c.create_topics(f"prop{i}-", 1, 1)
        wait("every observer to fetch the topic", lambda: w.done, 60)  # noqa: B023
        delays += w.delays_ms()
        from_commit += w.from_commit_ms()
        to_commit.append((w.committed - w.started) * 1000)
        first = min(w.reached.values())
        spreads.append(max((t - first) * 1000 for t in w.reached.values()))
    out["propagation_ms"] = {
        "p50": round(percentile(delays, 0.5), 1),
        "p99": round(percentile(delays, 0.99), 1),
        "from_commit_p50": round(percentile(from_commit, 0.5), 1),
        "from_commit_p99": round(percentile(from_commit, 0.99), 1),
        "send_to_commit_mean": round(sum(to_commit) / max(1, len(to_commit)), 1),
        "first_to_last_mean": round(sum(spreads) / max(1, len(spreads)), 1),
    }
    progress(out, "propagation", swarm)

    pid = leader_pid(c)
    cpu0, swarm0, t0 = proc_cpu_s(pid), cpu_seconds(), time.monotonic()
    per_s = []  # the leader's CPU share each second: a transient (a snapshot after creation) shows here
    while time.monotonic() - t0 < args.steady:
        c0 = proc_cpu_s(pid)
        time.sleep(min(1.0, max(0.0, t0 + args.steady - time.monotonic())))
        per_s.append(round((proc_cpu_s(pid) - c0) * 100))
    t1 = time.monotonic()
    cpu = proc_cpu_s(pid) - cpu0
    hb = swarm.heartbeat_stats(t0, t1)
    out["steady"] = {k: round(v, 2) for k, v in hb.items()}
    out["steady"]["mistaken_fences"] = len(swarm.mistaken_fences())
    out["steady"]["leader_cpu_s_per_1000_heartbeats"] = round(cpu / max(1, hb["count"]) * 1000, 3)
    out["steady"]["leader_cpu_pct"] = round(cpu / (t1 - t0) * 100, 1)
    out["steady"]["leader_cpu_pct_by_second"] = per_s
    out["steady"]["swarm_cpu_pct"] = round((cpu_seconds() - swarm0) / (t1 - t0) * 100, 1)
    out["memory_steady"] = memory(c)
    stall["steady"] = stalls.take("steady")
    progress(out, "steady", swarm)

    victim = max(swarm.running(), key=lambda b: swarm.replay.led_by(b.id))
    led = swarm.replay.led_by(victim.id)
    mark, started = len(swarm.heartbeats), time.monotonic()
    swarm.shut_down(victim.id)
    wait(
        "the controlled shutdown",
        lambda: victim.state == STOPPED and swarm.replay.led_by(victim.id) == 0,
        120,
    )
    done = time.monotonic()
    out["controlled_shutdown"] = {"led": led, "seconds": round(done - started, 2)}
    out["controlled_shutdown"] |= shutdown_figures(swarm.heartbeats[mark:], victim.id, started, done)
    stall["controlled_shutdown"] = stalls.take("controlled_shutdown")
    progress(out, "controlled_shutdown", swarm)

    victim = max(swarm.running(), key=lambda b: swarm.replay.led_by(b.id))
    led = swarm.replay.led_by(victim.id)
    started = time.monotonic()
    c.run(swarm.kill(victim.id), 30)
    fences = lambda: [f for f in swarm.fences if f.broker_id == victim.id and f.source == "log"]  # noqa: E731
    wait(
        "the killed broker fenced, its partitions moved",
        lambda: bool(fences()) and swarm.replay.led_by(victim.id) == 0,
        120,
    )
    done = time.monotonic()  # from before the kill, as before (wait() times from its own start)
    out["broker_failure"] = {"led": led, "seconds": round(done - started, 2)}
    session_s = swarm.config.session_timeout_ms / 1000
    out["broker_failure"] |= failure_figures(
        swarm.heartbeats, victim.id, started, done, fences()[0].at, session_s
    )
    stall["broker_failure"] = stalls.take("broker_failure")
    progress(out, "broker_failure", swarm)

    kills: list[dict[str, Any]] = []
    for k in range(args.kills):
        if k:  # the previous kill's controller back and caught up: every kill starts from three voters
            c.restart(kills[-1]["killed"], 600)
        f = c.fail_over(settle=args.settle, wait_before_kill_s=kill_delay_s(k))
        kills.append(
            {
                "killed": f.killed,
                "new_leader_s": round(f.leader_after_s, 2),
                "all_heartbeats_answered_s": round(f.all_answered_s, 2),
                # kill -> the brokers' observers knew the new leader: median, last (issue 24 §3's stages)
                "observers_learned_p50_s": round(f.learned_p50_s, 2),
                "observers_learned_max_s": round(f.learned_max_s, 2),
                "elections": f.new_epoch - f.old_epoch,
                "unanswered": len(f.unanswered),
                "mistaken_fences": f.mistaken_fences,
                # the last-answered broker's (sent after the kill s, round trip s, error)
                "slowest_heartbeats": f.slowest,
            }
        )
    out["controller_failover"] = failover_summary(kills)
    stall["controller_failover"] = stalls.take("controller_failover")
    progress(out, "controller_failover", swarm)
    out["mistaken_fences"] = len(swarm.mistaken_fences())
    out["loop_stall_cpu_ms"] = stalls.cpu


def run_point(kind: str, n: int, p: int, args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix=f"scale-{kind}-{n}-", dir=args.dir))
    out: dict[str, Any] = {"kind": kind, "brokers": n, "partitions": p, "load_before": os.getloadavg()[0]}
    out["started"] = time.monotonic()
    c = SwarmCluster(
        root, kind, n, jvm_opts=KAFKA_JVM if kind == "kafka" else None, log_level=args.kafka_log_level
    )
    try:
        steps(c, n, p, args, out)
    except (TimeoutError, AssertionError) as exc:
        out["error"] = str(exc)[:500]
        disconnects(out, "stopped", c.swarm)
    finally:
        out["mistaken_fence_traces"] = fence_traces(c.swarm, out["started"])
        out["swarm_pauses"] = swarm_pauses(c.swarm, out["started"])
        out["load_after"] = os.getloadavg()[0]
        out["seconds"] = round(time.monotonic() - out.pop("started"), 1)
        try:
            out["memory_at_end"] = memory(c)
        except Exception as exc:  # noqa: BLE001 - no leader at the end: the point says so
            out["memory_at_end"] = {"error": str(exc)[:200]}
        try:  # the swarm may not close in time (a loaded loop): the controllers are stopped anyway
            c.close()
        except TimeoutError as exc:
            out["close_error"] = repr(exc)
        if args.keep_logs:
            out["logs"] = str(keep_logs(root))
        shutil.rmtree(root, ignore_errors=True)
    return out


def keep_logs(root: Path) -> Path:
    """The point's controller logs (the ``*.log`` files at its top level, not the metadata logs' segments), copied
    to ``<root>-logs`` beside it before the point's directory is removed (``--keep-logs``)."""
    dest = root.with_name(root.name + "-logs")
    dest.mkdir(exist_ok=True)
    for f in root.glob("*.log"):
        shutil.copy2(f, dest / f.name)
    return dest


def main() -> None:
    raise_open_files_limit()  # tools.process_limits: the swarm's connections, a thousand brokers'
    unpooled_large_buffers()  # tools.heap: the swarm runs in this process (its 8 MiB answers, as the leader's)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vs-kafka", action="store_true", help="also run Kafka 4.3.1's controllers (same swarm)")
    ap.add_argument("--json", action="store_true", help="print every point as one JSON object")
    ap.add_argument("--brokers", default="100,300", help="comma-separated N values")
    ap.add_argument("--kinds", default=None, help="comma-separated kinds to run (overrides --vs-kafka)")
    ap.add_argument("--partitions", default="100000", help="comma-separated P values")
    ap.add_argument("--steady", type=float, default=60.0, help="seconds of steady heartbeats")
    ap.add_argument("--kills", type=int, default=1, help="controller leader kills (median and max)")
    ap.add_argument("--settle", type=float, default=10.0, help="seconds after the controller kill")
    ap.add_argument("--propagation-topics", type=int, default=10)
    ap.add_argument("--kafka-log-level", default="INFO")
    ap.add_argument("--dir", default=None, help="parent of the temporary directories")
    ap.add_argument("--keep-logs", action="store_true", help="keep each point's controller logs (*-logs)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)
    kinds = ["kraftd", "kafka"] if args.vs_kafka else ["kraftd"]
    if args.kinds:
        kinds = args.kinds.split(",")
    points: list[dict[str, Any]] = []
    ps, ns = (list(map(int, v.split(","))) for v in (args.partitions, args.brokers))
    for kind, n, p in [(k, n, p) for p in ps for n in ns for k in kinds]:
        if points and str(points[-1].get("error", "")).startswith("stopped by SIGTERM"):
            break
        point = run_point(kind, n, p, args)
        print(f"# {kind} N={n} P={p}: {json.dumps(point)}", file=sys.stderr, flush=True)
        points.append(point)
    if args.json:
        print(json.dumps({"points": points}, sort_keys=True))
    else:
        print(table(points))


if __name__ == "__main__":
    main()
