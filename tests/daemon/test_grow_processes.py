"""KIP-853 on real kraftd processes with kraftd's own CLIs: a ``--standalone`` controller grows to 3 and 5 voters
(``kraft-storage format --no-initial-controllers`` observers added with ``kraft-metadata-quorum add-controller
--command-config``) and shrinks back to 1 under load; every acknowledged record is in the survivor's log at
its offset. Then a voter's disk is replaced (a new directory id): formatted anew, added, the old key removed."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftd.shell.loadgen import parse_ack_line, record_id_of
from kraftd.storage.layout import partition_dir
from kraftd.storage.log import MetadataLog
from kraftd.storage.uuids import uuid_to_str
from kwire.records import decode_batch
from tests.interop.kafka import KRAFTD, MixedQuorum, Node

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

BIN = Path(sys.executable).parent
QUORUM_TOOL = str(BIN / "kraft-metadata-quorum")
STORAGE_TOOL = str(BIN / "kraft-storage")


def format_node(q: MixedQuorum, node: Node, how: str) -> None:
    args = [STORAGE_TOOL, "format", "-t", q.cluster_id, "-c", str(node.config), how]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    q.pin_directory_id(node)


def start_with_load(node: Node, root: Path) -> None:
    """kraftd with its hidden load generator: it appends while it leads and records every committed append."""
    ack = root / f"acks-{node.node_id}.txt"
    with node.log_file.open("ab") as out:
        cmd = [KRAFTD, "start", str(node.config), "--load-ack-file", str(ack), "--load-noop-records"]
        node.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=root)


def quorum_tool(q: MixedQuorum, *args: str, until_ok: float = 60) -> subprocess.CompletedProcess[str]:
    """Retry while the leader says REQUEST_TIMED_OUT (an observer not caught up yet, a change still committing)."""
    hosts = ",".join(f"127.0.0.1:{n.port}" for n in q.nodes if n.alive())
    deadline = time.monotonic() + until_ok
    while True:
        out = subprocess.run(
            [QUORUM_TOOL, "--bootstrap-controller", hosts, *args], capture_output=True, text=True, timeout=60
        )
        if out.returncode == 0 or time.monotonic() > deadline or "REQUEST_TIMED_OUT" not in out.stderr:
            return out
        time.sleep(0.5)


def add(q: MixedQuorum, node: Node) -> None:
    out = quorum_tool(q, "--command-config", str(node.config), "add-controller")
    assert out.returncode == 0, out.stderr + q.tails()
    assert out.stdout == (
        f"Added controller {node.node_id} with directory id {node.directory_id} and endpoints: "
        f"CONTROLLER://127.0.0.1:{node.port}\n"
    )


def remove(q: MixedQuorum, node_id: int, directory_id: str) -> None:
    out = quorum_tool(
        q, "remove-controller", "--controller-id", str(node_id), "--controller-directory-id", directory_id
    )
    assert out.returncode == 0, out.stderr + q.tails()


def voters(q: MixedQuorum, want: list[tuple[int, str]], what: str) -> None:
    q.wait_for(
        what,
        lambda i: (
            sorted((v.replica_id, uuid_to_str(v.directory_id)) for v in i.voters) == sorted(want)
            and i.leader_id in {n for n, _ in want}
        ),
        timeout=60,
    )


def acked(root: Path) -> dict[int, str]:
    out: dict[int, str] = {}
    for path in root.glob("acks-*.txt"):
        for line in path.read_text().splitlines():
            if line.count(" ") == 5:
                for offset, rid in parse_ack_line(line).records():
                    assert out.setdefault(offset, rid) == rid, f"offset {offset} acknowledged twice"
    return out


def log_records(data_dir: Path) -> dict[int, str]:
    log = MetadataLog(partition_dir(data_dir), 1 << 30)
    try:
        out: dict[int, str] = {}
        for raw in log.batches():
            batch = decode_batch(raw)
            if not batch.is_control:
                for rec in batch.records:
                    assert rec.value is not None
                    out[batch.offset_of(rec)] = record_id_of(rec.value)
        return out
    finally:
        log.close()


def test_grow_a_standalone_kraftd_to_five_and_back_to_one_under_load(tmp_path: Path) -> None:
    q = MixedQuorum(tmp_path, ["kraftd"] * 5, bootstrap="kip853", format_nodes=False)
    with q:
        first, *rest = q.nodes
        format_node(q, first, "--standalone")
        for n in rest:
            format_node(q, n, "--no-initial-controllers")
        for n in q.nodes:
            start_with_load(n, tmp_path)
        voters(q, [(1, first.directory_id)], "the standalone leader")
        members = [(1, first.directory_id)]
        for n in rest:  # 1 -> 3 -> 5, one voter at a time
            add(q, n)
            members.append((n.node_id, n.directory_id))
            voters(q, members, f"{len(members)} voters")
        mid = q.describe()
        assert len(mid.observers) == 0 and mid.high_watermark > 0
        for n in reversed(rest):  # 5 -> 3 -> 1; whoever leads, the others go first
            remove(q, n.node_id, n.directory_id)
            members.remove((n.node_id, n.directory_id))
            voters(q, members, f"{len(members)} voters")
        time.sleep(1.0)  # more appends by the one-voter leader
        final = q.describe()
        assert final.leader_id == 1
        for n in q.nodes:
            n.stop(signal.SIGTERM)
        acks = acked(tmp_path)
        assert len(acks) > 50, "the load generator barely ran"
        survivor = log_records(first.data_dir)
        lost = {o: r for o, r in acks.items() if survivor.get(o) != r}
        assert not lost, (
            f"{len(lost)} acknowledged records missing from the survivor, e.g. {list(lost.items())[:3]}"
        )


def test_replace_a_voters_disk_new_directory_id_added_old_removed(tmp_path: Path) -> None:
    q = MixedQuorum(tmp_path, ["kraftd"] * 3, bootstrap="kip853")
    with q:
        q.start_all()
        info = q.wait_leader()
        victim = next(n for n in q.nodes if n.node_id != info.leader_id)
        old_dir = victim.directory_id
        victim.stop()
        for path in sorted(victim.data_dir.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        format_node(q, victim, "--no-initial-controllers")
        assert victim.directory_id != old_dir
        victim.start()
        # The new disk's key cannot be added while the old key holds the id; the old one goes first.
        out = quorum_tool(q, "--command-config", str(victim.config), "add-controller", until_ok=5)
        assert out.returncode != 0 and "DUPLICATE_VOTER" in out.stderr, out.stderr
        remove(q, victim.node_id, old_dir)
        others = [(n.node_id, n.directory_id) for n in q.nodes if n is not victim]
        voters(q, others, "the old directory id removed")
        add(q, victim)
        voters(q, [*others, (victim.node_id, victim.directory_id)], "the new directory id added")
        assert all(n.alive() for n in q.nodes)


def test_auto_join_adds_an_observer_once_and_never_re_adds_it_after_removal(tmp_path: Path) -> None:
    """controller.quorum.auto.join.enable (KIP-853) and KAFKA-19850: the observer joins by itself; once the
    operator removes it, neither the running process nor a restarted one adds it back."""
    q = MixedQuorum(
        tmp_path,
        ["kraftd"] * 2,
        bootstrap="kip853",
        format_nodes=False,
        extra={"controller.quorum.auto.join.enable": "true"},
    )
    with q:
        first, joiner = q.nodes
        format_node(q, first, "--standalone")
        format_node(q, joiner, "--no-initial-controllers")
        q.start_all()
        both = [(1, first.directory_id), (2, joiner.directory_id)]
        voters(q, both, "node 2 auto-joined")
        remove(q, 2, joiner.directory_id)
        voters(q, both[:1], "node 2 removed")
        for restart in (False, True):
            if restart:
                joiner.stop(signal.SIGTERM)
                joiner.start()
            time.sleep(5)  # more than two auto-join periods (the fetch timeout, 2 s)
            info = q.describe()
            assert [v.replica_id for v in info.voters] == [1], f"re-added (restart={restart}): {info}"
            assert joiner.alive()
        q.wait_for("node 2 back as an observer", lambda i: [o.replica_id for o in i.observers] == [2])
