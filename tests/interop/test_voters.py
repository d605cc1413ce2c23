"""KIP-853 voter removal on real kraftd processes (kraft.version 1, formatted with --initial-controllers), driven
by Kafka's own ``kafka-metadata-quorum remove-controller`` and by ``kraft-metadata-quorum remove-controller``:
3 -> 2 -> 1 voters, the second removal being the leader itself (it resigns after the commit; KAFKA-16530), and
the one-voter quorum keeps its leader past the check-quorum timeout."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.interop.kafka import MixedQuorum, classpath, metadata_quorum

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(240)]

QUORUM_TOOL = str(Path(sys.executable).with_name("kraft-metadata-quorum"))


def test_shrink_a_kraftd_quorum_with_kafkas_tool_and_ours(tmp_path: Path) -> None:
    classpath()
    q = MixedQuorum(tmp_path, ["kraftd", "kraftd", "kraftd"], bootstrap="kip853")
    with q:
        q.start_all()
        info = q.wait_leader()
        leader = info.leader_id
        victim = next(n for n in q.nodes if n.node_id != leader)
        boot = f"127.0.0.1:{q.node(leader).port}"
        done = metadata_quorum(
            f"--bootstrap-controller {boot}",
            "remove-controller",
            "--controller-id",
            str(victim.node_id),
            "--controller-directory-id",
            victim.directory_id,
            workdir=tmp_path,
        ).check()
        assert (
            done.stdout
            == f"Removed  KRaft controller {victim.node_id} with directory id {victim.directory_id}\n"
        )
        info = q.wait_for(
            "two voters",
            lambda i: (
                sorted(v.replica_id for v in i.voters)
                == sorted(n.node_id for n in q.nodes if n is not victim)
            ),
        )
        # Ours removes the leader itself: it resigns once the one-voter set has committed the change.
        survivor = next(n for n in q.nodes if n is not victim and n.node_id != leader)
        me = q.node(leader)
        all_hosts = ",".join(f"127.0.0.1:{n.port}" for n in q.nodes)
        out = subprocess.run(
            [
                QUORUM_TOOL,
                "--bootstrap-controller",
                all_hosts,
                "remove-controller",
                "--controller-id",
                str(leader),
                "--controller-directory-id",
                me.directory_id,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert (
            out.stdout == f"Removed  KRaft controller {leader} with directory id {me.directory_id}\n"
        )  # as Kafka
        info = q.wait_for(
            "the survivor to lead alone",
            lambda i: (
                i.leader_id == survivor.node_id and [v.replica_id for v in i.voters] == [survivor.node_id]
            ),
        )
        time.sleep(4.0)  # past the 3 s check-quorum timeout: a one-voter leader never resigns for it
        later = q.describe([survivor.node_id])
        assert (later.leader_id, later.leader_epoch) == (survivor.node_id, info.leader_epoch)
        assert later.high_watermark >= info.high_watermark
        assert all(n.alive() for n in q.nodes)


def test_our_remove_controller_against_kafka_controllers(tmp_path: Path) -> None:
    """kraft-metadata-quorum remove-controller against three Kafka 4.3.1 controllers (KIP-853)."""
    classpath()
    q = MixedQuorum(tmp_path, ["kafka", "kafka", "kafka"], bootstrap="kip853")
    with q:
        q.start_all()
        info = q.wait_leader(timeout=90)
        victim = next(n for n in q.nodes if n.node_id != info.leader_id)
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in q.nodes)
        args = [QUORUM_TOOL, "--bootstrap-controller", hosts, "remove-controller"]
        args += ["--controller-id", str(victim.node_id), "--controller-directory-id", victim.directory_id]
        deadline = time.monotonic() + 60
        while True:  # a new Kafka leader answers REQUEST_TIMED_OUT until its epoch has committed
            out = subprocess.run(args, capture_output=True, text=True, timeout=60)
            if out.returncode == 0 or time.monotonic() > deadline or "REQUEST_TIMED_OUT" not in out.stderr:
                break
            time.sleep(1)
        assert out.returncode == 0, out.stderr
        assert (
            out.stdout
            == f"Removed  KRaft controller {victim.node_id} with directory id {victim.directory_id}\n"
        )
        rest = sorted(n.node_id for n in q.nodes if n is not victim)
        q.wait_for(
            "Kafka's voters without the removed one", lambda i: sorted(v.replica_id for v in i.voters) == rest
        )
