"""KIP-853 growth across kinds: a mixed quorum (Kafka 4.3.1 controllers and kraftd) grows 1 -> 3 and shrinks back
to 1 with Kafka's own ``kafka-metadata-quorum add-controller/remove-controller`` and kraftd's
``kraft-metadata-quorum``, starting once from a kraftd ``--standalone`` leader and once from a Kafka one, so each
tool adds a controller of the other kind through a leader of either kind. The joining controllers are formatted
``--no-initial-controllers`` (observers that find the leader through ``controller.quorum.bootstrap.servers``)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftd.storage.uuids import uuid_to_str
from tests.interop.kafka import (
    MixedQuorum,
    Node,
    ToolResult,
    classpath,
    metadata_quorum,
    protocol_complaints,
    run_tool,
)

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]

BIN = Path(sys.executable).parent


def format_node(q: MixedQuorum, node: Node, how: str) -> None:
    args = ["format", "-t", q.cluster_id, "-c", str(node.config), "--release-version", q.release_version, how]
    if node.kind == "kafka":
        run_tool("kafka.tools.StorageTool", args, workdir=q.root).check()
    else:
        done = subprocess.run([str(BIN / "kraft-storage"), *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    q.pin_directory_id(node)


def hosts(q: MixedQuorum) -> str:
    return ",".join(f"127.0.0.1:{n.port}" for n in q.nodes if n.alive())


def retried(run: object, what: str, q: MixedQuorum) -> ToolResult:
    """A leader answers REQUEST_TIMED_OUT while an observer catches up or the last change commits: retry. Kafka's
    Admin client retries such answers itself until its own 60 s API timeout, which on a loaded machine can outlast
    the tool's subprocess timeout: that counts as a retryable answer too."""
    deadline = time.monotonic() + 150
    while True:
        try:
            out: ToolResult = run()  # type: ignore[operator]
        except subprocess.TimeoutExpired as exc:
            if time.monotonic() > deadline:
                raise
            out = ToolResult([str(c) for c in exc.cmd], 1, "", "TimeoutException: the tool did not finish")
        if (
            out.returncode == 0
            or time.monotonic() > deadline
            or not any(x in out.stdout + out.stderr for x in ("REQUEST_TIMED_OUT", "TimeoutException"))
        ):
            assert out.returncode == 0, f"{what}: {out.stdout}\n{out.stderr[-3000:]}\n{q.tails()}"
            return out
        time.sleep(1)


def ours(q: MixedQuorum, *args: str) -> ToolResult:
    cmd = [str(BIN / "kraft-metadata-quorum"), "--bootstrap-controller", hosts(q), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return ToolResult(cmd, done.returncode, done.stdout, done.stderr)


def kafkas(q: MixedQuorum, *args: str) -> ToolResult:
    return metadata_quorum(f"--bootstrap-controller {hosts(q)}", *args, workdir=q.root)


def added_line(node: Node) -> str:
    return (
        f"Added controller {node.node_id} with directory id {node.directory_id} and endpoints: "
        f"CONTROLLER://127.0.0.1:{node.port}\n"
    )


def wait_voters(q: MixedQuorum, ids: list[int], what: str) -> int:
    info = q.wait_for(
        what,
        lambda i: sorted(v.replica_id for v in i.voters) == sorted(ids) and i.leader_id in ids,
        timeout=90,
    )
    for v in info.voters:
        assert uuid_to_str(v.directory_id) == q.node(v.replica_id).directory_id
    return info.leader_id


@pytest.mark.parametrize("first", ["kraftd", "kafka"])
def test_mixed_quorum_grows_to_three_and_back_with_both_tools(tmp_path: Path, first: str) -> None:
    classpath()
    other = "kafka" if first == "kraftd" else "kraftd"
    q = MixedQuorum(
        tmp_path,
        [first, other, first],
        bootstrap="kip853",
        format_nodes=False,
        extra={"controller.quorum.auto.join.enable": "false"},
    )
    with q:
        one, two, three = q.nodes
        format_node(q, one, "--standalone")
        format_node(q, two, "--no-initial-controllers")
        format_node(q, three, "--no-initial-controllers")
        q.start_all()
        wait_voters(q, [1], "the standalone leader")
        q.wait_for("both observers", lambda i: {o.replica_id for o in i.observers} >= {2, 3}, timeout=90)
        # Kafka's tool adds node 2 (the other kind) through node 1; ours adds node 3.
        out = retried(
            lambda: kafkas(q, "--command-config", str(two.config), "add-controller"), "kafka adds 2", q
        )
        assert out.stdout == added_line(two)
        wait_voters(q, [1, 2], "two voters")
        out = retried(lambda: ours(q, "--command-config", str(three.config), "add-controller"), "we add 3", q)
        assert out.stdout == added_line(three)
        wait_voters(q, [1, 2, 3], "three voters")
        # Ours removes the leader itself (it resigns after the commit): 2 or 3 leads next, of either kind.
        args = ["remove-controller", "--controller-id", "1", "--controller-directory-id", one.directory_id]
        retried(lambda: ours(q, *args), "we remove the leader 1", q)
        leader = wait_voters(q, [2, 3], "voters 2 and 3")
        gone = 3 if leader == 2 else 2
        args = [
            "remove-controller",
            "--controller-id",
            str(gone),
            "--controller-directory-id",
            q.node(gone).directory_id,
        ]
        retried(lambda: kafkas(q, *args), f"kafka removes {gone}", q)
        wait_voters(q, [leader], "one voter again")
        for n in q.nodes:
            if n.kind == "kafka":
                assert protocol_complaints(n.log_text()) == [], n.tail()
