"""The log half of ``kraft-analytics report``: the analytics jobs run, saved as Parquet, and summarized into the
report's sections (kraft_spark.report contracts), in the order an operator reads after an incident.

Contracts:
1. Every job's table is written whole as ``OUT/<name>/part-00000.parquet`` (one Spark job per table, collected
   once on the driver); the report shows summaries and links the table.
2. Sections: overview (time range, nodes, records, epochs, elections, brokers, topics), leader timeline,
   failover and election durations, brokers, topics and partitions, commit rate, per-node lag, voter set,
   change histories. A plot is drawn only when it carries information (kraft_spark.report contract 1);
   otherwise one sentence says what the log holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraft_spark import report as R
from kraft_spark.report import Section, iso

HISTORY_COLUMNS = ["offset", "epoch", "timestamp", "type", "record_version", "record_json"]


def collect(df: Any) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def save_table(df: Any, out: Path, name: str) -> list[dict[str, Any]]:
    """Contract 1: collect a job's (aggregated) result once and write it as Parquet from the driver."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    rows = collect(df)
    target = out / name
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.parquet"):
        old.unlink()
    table = pa.Table.from_pylist(rows, schema=to_arrow_schema(df.schema))
    pq.write_table(table, target / "part-00000.parquet")
    return rows


def _overview(df: Any, log: Any) -> dict[str, Any]:
    from pyspark.sql import functions as F

    a = log.agg(
        F.count("*").alias("records"),
        F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset"),
        F.min("timestamp").alias("first_ts"),
        F.max("timestamp").alias("last_ts"),
        F.countDistinct("epoch").alias("epochs"),
    ).collect()[0]
    per_node = collect(
        df.groupBy("node").agg(
            F.count("*").alias("rows"),
            F.sum(F.when(F.col("error").isNotNull(), 1).otherwise(0)).alias("errors"),
            F.countDistinct("file").alias("files"),
        )
    )
    return {**a.asDict(), "nodes": sorted(per_node, key=lambda r: r["node"])}


def _span(info: dict[str, Any]) -> tuple[int, int]:
    return (info["first_ts"] or 0, info["last_ts"] or 0)


def _leaders(
    out: Path, timeline: list[dict[str, Any]], fo: list[dict[str, Any]], info: dict[str, Any]
) -> Section:
    nodes = sorted({n["node"] for n in info["nodes"]} | {v for r in timeline for v in (r["voter_ids"] or [])})
    plot = R.plot_leader_lanes(timeline, fo, nodes, _span(info), out / "leader_timeline.png")
    s = Section("Leader timeline", [(plot, "leader timeline")])
    if not timeline:
        s.body.append(R.text("No LeaderChange record in the retained log."))
    rows = [
        {**r, "leader": r["leader_id"], "voter_ids": r["voter_ids"], "granted_by": r["granting_voters"]}
        for r in timeline
    ]
    s.body.append(
        R.table(rows, ["epoch", "leader", "timestamp", "offset", "voter_ids", "granted_by"], limit=20)
    )
    s.body.append(R.link("leader_timeline"))
    return s


def _failovers(out: Path, fo: list[dict[str, Any]]) -> Section:
    s = Section("Failover and election durations")
    if not fo:
        s.body.append(R.text("One leader epoch in the retained log: no election after the first."))
        return s
    labels = [f"e{r['epoch']}: {r['prev_leader']}→{r['leader_id']}" for r in fo]
    stacks = {
        "no leader writing (failover)": [r["failover_ms"] for r in fo],
        "elected → first write (activation)": [r["activation_ms"] or 0 for r in fo],
    }
    s.plots.append(
        (R.plot_bars(labels, stacks, "Unavailability per election", "ms", out / "failovers.png"), "failovers")
    )
    worst = max(fo, key=lambda r: r["unavailable_ms"])
    failed = sum(max(0, r["election_rounds"] - 1) for r in fo)
    s.body.append(
        R.facts(
            [
                ("elections", len(fo)),
                ("epochs with no winner (failed elections)", failed),
                ("median failover", f"{sorted(r['failover_ms'] for r in fo)[len(fo) // 2]} ms"),
                (
                    "worst unavailability",
                    f"{worst['unavailable_ms']} ms at epoch {worst['epoch']} ({iso(worst['start_ts'])})",
                ),
            ]
        )
    )
    top = sorted(fo, key=lambda r: -r["unavailable_ms"])
    cols = [
        "epoch",
        "prev_leader",
        "leader_id",
        "start_ts",
        "election_rounds",
        "failover_ms",
        "activation_ms",
    ]
    s.body.append(R.text("Longest first:"))
    s.body += [R.table(top, [*cols, "unavailable_ms"], limit=10), R.link("failovers")]
    return s


def _brokers(out: Path, events: list[dict[str, Any]], span: tuple[int, int]) -> Section:
    s = Section("Brokers: registration, fencing, controlled shutdown")
    if not events:
        s.body.append(R.text("No broker registered in the retained log (a controller-only quorum)."))
        return s
    s.plots.append((R.plot_broker_lanes(events, span, out / "brokers.png"), "broker timeline"))
    s.body.append(R.counts(events, "event", "event"))
    s.body += [
        R.text("Latest events:"),
        R.table(events[::-1], ["timestamp", "broker_id", "broker_epoch", "event", "offset"]),
    ]
    s.body.append(R.link("broker_events"))
    return s


def _topics(
    out: Path, counts: list[dict[str, Any]], history: list[dict[str, Any]], span: tuple[int, int]
) -> Section:
    s = Section("Topics and partitions")
    if not counts:
        s.body.append(R.text("No topic created or removed in the retained log."))
    else:
        s.plots.append((R.plot_counts(counts, span, out / "topic_counts.png"), "topic counts"))
        last = counts[-1]
        at = f"At {iso(span[1])}: {last['topics']} topics, {last['partitions']} partitions"
        s.body.append(R.text(f"{at} (counted from the retained log segments' start)."))
        s.body.append(R.link("topic_counts"))
    if history:
        s.body += [R.text("Change records by type:"), R.counts(history, "type", "type")]
        s.body += [R.text("Latest changes:"), R.table(history[::-1], HISTORY_COLUMNS, pre=["record_json"])]
        s.body.append(R.link("topic_history"))
    return s


def _rate(out: Path, rate: list[dict[str, Any]], span: tuple[int, int]) -> Section:
    s = Section("Commit rate")
    plot = R.plot_rate(rate, span, out / "commit_rate.png")
    s.plots.append((plot, "commit rate"))
    total = sum(r["records"] for r in rate)
    if rate:
        peak = max(rate, key=lambda r: r["records"])
        span = rate[-1]["second"] - rate[0]["second"] + 1
        s.body.append(
            R.facts(
                [
                    ("records", total),
                    ("seconds with commits", f"{len(rate)} of {span}"),
                    ("mean while committing", f"{total / len(rate):.1f} records/s"),
                    ("peak", f"{peak['records']} records/s at {iso(peak['second'] * 1000)}"),
                ]
            )
        )
        s.body.append(R.link("commit_rate"))
    return s


def _lag(out: Path, lag: list[dict[str, Any]]) -> Section:
    s = Section("Per-node lag")
    if len(lag) < 2:
        s.body.append(R.text(f"{len(lag)} node's log read: no lag to compare."))
    elif not any(r["lag"] for r in lag):
        s.body.append(R.text(f"All {len(lag)} nodes end at offset {lag[0]['end_offset']}: no lag."))
    else:
        lag = sorted(lag, key=lambda r: r["node"])
        bars = R.plot_bars(
            [f"node {r['node']}" for r in lag],
            {"lag": [r["lag"] for r in lag]},
            "Offsets behind the longest log",
            "offsets",
            out / "node_lag.png",
        )
        s.plots.append((bars, "node lag"))
    s.body += [R.table(lag, ["node", "end_offset", "lag"], limit=50), R.link("node_lag")]
    return s


def log_sections(spark: Any, logs: Path, out: Path, step: Any) -> list[Section]:
    from kraft_spark import analytics as A
    from kraft_spark.decode import find_files

    df = spark.read.format("kraft").load(str(logs)).cache()
    step(f"decoded {df.count()} rows from {len(find_files(logs))} files")
    log = A.replicated_log(df).cache()
    info = _overview(df, log)
    t: dict[str, list[dict[str, Any]]] = {}
    for name in (
        "leader_timeline",
        "failovers",
        "broker_events",
        "topic_counts",
        "commit_rate",
        "voter_history",
        "topic_history",
        "broker_history",
    ):
        step(f"job {name}")
        t[name] = save_table(A.JOBS[name](log), out, name)
    t["node_lag"] = save_table(A.node_lag(df), out, "node_lag")
    leaders = sorted({r["leader_id"] for r in t["leader_timeline"]})
    brokers = sorted({r["broker_id"] for r in t["broker_events"]})
    last_counts = t["topic_counts"][-1] if t["topic_counts"] else {"topics": 0, "partitions": 0}
    overview = Section("Overview")
    overview.body.append(
        R.facts(
            [
                ("time range (UTC)", f"{iso(info['first_ts'])} → {iso(info['last_ts'])}"),
                ("offsets", f"{info['first_offset']} → {info['last_offset']} ({info['records']} records)"),
                (
                    "nodes read",
                    ", ".join(
                        f"{n['node']} ({n['files']} files, {n['rows']} rows, {n['errors']} errors)"
                        for n in info["nodes"]
                    ),
                ),
                ("epochs", info["epochs"]),
                ("elections", f"{len(t['failovers'])} (leaders: {', '.join(map(str, leaders)) or 'none'})"),
                ("brokers seen", ", ".join(map(str, brokers)) or "none"),
                ("topics / partitions at end", f"{last_counts['topics']} / {last_counts['partitions']}"),
            ]
        )
    )
    sections = [
        overview,
        _leaders(out, t["leader_timeline"], t["failovers"], info),
        _failovers(out, t["failovers"]),
        _brokers(out, t["broker_events"], _span(info)),
        _topics(out, t["topic_counts"], t["topic_history"], _span(info)),
        _rate(out, t["commit_rate"], _span(info)),
        _lag(out, t["node_lag"]),
    ]
    voters = Section("Voter set")
    if t["voter_history"]:
        voters.body += [
            R.table(t["voter_history"][::-1], ["offset", "epoch", "timestamp", "voter_ids"]),
            R.link("voter_history"),
        ]
    else:
        voters.body.append(R.text("No KRaftVoters record (static voters)."))
    brokers_h = Section("Broker records")
    brokers_h.body += [R.counts(t["broker_history"], "type", "type"), R.link("broker_history")]
    return [*sections, voters, brokers_h]
