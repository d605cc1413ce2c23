"""``kraft-analytics``: Spark jobs over metadata logs and simulator sweeps → Parquet, PNG and one HTML report.

kraft-analytics report LOGS_DIR --out OUT [--seeds 0-199] [--master local[*]]
kraft-analytics sweep --seeds 0-999 --out OUT [--bug no_check_quorum]

Contracts:
1. Every table is written as Parquet under ``OUT/<name>/``, every plot as ``OUT/<name>.png``, and the
   report as ``OUT/report.html`` (self-contained, kraft_spark.report contract 2).
2. Progress: the driver prints one line per step; Spark's console progress bar shows running stages.
3. Operator errors (no logs found, a bad seed range, Spark failing to start) are one line and exit status 1.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from kraft_spark.decode import find_files


def _range(text: str) -> range:
    lo, _, hi = text.partition("-")
    try:
        return range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a seed range like 0-199") from None


def _step(message: str) -> None:
    click.echo(f"[{time.strftime('%H:%M:%S')}] {message}", err=True)


def _dicts(df: Any) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def _save(df: Any, out: Path, name: str) -> list[dict[str, Any]]:
    """Collect a job's (small, aggregated) result once and write it as Parquet from the driver, where the
    PNGs and the report go too: one Spark job per table."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    rows = _dicts(df)
    target = out / name
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.parquet"):
        old.unlink()
    table = pa.Table.from_pylist(rows, schema=to_arrow_schema(df.schema))
    pq.write_table(table, target / "part-00000.parquet")
    return rows


def log_sections(spark: Any, logs: Path, out: Path) -> list[tuple[str, Path | None, list[dict[str, Any]]]]:
    from kraft_spark import analytics as A
    from kraft_spark import report as R

    df = spark.read.format("kraft").load(str(logs)).cache()
    _step(f"decoded {df.count()} rows from {len(find_files(logs))} files")
    log = A.replicated_log(df).cache()
    sections: list[tuple[str, Path | None, list[dict[str, Any]]]] = []
    timeline = _save(A.leader_timeline(log), out, "leader_timeline")
    sections.append(
        ("Leader / epoch timeline", R.plot_leader_timeline(timeline, out / "leader_timeline.png"), timeline)
    )
    fo = _save(A.failovers(log), out, "failovers")
    plot = R.plot_bars(
        [r["epoch"] for r in fo],
        [r["failover_ms"] for r in fo],
        "Failover per epoch",
        "ms",
        out / "failovers.png",
    )
    sections.append(("Election / failover durations", plot, fo))
    rate = _save(A.commit_rate(log), out, "commit_rate")
    t0 = rate[0]["second"] if rate else 0
    plot = R.plot_line(
        [r["second"] - t0 for r in rate],
        [r["records"] for r in rate],
        "Commit rate",
        "records/s",
        out / "commit_rate.png",
    )
    sections.append(("Commit rate", plot, rate))
    lag = _save(A.node_lag(df), out, "node_lag")
    plot = R.plot_bars(
        [r["node"] for r in lag],
        [r["lag"] for r in lag],
        "Per-node lag (offsets behind)",
        "offsets",
        out / "node_lag.png",
    )
    sections.append(("Per-voter lag", plot, lag))
    for name, heading in (
        ("voter_history", "Voter-set history"),
        ("topic_history", "Topic / partition / config changes"),
        ("broker_history", "Broker registration and fencing"),
    ):
        _step(f"job {name}")
        sections.append((heading, None, _save(A.JOBS[name](log), out, name)))
    return sections


def sweep_sections(
    spark: Any, seeds: range, out: Path, scenarios: list[str] | None, bug: str | None
) -> list[tuple[str, Path | None, list[dict[str, Any]]]]:
    from pyspark.sql import functions as F

    from kraft_spark import report as R
    from kraft_spark.sweep import sweep

    _step(f"sweeping {len(seeds)} seeds on Spark")
    results = sweep(spark, seeds, scenarios, bug=bug).cache()
    results.write.mode("overwrite").parquet(str(out / "sweep"))
    bad = _dicts(
        results.where(~F.col("ok")).select("scenario", "seed", "error", "replay", "trace").orderBy("seed")
    )
    per = _dicts(
        results.groupBy("scenario")
        .agg(
            F.count("*").alias("seeds"),
            F.sum(F.when(~F.col("ok"), 1).otherwise(0)).alias("violations"),
            F.expr("percentile(commit_wait_ms, 0.5)").alias("p50_commit_wait_ms"),
            F.max("commit_wait_ms").alias("max_commit_wait_ms"),
        )
        .orderBy("scenario")
    )
    waits = [r.commit_wait_ms for r in results.select("commit_wait_ms").collect()]
    plot = R.plot_histogram(
        waits, "Election + catch-up time (simulated)", "commit wait ms", out / "election_times.png"
    )
    _step(f"{len(bad)} violations in {len(seeds)} seeds")
    return [("Simulation sweep: election-time distribution", plot, per), ("Simulation violations", None, bad)]


def _session(master: str) -> Any:
    from kraft_spark.session import build_session

    _step(f"starting Spark ({master})")
    return build_session(master)


@click.group(help="Spark analytics over KRaft metadata logs and simulator sweeps.")
@click.version_option(package_name="kraftd", prog_name="kraft-analytics")
def main() -> None:
    pass


@main.command(help="Jobs over the metadata logs under LOGS (and an optional sweep) into one HTML report.")
@click.argument("logs", type=click.Path(exists=True, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--master", default="local[*]", show_default=True)
@click.option("--seeds", type=_range, default=None, help="Also sweep these simulator seeds, e.g. 0-199.")
@click.option("--scenario", "scenarios", multiple=True)
@click.option("--bug", default=None, help="Plant a simulator bug (kraftd.sim --bug) in the sweep.")
def report(
    logs: Path, out: Path, master: str, seeds: range | None, scenarios: tuple[str, ...], bug: str | None
) -> None:
    if not find_files(logs):
        click.echo(f"kraft-analytics: no metadata log segments or snapshots under {logs}", err=True)
        sys.exit(1)
    out.mkdir(parents=True, exist_ok=True)
    spark = _session(master)
    sections = log_sections(spark, logs, out)
    if seeds is not None:
        sections += sweep_sections(spark, seeds, out, list(scenarios) or None, bug)
    from kraft_spark.report import write_html

    path = write_html(out / "report.html", f"KRaft metadata report: {logs}", sections)
    click.echo(str(path))


@main.command(help="Sweep simulator seeds on Spark into Parquet and an HTML report.")
@click.option("--seeds", type=_range, required=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--master", default="local[*]", show_default=True)
@click.option("--scenario", "scenarios", multiple=True)
@click.option("--bug", default=None)
def sweep(seeds: range, out: Path, master: str, scenarios: tuple[str, ...], bug: str | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    spark = _session(master)
    sections = sweep_sections(spark, seeds, out, list(scenarios) or None, bug)
    from kraft_spark.report import write_html

    click.echo(
        str(
            write_html(
                out / "report.html", f"kraftd simulation sweep {seeds.start}-{seeds.stop - 1}", sections
            )
        )
    )
