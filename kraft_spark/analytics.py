"""Analytics jobs over the ``kraft`` source's rows: each job is a DataFrame → DataFrame function.

Contracts:
1. Input is the batch source's DataFrame over one or more nodes' logs. The replicated log is the same on
   every node, so log-wide jobs first keep one row per offset (:func:`replicated_log`, the segment rows of the
   node that holds the most of them); per-node jobs (lag) use every node's rows.
2. Leader timeline: one row per LeaderChange record (epoch, leader, offset, timestamp, voters, granters).
   Failover: for each epoch after the first, ``failover_ms`` = its LeaderChange timestamp minus the last
   record timestamp of the epoch before (the window with no leader writing); ``election_rounds`` = the epoch
   step (above 1 when elections failed in between); ``activation_ms`` = the epoch's first metadata record
   minus its LeaderChange (the new active controller's first write); ``unavailable_ms`` = the sum.
3. Commit rate: committed records per wall-clock second (record timestamps). Lag: per node, the highest
   offset any node holds minus the node's own highest offset.
4. Voter-set history: every KRaftVoters record. Change histories: records of Kafka's metadata types for
   topics/partitions/configs and for brokers (ids below are Kafka's MetadataRecordType ids), with their JSON
   when the record type's generated class exists.
5. Broker events: one row per broker record (registered, unregistered, fenced, unfenced, controlled_shutdown,
   registration_change), with the broker id and epoch from the typed record struct (KIP-631 semantics:
   BrokerRegistrationChangeRecord.fenced 1 = fenced, -1 = unfenced; inControlledShutdown 1 = entered).
6. Topic counts: per wall-clock second with a topic or partition change, the topics and partitions created
   minus removed so far (RemoveTopicRecord removes the topic's partitions), over the log's segments.
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
        F.transform("record.leader_change.voters", lambda v: v["voter_id"]).alias("voter_ids"),
        F.size("record.leader_change.granting_voters").alias("granting_voters"),
    ).orderBy("epoch", "offset")


def failovers(log: DataFrame) -> DataFrame:
    """Contract 2: one row per epoch after the first LeaderChange."""
    per_epoch = log.groupBy("epoch").agg(
        F.max("timestamp").alias("last_ts"),
        F.min(F.when(~F.col("is_control"), F.col("timestamp"))).alias("first_write_ts"),
    )
    starts = leader_timeline(log).select("epoch", "leader_id", F.col("timestamp").alias("start_ts"))
    w = Window.orderBy("epoch")
    joined = starts.join(per_epoch, "epoch").withColumn("prev_last_ts", F.lag("last_ts").over(w))
    joined = joined.withColumn("prev_leader", F.lag("leader_id").over(w))
    joined = joined.withColumn("prev_epoch", F.lag("epoch").over(w))
    failover = F.col("start_ts") - F.col("prev_last_ts")
    activation = F.col("first_write_ts") - F.col("start_ts")
    return (
        joined.where(F.col("prev_last_ts").isNotNull())
        .select(
            "epoch",
            "leader_id",
            "prev_leader",
            failover.alias("failover_ms"),
            "prev_epoch",
            (F.col("epoch") - F.col("prev_epoch")).alias("election_rounds"),
            "start_ts",
            activation.alias("activation_ms"),
            (failover + F.coalesce(activation, F.lit(0))).alias("unavailable_ms"),
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


def broker_events(log: DataFrame) -> DataFrame:
    """Contract 5."""
    r = "record."
    brc = F.col(r + "broker_registration_change_record")
    event = (
        F.when(F.col(r + "register_broker_record").isNotNull(), "registered")
        .when(F.col(r + "unregister_broker_record").isNotNull(), "unregistered")
        .when(F.col(r + "fence_broker_record").isNotNull(), "fenced")
        .when(F.col(r + "unfence_broker_record").isNotNull(), "unfenced")
        .when(brc["in_controlled_shutdown"] == 1, "controlled_shutdown")
        .when(brc["fenced"] == 1, "fenced")
        .when(brc["fenced"] == -1, "unfenced")
        .otherwise("registration_change")
    )
    broker = F.coalesce(
        F.col(r + "register_broker_record.broker_id"),
        F.col(r + "unregister_broker_record.broker_id"),
        F.col(r + "fence_broker_record.id"),
        F.col(r + "unfence_broker_record.id"),
        brc["broker_id"],
    )
    broker_epoch = F.coalesce(
        F.col(r + "register_broker_record.broker_epoch"),
        F.col(r + "unregister_broker_record.broker_epoch"),
        F.col(r + "fence_broker_record.epoch"),
        F.col(r + "unfence_broker_record.epoch"),
        brc["broker_epoch"],
    )
    return (
        log.where(~F.col("is_control") & F.col("record_type_id").isin(0, 1, 7, 8, 17) & broker.isNotNull())
        .select(
            "offset",
            "timestamp",
            broker.alias("broker_id"),
            broker_epoch.alias("broker_epoch"),
            event.alias("event"),
            F.col(r + "register_broker_record.fenced").alias("registered_fenced"),
        )
        .orderBy("offset")
    )


def topic_counts(log: DataFrame) -> DataFrame:
    """Contract 6."""
    second = (F.col("timestamp") / 1000).cast("long").alias("second")
    topic_id = F.col("record.partition_record.topic_id")
    parts = log.where(topic_id.isNotNull()).groupBy(topic_id.alias("topic_id")).agg(F.count("*").alias("n"))
    removed = log.where(F.col("record.remove_topic_record").isNotNull()).select(
        second, F.col("record.remove_topic_record.topic_id").alias("topic_id")
    )
    deltas = (
        log.where(F.col("record.topic_record").isNotNull())
        .select(second, F.lit(1).alias("dt"), F.lit(0).alias("dp"))
        .unionByName(
            log.where(topic_id.isNotNull()).select(second, F.lit(0).alias("dt"), F.lit(1).alias("dp"))
        )
        .unionByName(
            removed.join(parts, "topic_id", "left").select(
                "second", F.lit(-1).alias("dt"), (-F.coalesce(F.col("n"), F.lit(0))).alias("dp")
            )
        )
    )
    w = Window.orderBy("second").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    per = deltas.groupBy("second").agg(
        F.sum("dt").alias("topics_delta"), F.sum("dp").alias("partitions_delta")
    )
    return per.select(
        "second",
        F.sum("topics_delta").over(w).alias("topics"),
        F.sum("partitions_delta").over(w).alias("partitions"),
        "topics_delta",
        "partitions_delta",
    ).orderBy("second")


JOBS = {
    "leader_timeline": leader_timeline,
    "failovers": failovers,
    "commit_rate": commit_rate,
    "voter_history": voter_history,
    "topic_history": topic_history,
    "broker_history": broker_history,
    "broker_events": broker_events,
    "topic_counts": topic_counts,
}
