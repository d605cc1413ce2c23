"""The deterministic simulator swept on Spark: seeds as a DataFrame, one ``kraftd.sim`` run per row.

Contracts:
1. Seed ``s`` runs scenario ``names[s % len(names)]`` exactly as ``python -m kraftd.sim`` does
   (kraftd.sim.runner invariant), so every violation replays with the command in its ``replay`` column.
2. The result table has one row per seed: scenario, seed, ok, error, replay command, trace (the last events,
   newline-joined), events, virtual_ms and commit_wait_ms (the longest wait for a commit after a disruption:
   election plus catch-up, in simulated milliseconds).
3. Seeds are sliced into at least 4 tasks per core and at most ~8 seeds per task, so that seeds of unequal
   cost even out across cores (the CLI's pool hands out 4 at a time); seeds go to the Python workers as a
   plain parallelized range (no DataFrame-to-Python row conversion).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from kraft_spark.worker import freeze_imports
from kraftd.core.config import BugFlags
from kraftd.sim.runner import pick, run_seed
from kraftd.sim.scenarios import SCENARIOS

RESULT_SCHEMA = T.StructType(
    [
        T.StructField("scenario", T.StringType()),
        T.StructField("seed", T.LongType()),
        T.StructField("ok", T.BooleanType()),
        T.StructField("error", T.StringType()),
        T.StructField("replay", T.StringType()),
        T.StructField("trace", T.StringType()),
        T.StructField("events", T.LongType()),
        T.StructField("virtual_ms", T.LongType()),
        T.StructField("commit_wait_ms", T.LongType()),
    ]
)


def _run(rows: Iterable[int], names: list[str], bug: str | None) -> Iterator[tuple[Any, ...]]:
    freeze_imports()
    bugs = BugFlags(**{bug: True}) if bug else BugFlags()
    for seed in rows:
        scenario = pick(seed, names)
        r = run_seed(scenario, seed, bugs)
        replay = f"python -m kraftd.sim --scenario {scenario} --seed {seed}" + (
            f" --bug {bug}" if bug else ""
        )
        yield (
            scenario,
            seed,
            r.ok,
            r.error or None,
            replay,
            "\n".join(r.trace) or None,
            r.events,
            r.virtual_ms,
            r.commit_wait_ms,
        )


def sweep(
    spark: SparkSession,
    seeds: range,
    scenarios: list[str] | None = None,
    *,
    bug: str | None = None,
    partitions: int | None = None,
) -> DataFrame:
    """The result table of contract 2 (lazy: nothing runs until an action)."""
    names = sorted(scenarios or SCENARIOS)
    n = partitions or _partitions(len(seeds), spark.sparkContext.defaultParallelism)
    rdd = spark.sparkContext.parallelize(seeds, n).mapPartitions(lambda s: _run(s, names, bug))
    return spark.createDataFrame(rdd, RESULT_SCHEMA, verifySchema=False)


def _partitions(seeds: int, cores: int) -> int:
    """Contract 3: at least 4 tasks per core, at most ~8 seeds per task."""
    return max(1, min(seeds, max(cores * 4, -(-seeds // 8))))
