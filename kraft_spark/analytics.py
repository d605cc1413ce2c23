"""Analytics jobs over the ``kraft`` source's rows: each job is a DataFrame → DataFrame function.

Contracts:
1. Input is the batch source's DataFrame over one or more nodes' logs. The replicated log is the same on
   every node, so log-wide jobs first keep one row per offset (:func:`replicated_log`, the segment rows of the
   node that holds the most of them); per-node jobs (lag) use every node's rows.
2. Leader timeline: one row per LeaderChange record (epoch, leader, offset, timestamp, voters, granters).
   Failover: for each epoch after the first, ``failover_ms`` = its LeaderChange timestamp minus the last
   record timestamp of the epoch before (the window with no leader writing).
3. Commit rate: committed records per wall-clock second (record timestamps). Lag: per node, the highest
   offset any node holds minus the node's own highest offset.
4. Voter-set history: every KRaftVoters record. Change histories: records of Kafka's metadata types for
   topics/partitions/configs and for brokers (ids below are Kafka's MetadataRecordType ids), with their JSON
   when the record type's generated class exists.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

TOPIC_TYPES = {
    2: "TopicRecord",
    3: "PartitionRecord",
    4: "ConfigRecord",
    5: "PartitionChangeRecord",
    9: "RemoveTopicRecord",
}
BROKER_TYPES = {
    0: "RegisterBrokerRecord",
    1: "UnregisterBrokerRecord",
    7: "FenceBrokerRecord",
    8: "UnfenceBrokerRecord",
    17: "BrokerRegistrationChangeRecord",
    27: "RegisterControllerRecord",
}


def _type_names(types: dict[int, str]) -> Any:
    mapping = F.create_map(*[x for k, v in types.items() for x in (F.lit(k), F.lit(v))])
    return F.coalesce(F.col("record_type"), mapping[F.col("record_type_id")])


def replicated_log(df: DataFrame) -> DataFrame:
    """One row per log offset (contract 1)."""
    seg = df.where((F.col("file_kind") != "snapshot") & F.col("offset").isNotNull() & F.col("error").isNull())
    best = seg.groupBy("node").count().orderBy(F.desc("count"), "node").limit(1).select("node")
    return seg.join(best, "node").dropDuplicates(["offset"])


def leader_timeline(log: DataFrame) -> DataFrame:
    lc = log.where(F.col("control_type") == "LeaderChange")
    return lc.select(
        "epoch",
        F.col("record.leader_change.leader_id").alias("leader_id"),
        "offset",
        "timestamp",
        F.size("record.leader_change.voters").alias("voters"),
        F.size("record.leader_change.granting_voters").alias("granting_voters"),
    ).orderBy("epoch", "offset")


def failovers(log: DataFrame) -> DataFrame:
    per_epoch = log.groupBy("epoch").agg(F.max("timestamp").alias("last_ts"))
    starts = leader_timeline(log).select("epoch", "leader_id", F.col("timestamp").alias("start_ts"))
    w = Window.orderBy("epoch")
    joined = starts.join(per_epoch, "epoch").withColumn("prev_last_ts", F.lag("last_ts").over(w))
    joined = joined.withColumn("prev_leader", F.lag("leader_id").over(w))
    return (
        joined.where(F.col("prev_last_ts").isNotNull())
        .select(
            "epoch",
            "leader_id",
            "prev_leader",
            (F.col("start_ts") - F.col("prev_last_ts")).alias("failover_ms"),
        )
        .orderBy("epoch")
    )


def commit_rate(log: DataFrame) -> DataFrame:
    return (
        log.withColumn("second", (F.col("timestamp") / 1000).cast("long"))
        .groupBy("second")
        .agg(F.count("*").alias("records"))
        .orderBy("second")
    )


def node_lag(df: DataFrame) -> DataFrame:
    ends = (
        df.where((F.col("file_kind") != "snapshot") & F.col("offset").isNotNull())
        .groupBy("node")
        .agg(F.max("offset").alias("end_offset"))
    )
    top = ends.agg(F.max("end_offset").alias("top"))
    return ends.crossJoin(top).select("node", "end_offset", (F.col("top") - F.col("end_offset")).alias("lag"))


def voter_history(log: DataFrame) -> DataFrame:
    return (
        log.where(F.col("control_type") == "KRaftVoters")
        .select(
            "offset",
            "epoch",
            "timestamp",
            F.transform("record.kraft_voters.voters", lambda v: v["voter_id"]).alias("voter_ids"),
            "record_json",
        )
        .orderBy("offset")
    )


def _history(log: DataFrame, types: dict[int, str]) -> DataFrame:
    return (
        log.where(~F.col("is_control") & F.col("record_type_id").isin(list(types)))
        .select(
            "offset", "epoch", "timestamp", _type_names(types).alias("type"), "record_version", "record_json"
        )
        .orderBy("offset")
    )


def topic_history(log: DataFrame) -> DataFrame:
    return _history(log, TOPIC_TYPES)


def broker_history(log: DataFrame) -> DataFrame:
    return _history(log, BROKER_TYPES)


JOBS = {
    "leader_timeline": leader_timeline,
    "failovers": failovers,
    "commit_rate": commit_rate,
    "voter_history": voter_history,
    "topic_history": topic_history,
    "broker_history": broker_history,
}
