"""The interop tests' names for the Kafka process harness, which lives in kraftd.testing (kraftd.testing.kafka:
jars, tools, one node; kraftd.testing.quorum: mixed quorums) so the benchmarks can use it too."""

from kraftd.testing.kafka import (
    CI,
    DEFAULT_VERSION,
    JVM_OPTS,
    KRAFTD,
    ROOT,
    Node,
    ToolResult,
    classpath,
    dump_log,
    log_config,
    metadata_quorum,
    protocol_complaints,
    random_cluster_id,
    random_directory_id,
    run_tool,
    unavailable,
)
from kraftd.testing.quorum import CREATED, MixedQuorum

__all__ = [
    "CI",
    "CREATED",
    "DEFAULT_VERSION",
    "JVM_OPTS",
    "KRAFTD",
    "ROOT",
    "MixedQuorum",
    "Node",
    "ToolResult",
    "classpath",
    "dump_log",
    "log_config",
    "metadata_quorum",
    "protocol_complaints",
    "random_cluster_id",
    "random_directory_id",
    "run_tool",
    "unavailable",
]
