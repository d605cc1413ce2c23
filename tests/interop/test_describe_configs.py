"""Kafka's kafka-configs (ConfigCommand) with ``--bootstrap-controller`` against kraftd: alter, then describe from
every controller (DescribeConfigs, 32, linearizable by default: kraftd.shell.raft.reads).

Kafka's admin client refuses topic configs at ``--bootstrap-controller`` on its own side (UnsupportedEndpointType),
so the tool covers brokers, the broker default and broker-loggers; topic configs are covered by the chaos
histories (tests/chaos/test_linearizable_reads.py) at the wire level.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.interop.kafka import MixedQuorum, run_tool

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]

TOOL = "kafka.admin.ConfigCommand"


def configs(q: MixedQuorum, port: int, tmp_path: Path, *args: str) -> str:
    done = run_tool(TOOL, ["--bootstrap-controller", f"127.0.0.1:{port}", *args], workdir=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_alter_then_describe_from_every_controller(kraftd_quorum: MixedQuorum, tmp_path: Path) -> None:
    q = kraftd_quorum
    leader = q.wait_for("a leader", lambda i: i.leader_id >= 0).leader_id
    follower = next(n for n in q.nodes if n.node_id != leader)
    # The tool checks a broker id against DescribeCluster, which lists the controllers while no broker registered.
    bid = str(follower.node_id)
    configs(
        q,
        follower.port,
        tmp_path,
        "--entity-type",
        "brokers",
        "--entity-name",
        bid,
        "--alter",
        "--add-config",
        "log.cleaner.threads=3",
    )
    configs(
        q,
        follower.port,
        tmp_path,
        "--entity-type",
        "brokers",
        "--entity-default",
        "--alter",
        "--add-config",
        "log.retention.ms=123456",
    )
    for n in q.nodes:  # each read reflects both acknowledged writes, whichever controller answers
        out = configs(q, n.port, tmp_path, "--entity-type", "brokers", "--entity-name", bid, "--describe")
        assert f"Dynamic configs for broker {bid} are:" in out and "log.cleaner.threads=3" in out, out
        out = configs(q, n.port, tmp_path, "--entity-type", "brokers", "--entity-default", "--describe")
        assert "log.retention.ms=123456" in out, out
    out = configs(
        q, follower.port, tmp_path, "--entity-type", "broker-loggers", "--entity-name", bid, "--describe"
    )
    assert f"Dynamic configs for broker-logger {bid} are:" in out, out
