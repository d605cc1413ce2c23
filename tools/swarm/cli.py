"""``kraft-swarm``: N emulated Kafka brokers against a controller quorum (kraftd or Kafka's), docs/SWARM.md.

Contracts:
1. The brokers register, heartbeat and observe the metadata log for ``--duration`` seconds (0: until Ctrl-C),
   after optionally creating ``--topics`` topics of ``--partitions`` partitions through CreateTopics, and
   optionally shutting down (controlled) or killing one broker half-way through.
2. Every ``--report-every`` seconds one line: brokers by state, heartbeats in the interval (p50/p99/max ms,
   errors), mistaken fences so far, the metadata offset replayed, and the swarm's own CPU share of one core.
3. At the end, a summary (``--json``: one JSON object on stdout); exit code 1 when a broker was fenced by
   mistake or the brokers did not all come up, 2 on bad arguments.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import click

from tools.heap import unpooled_large_buffers
from tools.process_limits import raise_open_files_limit
from tools.swarm.lifecycle import SwarmConfig
from tools.swarm.swarm import Swarm, cpu_seconds


def parse_voters(text: str) -> dict[int, tuple[str, int]]:
    """``1@host:port,2@host:port`` (controller.quorum.voters' form)."""
    voters: dict[int, tuple[str, int]] = {}
    for item in text.split(","):
        node, _, address = item.strip().partition("@")
        host, _, port = address.rpartition(":")
        if not node.isdigit() or not host or not port.isdigit():
            raise click.BadParameter(f"{item!r} is not id@host:port", param_hint="--voters")
        voters[int(node)] = (host, int(port))
    return voters


def status_line(swarm: Swarm, since: float, cpu_since: float, wall: float) -> str:
    states: dict[str, int] = {}
    for b in swarm.brokers.values():
        states[b.state] = states.get(b.state, 0) + 1
    hb = swarm.heartbeat_stats(since)
    cpu = (cpu_seconds() - cpu_since) / max(wall, 1e-6) * 100
    return (
        f"brokers {states} | heartbeats {hb['count']} p50 {hb['p50_ms']:.1f} p99 {hb['p99_ms']:.1f} "
        f"max {hb['max_ms']:.1f} ms, errors {hb['errors']} | mistaken fences {len(swarm.mistaken_fences())} | "
        f"replayed offset {swarm.replay.applied_offset - 1} | swarm CPU {cpu:.1f}%"
    )


async def run(opts: dict[str, Any]) -> dict[str, Any]:
    config = SwarmConfig(
        cluster_id=opts["cluster_id"],
        voters=opts["voters"],
        heartbeat_interval_ms=opts["heartbeat_interval_ms"],
    )
    swarm = Swarm(config, opts["brokers"], first_id=opts["first_id"], seed=opts["seed"])
    say = (lambda s: click.echo(s, err=True)) if opts["json"] else click.echo
    started, cpu0 = time.monotonic(), cpu_seconds()
    summary: dict[str, Any] = {"brokers": opts["brokers"]}
    swarm.start()
    try:
        summary["registered_s"] = await swarm.wait_running(opts["start_timeout"])
        say(f"{opts['brokers']} brokers RUNNING after {summary['registered_s']:.2f}s")
        if opts["topics"]:
            t0 = time.monotonic()
            names = [f"{opts['topic_prefix']}{i}" for i in range(opts["topics"])]
            errors = await swarm.create_topics(names, opts["partitions"], opts["rf"], batch=opts["batch"])
            took = time.monotonic() - t0
            failed = {n: e for n, e in errors.items() if e}
            summary["create_topics"] = {
                "partitions": opts["topics"] * opts["partitions"],
                "seconds": took,
                "partitions_per_s": opts["topics"] * opts["partitions"] / took,
                "failed": len(failed),
            }
            say(f"created {len(names) - len(failed)}/{len(names)} topics in {took:.2f}s")
        steady = time.monotonic()
        action_done = False
        last, cpu_last = steady, cpu_seconds()
        while opts["duration"] == 0 or time.monotonic() - steady < opts["duration"]:
            await asyncio.sleep(min(opts["report_every"], 0.5))
            now = time.monotonic()
            if not action_done and now - steady >= opts["duration"] / 2:
                action_done = True
                if opts["shutdown"] is not None:
                    swarm.shut_down(opts["shutdown"])
                if opts["kill"] is not None:
                    await swarm.kill(opts["kill"])
            if now - last >= opts["report_every"]:
                say(status_line(swarm, last, cpu_last, now - last))
                last, cpu_last = now, cpu_seconds()
        summary["heartbeats"] = swarm.heartbeat_stats(steady)
        if opts["shutdown"] is not None:
            b = swarm.brokers[opts["shutdown"]]
            summary["controlled_shutdown_s"] = b.stopped_at - b.shutdown_at if b.stopped_at > 0 else None
    except TimeoutError as exc:
        summary["error"] = str(exc)
    finally:
        summary["mistaken_fences"] = len(swarm.mistaken_fences())
        wall = time.monotonic() - started
        summary["swarm_cpu_s"] = cpu_seconds() - cpu0
        summary["swarm_cpu_pct"] = summary["swarm_cpu_s"] / wall * 100
        summary["replayed_offset"] = swarm.replay.applied_offset - 1
        await swarm.close()
    return summary


@click.command(
    help="Emulate N Kafka brokers (registration, heartbeats, metadata fetches) against a controller quorum."
)
@click.version_option(package_name="kraftd", prog_name="kraft-swarm")
@click.option(
    "--voters", required=True, callback=lambda c, p, v: parse_voters(v), help="1@host:port,2@host:port,..."
)
@click.option("--cluster-id", required=True, help="The quorum's cluster id.")
@click.option("--brokers", default=100, show_default=True, type=click.IntRange(1))
@click.option("--first-id", default=100, show_default=True, help="Broker ids first-id..first-id+N-1.")
@click.option("--heartbeat-interval-ms", default=2000, show_default=True)
@click.option(
    "--duration", default=60.0, show_default=True, help="Seconds of steady state (0: until Ctrl-C)."
)
@click.option("--topics", default=0, show_default=True, help="Topics to create through CreateTopics first.")
@click.option("--partitions", default=100, show_default=True, help="Partitions per topic.")
@click.option("--rf", default=3, show_default=True, help="Replication factor.")
@click.option("--batch", default=50, show_default=True, help="Topics per CreateTopics request.")
@click.option("--topic-prefix", default="swarm-", show_default=True)
@click.option("--shutdown", type=int, help="Broker id to shut down (controlled) half-way through.")
@click.option("--kill", type=int, help="Broker id to kill half-way through.")
@click.option("--start-timeout", default=120.0, show_default=True)
@click.option("--report-every", default=5.0, show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def main(**kw: Any) -> None:
    kw["json"] = kw.pop("as_json")
    unpooled_large_buffers()  # tools.heap: the brokers' 8 MiB Fetch answers go back to the system once read
    raise_open_files_limit()  # tools.process_limits: a connection or more per broker
    try:
        summary = asyncio.run(run(kw))
    except KeyboardInterrupt:
        sys.exit(130)
    if kw["json"]:
        click.echo(json.dumps(summary, sort_keys=True))
    else:
        for key, value in sorted(summary.items()):
            click.echo(f"{key}: {value}")
    if summary.get("error") or summary["mistaken_fences"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
