"""Kafka's own ``kafka-features`` upgrades a static (kraft.version 0) kraftd quorum to kraft.version 1 and is
refused a downgrade with Kafka's message; afterwards the voter set carries directory ids and a voter can be
removed (KIP-853)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftd.storage.uuids import uuid_to_str
from tests.interop.kafka import MixedQuorum, ToolResult, classpath, run_tool

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(240)]


def features(q: MixedQuorum, *args: str) -> ToolResult:
    hosts = ",".join(f"127.0.0.1:{n.port}" for n in q.nodes)
    return run_tool(
        "org.apache.kafka.tools.FeatureCommand", ["--bootstrap-controller", hosts, *args], workdir=q.root
    )


def test_kafka_features_upgrades_a_static_kraftd_quorum_to_kraft_version_1(tmp_path: Path) -> None:
    classpath()
    q = MixedQuorum(tmp_path, ["kraftd"] * 3, bootstrap="static")
    with q:
        q.start_all()
        q.wait_leader()
        deadline = time.monotonic() + 60
        while True:  # the followers report to a new leader within a fetch timeout
            up = features(q, "upgrade", "--feature", "kraft.version=1")
            if up.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert up.returncode == 0, up.stdout + up.stderr[-3000:] + q.tails()
        assert up.stdout == "kraft.version was upgraded to 1.\n"
        for n in q.nodes:
            q.pin_directory_id(n)  # static formatting drew the directory ids: read them from meta.properties
        info = q.wait_for(
            "directory ids in the voter set", lambda i: all(v.directory_id.int for v in i.voters)
        )
        assert sorted((v.replica_id, uuid_to_str(v.directory_id)) for v in info.voters) == sorted(
            (n.node_id, n.directory_id) for n in q.nodes
        )
        desc = features(q, "describe")
        shown = r"Feature: kraft.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1\s"
        assert re.search(shown, desc.stdout), desc.stdout
        victim = next(n for n in q.nodes if n.node_id != info.leader_id)
        tool = str(Path(sys.executable).with_name("kraft-metadata-quorum"))
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in q.nodes)
        args = ["--controller-id", str(victim.node_id), "--controller-directory-id", victim.directory_id]
        out = subprocess.run(
            [tool, "--bootstrap-controller", hosts, "remove-controller", *args],
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
        rest = sorted(n.node_id for n in q.nodes if n is not victim)
        q.wait_for("a voter removed", lambda i: sorted(v.replica_id for v in i.voters) == rest)
        down = features(q, "downgrade", "--feature", "kraft.version=0")
        assert down.returncode != 0
        assert "because the new version is a downgrade" in down.stdout + down.stderr, (
            down.stdout + down.stderr
        )
