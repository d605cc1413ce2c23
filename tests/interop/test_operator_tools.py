"""Kafka 4.3.1's operator tools against a real broker cluster on kraftd, compared with the same cluster on Kafka's
controllers (issue 21 sections 5 and 7).

Two clusters of the same shape (kraftd/testing/broker_cluster.py: one controller, two unmodified Kafka brokers),
one with a kraftd controller and one with Kafka's. Every row of :data:`ROWS` is one tool invocation - the tool
run as ``java -cp <Kafka's jars> <main class>``, with ``--bootstrap-server`` at a broker (``{bs}``) or
``--bootstrap-controller`` (``{bc}``) - run on both clusters in the same order (each cluster's rows in order,
the two clusters side by side).

Invariants:
1. Each row's exit code and normalised output (stdout, then the first line of stderr that names an exception
   or an error; kraftd/testing/broker_cluster.py contract 3) are the same on both clusters, except the rows in
   :data:`KNOWN`, each with its reason (docs/INTEROP.md "Operator tools"), where kraftd's own output is checked.
2. Rows in :data:`AFTER_FORWARDING_FIX` need kraftd to serve DescribeQuorum / RemoveRaftVoter inside an Envelope
   (issue 21 section 1, another change): they assert equality with Kafka like every other row.
3. docs/INTEROP.md's table lists every row id, so the table and the module stay one list.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kraftd.testing.broker_cluster import ToolCluster
from tests.interop.kafka import ROOT, ToolResult, classpath

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(420)]

T, CFG, ACL = (
    "org.apache.kafka.tools.TopicCommand",
    "kafka.admin.ConfigCommand",
    "org.apache.kafka.tools.AclCommand",
)
FEAT, MQ = "org.apache.kafka.tools.FeatureCommand", "org.apache.kafka.tools.MetadataQuorumCommand"
CL, LE = "org.apache.kafka.tools.ClusterTool", "org.apache.kafka.tools.LeaderElectionCommand"
RP, LD = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand", "org.apache.kafka.tools.LogDirsCommand"
CG, DT = (
    "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "org.apache.kafka.tools.DelegationTokenCommand",
)
CM, BAV = "org.apache.kafka.tools.ClientMetricsCommand", "org.apache.kafka.tools.BrokerApiVersionsCommand"
GR, TX = "org.apache.kafka.tools.GroupsCommand", "org.apache.kafka.tools.TransactionsCommand"
DR, GO = "org.apache.kafka.tools.DeleteRecordsCommand", "org.apache.kafka.tools.GetOffsetShell"
SG = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
BS, BC = "--bootstrap-server {bs}", "--bootstrap-controller {bc}"
NODIR, SOMEDIR = "AAAAAAAAAAAAAAAAAAAAAA", "b2R3Y2FmZWJhYmVkZWFkYg"

# (row id, tool main class, arguments, normalise every number). STEPS change the cluster and run in this order;
# READS change nothing and run afterwards, three at a time.
Row = tuple[str, str, str, bool]
STEPS: list[Row] = [
    ("topics-create", T, f"{BS} --create --topic t1 --replica-assignment 100:101,101:100,100:101", False),
    (
        "topics-alter-partitions",
        T,
        f"{BS} --alter --topic t1 --partitions 4 --replica-assignment 100:101,101:100,100:101,101:100",
        False,
    ),
    ("topics-create-tdel", T, f"{BS} --create --topic tdel --partitions 1 --replication-factor 1", False),
    ("topics-delete", T, f"{BS} --delete --topic tdel", False),
    (
        "configs-topic-alter",
        CFG,
        f"{BS} --alter --entity-type topics --entity-name t1 --add-config retention.ms=100000,cleanup.policy=compact",
        False,
    ),
    (
        "configs-topic-delete-key",
        CFG,
        f"{BS} --alter --entity-type topics --entity-name t1 --delete-config cleanup.policy",
        False,
    ),
    (
        "configs-broker-default-alter",
        CFG,
        f"{BS} --alter --entity-type brokers --entity-default --add-config log.cleaner.threads=2",
        False,
    ),
    (
        "configs-broker-alter",
        CFG,
        f"{BS} --alter --entity-type brokers --entity-name 100 --add-config log.cleaner.threads=3",
        False,
    ),
    (
        "configs-broker-default-alter-bc",
        CFG,
        f"{BC} --alter --entity-type brokers --entity-default --add-config log.retention.ms=604800000",
        False,
    ),
    (
        "configs-group-alter",
        CFG,
        f"{BS} --alter --entity-type groups --entity-name g --add-config consumer.session.timeout.ms=50000",
        False,
    ),
    (
        "configs-share-group-alter",
        CFG,
        f"{BS} --alter --entity-type groups --entity-name sg --add-config "
        "share.auto.offset.reset=earliest,share.record.lock.duration.ms=15000",
        False,
    ),
    (
        "client-metrics-alter",
        CM,
        f"{BS} --alter --name m --metrics org.apache.kafka.producer. --interval 10000",
        False,
    ),
    (
        "configs-client-quota",
        CFG,
        f"{BS} --alter --entity-type clients --entity-name c1 --add-config producer_byte_rate=1024",
        False,
    ),
    (
        "configs-scram",
        CFG,
        f"{BS} --alter --entity-type users --entity-name alice --add-config SCRAM-SHA-256=[iterations=8192,password=pw]",
        False,
    ),
    ("leader-election", LE, f"{BS} --election-type preferred --all-topic-partitions", False),
    ("reassign-execute", RP, f"{BS} --execute --reassignment-json-file {{dir}}/reassign.json", False),
    ("delete-records", DR, f"{BS} --offset-json-file {{dir}}/delete.json", False),
    (
        "consumer-groups-reset",
        CG,
        f"{BS} --reset-offsets --group cg1 --topic t1 --to-earliest --execute",
        False,
    ),
]
READS: list[Row] = [
    ("topics-create-exists", T, f"{BS} --create --topic t1 --partitions 1", False),
    ("topics-create-bad-rf", T, f"{BS} --create --topic t2 --partitions 1 --replication-factor 3", False),
    (
        "topics-create-bad-config",
        T,
        f"{BS} --create --topic t3 --partitions 1 --config retention.ms=abc",
        False,
    ),
    ("topics-alter-fewer", T, f"{BS} --alter --topic t1 --partitions 2", False),
    ("topics-list", T, f"{BS} --list --exclude-internal", False),
    ("topics-describe", T, f"{BS} --describe --topic t1", False),
    (
        "configs-topic-bad-value",
        CFG,
        f"{BS} --alter --entity-type topics --entity-name t1 --add-config retention.ms=abc",
        False,
    ),
    (
        "configs-topic-bad-key",
        CFG,
        f"{BS} --alter --entity-type topics --entity-name t1 --add-config no.such.key=1",
        False,
    ),
    ("configs-topic-describe", CFG, f"{BS} --describe --entity-type topics --entity-name t1", False),
    (
        "configs-broker-default-describe",
        CFG,
        f"{BS} --describe --entity-type brokers --entity-default",
        False,
    ),
    (
        "configs-broker-default-describe-bc",
        CFG,
        f"{BC} --describe --entity-type brokers --entity-default",
        False,
    ),
    ("configs-broker-describe", CFG, f"{BS} --describe --entity-type brokers --entity-name 100", False),
    ("configs-broker-describe-bc", CFG, f"{BC} --describe --entity-type brokers --entity-name 100", False),
    (
        "configs-broker-loggers-bc",
        CFG,
        f"{BC} --describe --entity-type broker-loggers --entity-name 1",
        False,
    ),
    (
        "configs-group-out-of-range",
        CFG,
        f"{BS} --alter --entity-type groups --entity-name g --add-config consumer.session.timeout.ms=70000",
        False,
    ),
    (
        "configs-group-bad-key",
        CFG,
        f"{BS} --alter --entity-type groups --entity-name g --add-config bogus=1",
        False,
    ),
    (
        "configs-group-bad-type",
        CFG,
        f"{BS} --alter --entity-type groups --entity-name g --add-config share.isolation.level=dirty",
        False,
    ),
    ("configs-group-describe", CFG, f"{BS} --describe --entity-type groups --entity-name g", False),
    ("configs-share-group-describe", CFG, f"{BS} --describe --entity-type groups --entity-name sg", False),
    ("configs-group-describe-bc", CFG, f"{BC} --describe --entity-type groups --entity-name g", False),
    ("client-metrics-bad-interval", CM, f"{BS} --alter --name m2 --interval 50", False),
    ("client-metrics-bad-match", CM, f"{BS} --alter --name m2 --match foo=bar", False),
    ("client-metrics-list", CM, f"{BS} --list", False),
    ("client-metrics-describe", CM, f"{BS} --describe --name m", False),
    (
        "configs-client-metrics-describe",
        CFG,
        f"{BS} --describe --entity-type client-metrics --entity-name m",
        False,
    ),
    ("configs-client-quota-describe", CFG, f"{BS} --describe --entity-type clients --entity-name c1", False),
    ("configs-scram-describe", CFG, f"{BS} --describe --entity-type users --entity-name alice", False),
    ("acls-list", ACL, f"{BS} --list", False),
    ("acls-list-bc", ACL, f"{BC} --list", False),
    ("features-describe", FEAT, f"{BS} describe", False),
    ("features-describe-bc", FEAT, f"{BC} describe", False),
    ("features-unknown", FEAT, f"{BS} upgrade --feature no.such.feature=1", False),
    ("quorum-status", MQ, f"{BS} describe --status", True),
    ("quorum-status-bc", MQ, f"{BC} describe --status", True),
    ("quorum-replication", MQ, f"{BS} describe --replication", True),
    ("quorum-replication-bc", MQ, f"{BC} describe --replication", True),
    (
        "quorum-remove-unknown",
        MQ,
        f"{BS} remove-controller --controller-id 9 --controller-directory-id {SOMEDIR}",
        False,
    ),
    (
        "quorum-remove-unknown-bc",
        MQ,
        f"{BC} remove-controller --controller-id 9 --controller-directory-id {SOMEDIR}",
        False,
    ),
    (
        "quorum-remove-invalid-bc",
        MQ,
        f"{BC} remove-controller --controller-id 9 --controller-directory-id {NODIR}",
        False,
    ),
    ("cluster-id", CL, f"cluster-id {BS}", False),
    ("cluster-id-bc", CL, f"cluster-id {BC}", False),
    ("cluster-endpoints", CL, f"list-endpoints {BS}", False),
    ("cluster-endpoints-bc", CL, f"list-endpoints {BC}", False),
    ("cluster-unregister-unknown", CL, f"unregister {BS} --id 999", False),
    ("leader-election-unclean", LE, f"{BS} --election-type unclean --topic t1 --partition 0", False),
    ("reassign-verify", RP, f"{BS} --verify --reassignment-json-file {{dir}}/reassign.json", False),
    ("reassign-list", RP, f"{BS} --list", False),
    ("log-dirs", LD, f"{BS} --describe --topic-list t1", True),
    ("consumer-groups-list", CG, f"{BS} --list", False),
    ("consumer-groups-describe", CG, f"{BS} --describe --group cg1", False),
    ("consumer-groups-describe-missing", CG, f"{BS} --describe --group nosuch", False),
    ("delegation-tokens-describe", DT, f"{BS} --describe", False),
    ("broker-api-versions", BAV, f"{BS}", False),
    ("groups-list", GR, f"{BS} --list", False),
    ("transactions-list", TX, f"{BS} list", False),
    ("get-offsets", GO, f"{BS} --topic t1", False),
    ("share-groups-list", SG, f"{BS} --list", False),
]
ROWS = STEPS + READS

# Rows whose kraftd answer differs from Kafka's on purpose: row id -> (reason, pattern kraftd's output matches).
KNOWN: dict[str, tuple[str, str]] = {
    "configs-broker-loggers-bc": (
        "kraftd is not a JVM: it has no log4j loggers to list or set as BROKER_LOGGER (8) configs",
        r"^Dynamic configs for broker-logger 1 are:$",
    ),
    "features-unknown": (
        "UpdateFeatures refusals keep kraftd's one-line wording (features are outside this change)",
        r"The controller does not support the given feature no\.such\.feature\.",
    ),
}
AFTER_FORWARDING_FIX = {"quorum-status", "quorum-replication", "quorum-remove-unknown"}
SORTED_BLOCKS = {"broker-api-versions"}

_ERROR_LINE = re.compile(r"(Exception|Error|error|rror:)")


def _files(root: Path) -> None:
    (root / "reassign.json").write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "t1", "partition": 0, "replicas": [101, 100]}]})
    )
    (root / "delete.json").write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "t1", "partition": 1, "offset": 0}]})
    )


def _view(cluster: ToolCluster, result: ToolResult, numbers: bool, sort_blocks: bool) -> tuple[int, str]:
    errors = [line for line in result.stderr.splitlines() if _ERROR_LINE.search(line)]
    text = result.stdout.rstrip() + ("\n! " + errors[0].strip() if errors else "")
    text = re.sub(r"^\[\d{4}-\d\d-\d\d [\d:,]+\] ", "", text, flags=re.M)
    text = re.sub(r"Epoch: \d+", "Epoch: <n>", text)  # the offset of the last FeatureLevelRecord
    text = cluster.normalise(text, numbers=numbers)
    if sort_blocks:  # one block per broker, in the order the tool's map happened to hold them
        text = "\n".join(sorted(re.split(r"\n(?=127\.0\.0\.1:<B)", text)))
    return result.returncode, text


def _group(cluster: ToolCluster) -> None:
    """A consumer group ``cg1`` with offsets committed on t1 (confluent-kafka), before the group rows."""
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap_server, "acks": "all"})
    for i in range(40):
        producer.produce("t1", value=b"%d" % i, partition=i % 4)
    assert producer.flush(60) == 0
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap_server, "group.id": "cg1", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["t1"])
    seen, deadline = 0, time.monotonic() + 60
    while seen < 40 and time.monotonic() < deadline:
        seen += len(consumer.consume(40, timeout=1.0))
    consumer.commit(asynchronous=False)
    consumer.close()
    assert seen == 40, seen


def _run_all(cluster: ToolCluster) -> dict[str, tuple[int, str]]:
    cluster.start()
    _files(cluster.root)
    out: dict[str, tuple[int, str]] = {}

    def run(row: Row) -> None:
        row_id, main, args, numbers = row
        out[row_id] = _view(cluster, cluster.tool(main, args.split()), numbers, row_id in SORTED_BLOCKS)

    for row in STEPS:
        if row[0] == "leader-election":
            _group(cluster)
        run(row)
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(run, READS))
    return out


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, tuple[int, str]]]]:
    classpath()
    clusters = {
        kind: ToolCluster(kind, tmp_path_factory.mktemp(f"tools-{kind}")) for kind in ("kraftd", "kafka")
    }
    try:
        with ThreadPoolExecutor(2) as pool:
            futures = {kind: pool.submit(_run_all, c) for kind, c in clusters.items()}
            yield {kind: f.result() for kind, f in futures.items()}
    finally:
        for c in clusters.values():
            c.stop()


@pytest.mark.parametrize("row_id", [r[0] for r in ROWS])
def test_tool_matches_kafka(matrix: dict[str, dict[str, tuple[int, str]]], row_id: str) -> None:
    ours, theirs = matrix["kraftd"][row_id], matrix["kafka"][row_id]
    if row_id in KNOWN:
        reason, pattern = KNOWN[row_id]
        assert ours != theirs, f"{row_id} now matches Kafka: drop it from KNOWN ({reason})"
        assert re.search(pattern, ours[1]), ours
        return
    assert ours == theirs, (
        f"{row_id}\n--- kraftd (rc {ours[0]})\n{ours[1]}\n--- kafka (rc {theirs[0]})\n{theirs[1]}"
    )


def test_docs_table_lists_every_row() -> None:
    doc = (ROOT / "docs" / "INTEROP.md").read_text()
    missing = [r[0] for r in ROWS if f"`{r[0]}`" not in doc]
    assert not missing, f"docs/INTEROP.md's operator-tools table lacks {missing}"
