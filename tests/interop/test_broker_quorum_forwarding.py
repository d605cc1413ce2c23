"""Quorum requests through a real Kafka 4.3.1 broker (issue 21 §1): a broker forwards DescribeQuorum (55),
AddRaftVoter (80) and RemoveRaftVoter (81) to the active controller inside an Envelope (58), as KafkaApis does.

Invariants, on a broker over three kraftd controllers and over three Kafka controllers (kraftd.testing.broker_cluster):
1. Kafka's ``kafka-metadata-quorum --bootstrap-server <broker>`` (4.3.1 and 3.9.2) ``describe --status`` and
   ``--replication`` exit 0, and their output equals the same command's through a broker on Kafka's controllers,
   numbers that depend on timing and history (offsets, epochs, lags, timestamps, ids) aside.
2. ``add-controller`` then ``remove-controller`` of the observing fourth controller succeed through the broker
   (Kafka's tool, then ours); removing a controller that is not a voter fails with VoterNotFoundException (ours:
   VOTER_NOT_FOUND), as on Kafka's controllers.
3. ``kraft-metadata-quorum --bootstrap-server <broker>`` describes the same quorum.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator

import pytest

from kraftd.testing import broker_cluster
from kraftd.testing.broker_cluster import BIN, BrokerCluster
from tests.interop.kafka import ToolResult, classpath, metadata_quorum

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(600)]
SEEN: dict[tuple[str, str], str] = {}  # (check, kind) -> normalized output, compared across kinds


@pytest.fixture(scope="module", params=["kafka", "kraftd"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerCluster]:
    classpath()
    c = broker_cluster.start(tmp_path_factory.mktemp(f"fwd-{request.param}"), request.param)
    try:
        yield c
    finally:
        c.stop()


def normalized(text: str, ids: list[str]) -> str:
    """Numbers that depend on timing and history, ids and ports replaced by placeholders."""
    for i in (*ids, "KVoXqv5kT1KwOr3FCqiUmg"):
        text = text.replace(i, "<id>")
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", text)
    text = re.sub(r"-?\d+", "N", text)
    return re.sub(r"[ \t]+", " ", text)


def compare(check: str, c: BrokerCluster, text: str) -> None:
    """Invariant 1: the same normalized output as on the other kind's cluster (when that one has run)."""
    kind = c.kind
    SEEN[(check, kind)] = normalized(text, c.ids())
    other = SEEN.get((check, "kafka" if kind == "kraftd" else "kraftd"))
    if other is not None:
        assert SEEN[(check, kind)] == other, f"{check}: {kind}\n{text}\nvs the other kind:\n{other}"


def ours(c: BrokerCluster, *args: str) -> ToolResult:
    cmd = [str(BIN / "kraft-metadata-quorum"), "--bootstrap-server", c.bootstrap, *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return ToolResult(cmd, done.returncode, done.stdout, done.stderr)


def kafka_tool(c: BrokerCluster, *args: str, version: str = "4.3.1") -> ToolResult:
    return metadata_quorum(f"--bootstrap-server {c.bootstrap}", *args, workdir=c.quorum.root, version=version)


def voters(c: BrokerCluster) -> list[int]:
    return sorted(v.replica_id for v in c.quorum.describe().voters)


def wait_voters(c: BrokerCluster, want: list[int]) -> None:
    deadline = time.monotonic() + 60
    while voters(c) != want:
        assert time.monotonic() < deadline, f"voters {voters(c)}, want {want}"
        time.sleep(0.3)


@pytest.mark.parametrize("version", ["4.3.1", "3.9.2"])
@pytest.mark.parametrize("what", ["--status", "--replication"])
def test_kafka_metadata_quorum_describe_through_a_broker(
    cluster: BrokerCluster, what: str, version: str
) -> None:
    out = kafka_tool(cluster, "describe", what, version=version)
    assert out.returncode == 0, out.stderr[-3000:]
    assert shape(out.stdout, cluster.quorum.describe().leader_id), out.stdout
    compare(f"describe {what} {version}", cluster, out.stdout)


def shape(text: str, leader: int) -> bool:
    """The quorum the output describes: voters 1-3 led by ``leader``, observers 4 (the spare controller) and 100
    (the broker); for --replication one row per node with its status."""
    if text.startswith("ClusterId:"):
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        ids = [re.findall(r'"id": (\d+)', fields[k]) for k in ("CurrentVoters", "CurrentObservers")]
        return int(fields["LeaderId"]) == leader and [sorted(map(int, i)) for i in ids] == [
            [1, 2, 3],
            [4, 100],
        ]
    rows = {int(r.split()[0]): r.split()[-1] for r in text.splitlines()[1:] if r.strip()}
    return rows == {
        leader: "Leader",
        **{i: "Follower" for i in {1, 2, 3} - {leader}},
        4: "Observer",
        100: "Observer",
    }


def test_our_tool_describes_through_a_broker(cluster: BrokerCluster) -> None:
    for what in ("--status", "--replication"):
        out = ours(cluster, "describe", what)
        assert out.returncode == 0, out.stderr
        assert shape(out.stdout, cluster.quorum.describe().leader_id), out.stdout
        compare(f"ours describe {what}", cluster, out.stdout)


@pytest.mark.parametrize("tool", ["kafka", "ours"])
def test_add_and_remove_controller_through_a_broker(cluster: BrokerCluster, tool: str) -> None:
    spare = cluster.spare

    def run(*args: str) -> ToolResult:
        """A leader answers REQUEST_TIMED_OUT while the last voter change or an observer's catch-up is pending."""
        deadline = time.monotonic() + 60
        while True:
            out = kafka_tool(cluster, *args) if tool == "kafka" else ours(cluster, *args)
            text = out.stdout + out.stderr
            if (
                out.returncode == 0
                or time.monotonic() > deadline
                or not re.search(r"TIMED_?OUT|Timeout", text, re.I)
            ):
                return out
            time.sleep(1)

    added = run("--command-config", str(spare.config), "add-controller")
    assert added.returncode == 0, added.stderr[-3000:]
    assert added.stdout.startswith(f"Added controller 4 with directory id {spare.directory_id}"), added.stdout
    wait_voters(cluster, [1, 2, 3, 4])
    removed = run(
        "remove-controller", "--controller-id", "4", "--controller-directory-id", spare.directory_id
    )
    assert removed.returncode == 0, removed.stderr[-3000:]
    assert removed.stdout == f"Removed  KRaft controller 4 with directory id {spare.directory_id}\n"
    wait_voters(cluster, [1, 2, 3])
    compare(f"add/remove {tool}", cluster, added.stdout + removed.stdout)


@pytest.mark.parametrize(
    ("directory_id", "kafka_error", "our_error"),
    [
        ("KVoXqv5kT1KwOr3FCqiUmg", "VoterNotFoundException", "VOTER_NOT_FOUND"),
        (
            "AAAAAAAAAAAAAAAAAAAAAA",
            "InvalidRequestException",
            "INVALID_REQUEST",
        ),  # the zero id names no voter
    ],
)
@pytest.mark.parametrize("tool", ["kafka", "ours"])
def test_remove_controller_that_is_not_a_voter_through_a_broker(
    cluster: BrokerCluster, tool: str, directory_id: str, kafka_error: str, our_error: str
) -> None:
    args = ("remove-controller", "--controller-id", "9", "--controller-directory-id", directory_id)
    out = kafka_tool(cluster, *args) if tool == "kafka" else ours(cluster, *args)
    assert out.returncode == 1
    want = kafka_error if tool == "kafka" else our_error
    assert want in out.stderr, out.stderr[-3000:]
    first = next(line for line in out.stderr.splitlines() if want in line)
    compare(f"remove 9 {directory_id} {tool}", cluster, first)
