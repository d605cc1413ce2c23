"""Kafka's own kafka-metadata-quorum (MetadataQuorumCommand) against kraftd, and kraftd's tool against Kafka.

Reference: org.apache.kafka.tools.MetadataQuorumCommand (Kafka 4.3.1), both bootstrap flows:
``--bootstrap-controller`` (DescribeCluster to find the active controller, then DescribeQuorum to it) and
``--bootstrap-server`` (Metadata, then DescribeQuorum to a broker, which kraftd relays to its leader).
"""

from __future__ import annotations

import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.interop.kafka import MixedQuorum, metadata_quorum, protocol_complaints

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]

QUORUM_TOOL = str(Path(sys.executable).with_name("kraft-metadata-quorum"))
# Fields whose value is a clock reading or a lag measured at the instant of the request.
TIMING_KEYS = ("MaxFollowerLagTimeMs",)


def status_fields(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key in (
            "ClusterId",
            "LeaderId",
            "LeaderEpoch",
            "HighWatermark",
            "MaxFollowerLag",
            "MaxFollowerLagTimeMs",
            "CurrentVoters",
            "CurrentObservers",
        ):
            out[key] = value.strip()
    return out


def replication_rows(text: str) -> list[list[str]]:
    """Rows of ``describe --replication`` without the timing columns (LastFetch/LastCaughtUp timestamps)."""
    rows = [line.split("\t") for line in text.splitlines() if line.strip()]
    header = [c.strip() for c in rows[0]]
    keep = [i for i, c in enumerate(header) if c not in ("LastFetchTimestamp", "LastCaughtUpTimestamp")]
    return [[row[i].strip() for i in keep] for row in rows]


def ours(bootstrap: str, *args: str) -> str:
    flag, _, target = bootstrap.partition(" ")
    done = subprocess.run([QUORUM_TOOL, flag, target, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def stable(q: MixedQuorum, quiet_s: float = 2.0) -> None:
    """Wait until every voter has fetched up to the high watermark and the log has stopped growing for
    ``quiet_s`` (kraftd controllers write their bootstrap and registration records in their first seconds), so
    both tools read the same numbers."""
    deadline = time.monotonic() + 60
    while True:
        first = q.wait_for(
            "every voter caught up",
            lambda i: i.leader_id >= 0 and all(v.log_end_offset == i.high_watermark for v in i.voters),
        )
        time.sleep(quiet_s)
        again = q.describe()
        if (again.leader_id, again.leader_epoch, again.high_watermark) == (
            first.leader_id,
            first.leader_epoch,
            first.high_watermark,
        ) and all(v.log_end_offset == again.high_watermark for v in again.voters):
            return
        assert time.monotonic() < deadline, f"the quorum never went quiet: {first} then {again}"


@pytest.mark.parametrize("flag", ["--bootstrap-controller", "--bootstrap-server"])
def test_kafka_tool_describes_kraftd_from_every_node(kraftd_quorum: MixedQuorum, flag: str) -> None:
    q = kraftd_quorum
    q.wait_leader()
    stable(q)
    for node in q.nodes:
        bootstrap = f"{flag} 127.0.0.1:{node.port}"
        theirs = metadata_quorum(bootstrap, "describe", "--status", workdir=q.root).check()
        mine = ours(bootstrap, "describe", "--status")
        t, m = status_fields(theirs.stdout), status_fields(mine)
        assert len(t) == 8, theirs.stdout + theirs.stderr
        for key in TIMING_KEYS:
            t.pop(key), m.pop(key)
        assert t == m, f"node {node.node_id}:\nKafka's tool:\n{theirs.stdout}\nours:\n{mine}"
        assert t["CurrentVoters"].count('"id"') == 3 and t["CurrentObservers"] == "[]"
        for n in q.nodes:
            assert f'"directoryId": "{n.directory_id}"' in t["CurrentVoters"]
        theirs = metadata_quorum(bootstrap, "describe", "--replication", workdir=q.root).check()
        assert replication_rows(theirs.stdout) == replication_rows(
            ours(bootstrap, "describe", "--replication")
        )


def test_kafka_tool_follows_a_new_kraftd_leader_after_kill_9(kraftd_quorum: MixedQuorum) -> None:
    q = kraftd_quorum
    old = q.wait_leader()
    q.node(old.leader_id).stop(signal.SIGKILL)
    try:
        new = q.wait_leader(exclude=old.leader_id)
        for node in q.nodes:
            if not node.alive():
                continue
            out = metadata_quorum(
                f"--bootstrap-controller 127.0.0.1:{node.port}", "describe", "--status", workdir=q.root
            ).check()
            fields = status_fields(out.stdout)
            assert int(fields["LeaderId"]) == new.leader_id != old.leader_id
            assert int(fields["LeaderEpoch"]) > old.leader_epoch
    finally:
        q.node(old.leader_id).start()
    stable(q)


def test_kraftd_tool_prints_what_kafka_tool_prints_for_kafka_controllers(kafka_quorum: MixedQuorum) -> None:
    q = kafka_quorum
    q.wait_leader()
    stable(q)
    bootstrap = f"--bootstrap-controller 127.0.0.1:{q.nodes[0].port}"
    theirs = metadata_quorum(bootstrap, "describe", "--status", workdir=q.root).check().stdout
    mine = ours(bootstrap, "describe", "--status")
    drop = lambda text: [ln for ln in text.splitlines() if not ln.startswith(TIMING_KEYS)]  # noqa: E731
    assert drop(mine) == drop(theirs)
    theirs = metadata_quorum(bootstrap, "describe", "--replication", workdir=q.root).check().stdout
    assert replication_rows(ours(bootstrap, "describe", "--replication")) == replication_rows(theirs)
    theirs = metadata_quorum(bootstrap, "describe", "--replication", "--human-readable", workdir=q.root)
    mine = ours(bootstrap, "describe", "--replication", "--human-readable")
    assert replication_rows(mine) == replication_rows(theirs.check().stdout)


@pytest.mark.parametrize("version", ["3.9.2"])
def test_older_kafka_tool_describes_kraftd(kraftd_quorum: MixedQuorum, version: str) -> None:
    """The matrix entry: Kafka 3.9's tool negotiates down (DescribeCluster v1) and reads the same quorum."""
    q = kraftd_quorum
    stable(q)
    bootstrap = f"--bootstrap-controller 127.0.0.1:{q.nodes[0].port}"
    theirs = metadata_quorum(bootstrap, "describe", "--status", workdir=q.root, version=version).check()
    t, m = status_fields(theirs.stdout), status_fields(ours(bootstrap, "describe", "--status"))
    for key in TIMING_KEYS:
        t.pop(key), m.pop(key)
    assert t == m


def test_the_log_check_catches_a_request_kafka_cannot_parse(kafka_quorum: MixedQuorum) -> None:
    """The mixed-quorum tests trust protocol_complaints(); show it flags what Kafka's SocketServer logs for a
    request its parser rejects (a Vote v2 whose body ends inside a compact string)."""
    q = kafka_quorum
    node = q.nodes[0]
    before = len(protocol_complaints(node.log_text()))
    client_id = b"kraftd-interop-test"
    header = struct.pack(">hhih", 52, 2, 7, len(client_id)) + client_id + b"\x00"
    body = b"\x17abc"  # a compact string declared 22 bytes long, 3 given
    with socket.create_connection(("127.0.0.1", node.port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        assert s.recv(64) == b"", "Kafka closes the connection of a request it cannot parse"
    deadline = time.monotonic() + 10
    while len(protocol_complaints(node.log_text())) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    found = protocol_complaints(node.log_text())[before:]
    assert any("InvalidRequestException" in line and "VOTE" in line for line in found), found
