"""One chaos run: ``python -m tests.chaos.run --minutes N --nodes 3|5 --seed S [--report FILE]``.

Starts the cluster (tests.chaos.cluster), runs the seeded fault schedule (tests.chaos.faults) for the given time,
heals everything, verifies (tests.chaos.checks) and prints (and with ``--report`` writes, as JSON and text) the
kills, pauses, partitions, one-way cuts, slow-disk and disk-full episodes, corruptions, records acknowledged,
records lost and the worst failover. Exit status 1 when any check failed.

``--kafka-nodes K`` runs nodes 1..K as Apache Kafka 4.3.1 controllers (the load then writes framed NoOpRecords);
tests/chaos/test_chaos.py runs such a mixed quorum in CI.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from tests.chaos.checks import verify
from tests.chaos.cluster import ChaosCluster
from tests.chaos.faults import Schedule


def chaos_run(
    root: Path,
    *,
    nodes: int,
    seconds: float,
    seed: int,
    hold: tuple[float, float],
    gap: tuple[float, float],
    kafka_nodes: int = 0,
) -> dict[str, Any]:
    c = ChaosCluster(root, nodes, disk_node=nodes, kafka_nodes=frozenset(range(1, kafka_nodes + 1)))
    started = time.monotonic()
    try:
        c.start_all()
        sched = Schedule(c, seed, hold=hold, gap=gap)
        tally = sched.run(seconds)
        c.heal()
        for i in c.ids:
            c.slow_file(i).write_text("0")
        tally.log("healed everything; verifying")
        verdict = verify(c)
    finally:
        c.close()
    report = {
        "seed": seed,
        "nodes": nodes,
        "kafka_nodes": sorted(c.kafka_nodes),
        "seconds": round(time.monotonic() - started, 1),
        "disk_full_on_tmpfs": c.disk_node is not None,
        "faults": tally.counts,
        "kills": tally.counts.get("kill_leader", 0)
        + tally.counts.get("kill_random", 0)
        + tally.counts.get("corrupt", 0),
        "pauses": tally.counts.get("pause_leader", 0),
        "partitions": tally.counts.get("partition", 0),
        "one_way_cuts": tally.counts.get("one_way", 0),
        "disk_full_exits": tally.disk_full_exits,
        "records_acked": verdict.acked,
        "records_lost": len({(o, r) for o, r, _ in verdict.lost}),
        "duplicates": len(verdict.duplicated),
        "divergent": verdict.divergent,
        "caught_up": verdict.caught_up,
        "log_ends": verdict.log_ends,
        "common_prefix": verdict.common_prefix,
        "failovers": len(tally.failovers_s),
        "worst_failover_s": round(max(tally.failovers_s), 2) if tally.failovers_s else None,
        "liveness_violations": tally.liveness_violations,
        "unexpected_deaths": tally.unexpected_deaths,
        "ok": verdict.ok and not tally.liveness_violations and not tally.unexpected_deaths,
        "events": tally.events,
        "lost_sample": verdict.lost[:10],
    }
    return report


def summary(r: dict[str, Any]) -> str:
    return (
        f"chaos seed {r['seed']}, {r['nodes']} nodes (Kafka: {r['kafka_nodes'] or 'none'}), {r['seconds']}s: kills {r['kills']}, pauses {r['pauses']}, "
        f"partitions {r['partitions']}, one-way cuts {r['one_way_cuts']}, faults {r['faults']}, "
        f"disk-full exits {r['disk_full_exits']}; records acked {r['records_acked']}, lost {r['records_lost']}, "
        f"duplicated {r['duplicates']}, divergent {len(r['divergent'])}; worst failover {r['worst_failover_s']}s "
        f"over {r['failovers']}; liveness violations {len(r['liveness_violations'])}, unexpected deaths "
        f"{len(r['unexpected_deaths'])}: {'OK' if r['ok'] else 'FAILED'}"
    )


@click.command()
@click.option("--minutes", default=2.0, show_default=True)
@click.option("--nodes", default=3, show_default=True, type=click.Choice(["3", "5"]))
@click.option("--seed", default=14, show_default=True)
@click.option(
    "--report", type=click.Path(path_type=Path), help="Write the report here (JSON; .txt beside it)."
)
@click.option("--keep", is_flag=True, help="Keep the run directory (logs, configs, ack files).")
@click.option("--kafka-nodes", default=0, show_default=True, help="Nodes 1..K run Apache Kafka's controller.")
def main(minutes: float, nodes: str, seed: int, report: Path | None, keep: bool, kafka_nodes: int) -> None:
    root = Path(tempfile.mkdtemp(prefix=f"kraftd-chaos-{seed}-"))
    r = chaos_run(
        root,
        nodes=int(nodes),
        seconds=minutes * 60,
        seed=seed,
        hold=(1.0, 10.0),
        gap=(2.0, 8.0),
        kafka_nodes=kafka_nodes,
    )
    text = summary(r)
    click.echo(text)
    if report is not None:
        report.write_text(json.dumps(r, indent=2))
        report.with_suffix(".txt").write_text(text + "\n\n" + "\n".join(r["events"]) + "\n")
    if keep:
        click.echo(f"run directory: {root}")
    else:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    sys.exit(0 if r["ok"] else 1)


if __name__ == "__main__":
    main()
