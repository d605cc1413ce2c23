"""``kraft-analytics``: Spark jobs over metadata logs and simulator sweeps → Parquet, PNG and one HTML report.

kraft-analytics report LOGS_DIR --out OUT [--seeds 0-199] [--master local[*]]
kraft-analytics sweep --seeds 0-999 --out OUT [--bug no_check_quorum]
kraft-analytics stream --bootstrap-controller HOST:PORT --out OUT [--until-offset N]

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
from typing import TYPE_CHECKING, Any

import click

from kraft_spark.decode import find_files

if TYPE_CHECKING:  # the report's modules need the spark extra (matplotlib): imported where a command runs
    from kraft_spark.report import Section


def _range(text: str) -> range:
    lo, _, hi = text.partition("-")
    try:
        return range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a seed range like 0-199") from None


def _step(message: str) -> None:
    click.echo(f"[{time.strftime('%H:%M:%S')}] {message}", err=True)


def sweep_sections(
    spark: Any, seeds: range, out: Path, scenarios: list[str] | None, bug: str | None
) -> list[Section]:
    from pyspark.sql import functions as F

    from kraft_spark import report as R
    from kraft_spark.incident import collect
    from kraft_spark.sweep import sweep

    _step(f"sweeping {len(seeds)} seeds on Spark")
    results = sweep(spark, seeds, scenarios, bug=bug).cache()
    results.write.mode("overwrite").parquet(str(out / "sweep"))
    bad = collect(
        results.where(~F.col("ok")).select("scenario", "seed", "error", "replay", "trace").orderBy("seed")
    )
    per = collect(
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
    cols = ["scenario", "seeds", "violations", "p50_commit_wait_ms", "max_commit_wait_ms"]
    dist = R.Section("Simulation sweep: election-time distribution", [(plot, "election times")])
    dist.body += [R.table(per, cols, limit=50), R.link("sweep")]
    viol = R.Section("Simulation violations")
    viol.body.append(R.text(f"{len(bad)} of {len(seeds)} seeds violated an invariant."))
    if bad:
        viol.body.append(R.counts(bad, "scenario", "scenario"))
        viol.body.append(R.table(bad, ["seed", "scenario", "error", "replay", "trace"], pre=["trace"]))
    return [dist, viol]


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
    from kraft_spark.incident import log_sections

    spark = _session(master)
    sections = log_sections(spark, logs, out, _step)
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


@main.command(help="Tail a running quorum's metadata log into Parquet (the live kraft stream).")
@click.option("--bootstrap-controller", "bootstrap", required=True, help="host:port[,host:port...]")
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--checkpoint", type=click.Path(path_type=Path), default=None, help="Default: OUT/_checkpoint.")
@click.option("--until-offset", type=int, default=None, help="Stop once every offset below this is written.")
@click.option("--master", default="local[*]", show_default=True)
def stream(bootstrap: str, out: Path, checkpoint: Path | None, until_offset: int | None, master: str) -> None:
    import json

    spark = _session(master)
    query = (
        spark.readStream.format("kraft")
        .option("bootstrap.controller", bootstrap)
        .load()
        .writeStream.format("parquet")
        .option("path", str(out / "rows"))
        .option("checkpointLocation", str(checkpoint or out / "_checkpoint"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    _step(f"streaming {bootstrap} into {out / 'rows'}")
    try:
        while query.isActive:
            query.awaitTermination(0.5)
            done = [p["sources"][0]["endOffset"] for p in query.recentProgress if p["sources"]]
            written = max(
                (json.loads(o)["offset"] if isinstance(o, str) else o["offset"] for o in done), default=0
            )
            if until_offset is not None and written >= until_offset:
                _step(f"every offset below {written} written")
                break
        if query.exception() is not None:
            click.echo(f"kraft-analytics: the stream failed: {query.exception()}", err=True)
            sys.exit(1)
    finally:
        query.stop()
