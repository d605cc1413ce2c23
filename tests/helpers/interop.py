"""Helpers shared by the interop tests: a real-process quorum that lives as long as a fixture, the conformance
battery's runs, leadership moves and log comparisons of mixed quorums, controller membership changes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftd.storage.uuids import uuid_to_str
from kraftd.testing.kafka import Node, ToolResult, metadata_quorum, run_tool
from kraftd.testing.quorum import MixedQuorum
from kwire.batches import iter_batches
from tools.conformance import doctable
from tools.conformance.model import Result
from tools.conformance.runner import discover, run_all
from tools.local_quorum import free_ports


def running_quorum(
    tmp_path_factory: pytest.TempPathFactory, name: str, kinds: list[str], **kw: object
) -> Iterator[MixedQuorum]:
    """A started :class:`MixedQuorum` of ``kinds`` under a fresh directory, stopped when the generator closes."""
    root: Path = tmp_path_factory.mktemp(name)
    q = MixedQuorum(root, kinds, **kw)  # type: ignore[arg-type]
    q.start_all()
    try:
        yield q
    finally:
        q.stop_all()


# ---- first written for tests/interop/test_prometheus.py ----------------------------------------------------
class MetricsQuorum(MixedQuorum):
    """kraftd nodes each serving Prometheus metrics on a free port."""

    def properties(self, node: Node) -> dict[str, str]:
        ports: dict[int, int] = self.__dict__.setdefault("metrics_ports", {})
        if node.node_id not in ports:
            (ports[node.node_id],) = free_ports(1)
        return {**super().properties(node), "metrics.port": str(ports[node.node_id])}


# ---- first written for tests/interop/test_conformance.py ---------------------------------------------------
NOT_ADVERTISED = "the target does not advertise"


# Controller APIs with no request that leaves the cluster unchanged: their version checks SKIP on both kinds.
STATE_CHANGING = {
    "versions.Envelope",
    "versions.BrokerRegistration",
    "versions.AllocateProducerIds",
    "versions.ControllerRegistration",
    "versions.CreateDelegationToken",
}


NOT_PROBED = "not probed"


# Quorum directory prefix -> the run's column in docs/INTEROP.md's conformance table.
DOC_RUNS = (("kafka3-snapshots", "kafka"), ("kraftd3-snapshots", "kraftd-snapshots"), ("kraftd3", "kraftd"))
INTEROP_DOC = Path(__file__).parents[2] / "docs" / "INTEROP.md"


def battery(q: MixedQuorum, intrusive: bool = True) -> dict[str, Result]:
    async def run() -> list[Result]:
        ctx = await discover("127.0.0.1", q.nodes[0].port, cluster_id=None, intrusive=intrusive, timeout=10)
        return await run_all(ctx)

    results = {r.check.id: r for r in asyncio.run(run())}
    stem = next(s for p, s in DOC_RUNS if q.root.name.startswith(p))
    statuses = {i: r.status for i, r in results.items()}
    if os.environ.get("KRAFTD_CONFORMANCE_RESULTS"):  # recorded for python -m tools.conformance.doctable
        out = Path(os.environ["KRAFTD_CONFORMANCE_RESULTS"]) / f"{stem}.json"
        out.write_text(json.dumps(statuses, indent=1))
    assert statuses == doctable.parse(INTEROP_DOC.read_text())[stem], (
        f"docs/INTEROP.md's {stem} column differs"
    )
    return results


def failures(results: dict[str, Result]) -> str:
    return "\n".join(
        f"{r.check.id}: {r.detail}\n" + "\n".join(json.dumps(e)[:600] for e in r.evidence[-4:])
        for r in results.values()
        if r.status == "FAIL"
    )


# ---- first written for tests/interop/test_mixed.py ---------------------------------------------------------
def committed_batches(q: MixedQuorum, node_id: int, below: int) -> list[tuple[int, bytes]]:
    """(base offset, raw bytes) of every batch that ends below ``below``, read from the node's segments."""
    out = []
    for seg in sorted(q.node(node_id).metadata_dir.glob("*.log")):
        for b in iter_batches(seg.read_bytes(), verify_crc=True, strict=False):
            if b.last_offset < below:
                out.append((b.base_offset, bytes(b.data)))
    return out


def assert_logs_agree(q: MixedQuorum) -> int:
    """Every live voter holds the same batches below the smallest log end offset; returns that offset."""
    info = q.wait_for(
        "every live voter at the high watermark",
        lambda i: (
            i.leader_id >= 0
            and all(v.log_end_offset == i.high_watermark for v in i.voters if q.node(v.replica_id).alive())
        ),
    )
    upto = info.high_watermark
    live = [n.node_id for n in q.nodes if n.alive()]
    logs = {i: committed_batches(q, i, upto) for i in live}
    first = logs[live[0]]
    assert first, "no committed batch to compare"
    for i in live[1:]:
        assert [o for o, _ in logs[i]] == [o for o, _ in first], f"batch offsets differ: node {i}"
        assert logs[i] == first, f"node {i} ({q.node(i).kind}) holds different bytes than node {live[0]}"
    return upto


def move_leader(q: MixedQuorum, sig: int) -> tuple[int, float]:
    """Signal the leader, wait for a successor, restart the old leader.

    Returns the new leader and the seconds from the old leader's exit to the new epoch's leader being known
    (a JVM's shutdown takes its own time before the process exits; a successor ordered by EndQuorumEpoch is
    elected around the exit, one that waits out its fetch timeout only a fetch timeout after it)."""
    old = q.wait_leader()
    q.node(old.leader_id).stop(sig)
    t0 = time.monotonic()
    new = q.wait_for("a new leader", lambda i: i.leader_id >= 0 and i.leader_epoch > old.leader_epoch)
    elapsed = time.monotonic() - t0
    q.node(old.leader_id).start()
    return new.leader_id, elapsed


def lead_with(q: MixedQuorum, kind: str, attempts: int = 8) -> int:
    """kill -9 leaders of the other kind until a node of ``kind`` leads."""
    leader = q.wait_leader().leader_id
    for _ in range(attempts):
        if q.node(leader).kind == kind:
            return leader
        leader, _ = move_leader(q, signal.SIGKILL)
    raise AssertionError(f"no {kind} node led after {attempts} elections\n{q.tails()}")


# ---- first written for tests/interop/test_add_controllers.py -----------------------------------------------
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


def remove_args(q: MixedQuorum, node_id: int) -> list[str]:
    return [
        "remove-controller",
        "--controller-id",
        str(node_id),
        "--controller-directory-id",
        q.node(node_id).directory_id,
    ]
