"""A snapshot encoded and written by a forked child (kraftd.shell.raft.snapshot_child): the same bytes as the
in-process encoder, written durably under the snapshot's name; the parent's loop keeps turning while the
encoder holds its interpreter lock; a failing child raises, a cancelled one is killed and reaped."""

from __future__ import annotations

import asyncio
import ctypes
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from generated.partition_record import PartitionRecord
from generated.topic_record import TopicRecord
from kraftd.controller.image import MetadataImage
from kraftd.controller.image_writer import snapshot_values
from kraftd.core.log import OffsetAndEpoch
from kraftd.core.snapshots import read_snapshot
from kraftd.core.snapshotting import SnapshotPlan
from kraftd.core.types import ReplicaKey, VoterSet
from kraftd.shell.raft import snapshot_child
from kraftd.shell.raft.snapshot_child import SnapshotChildError, encode_in_child
from kraftd.shell.raft.snapshot_writer import SnapshotWriter
from kraftd.storage import snapshots
from tests.helpers.controller import apply_records, cluster

_PY = ctypes.PyDLL(None)  # a PyDLL call keeps the interpreter lock for its whole length


class _PollFd(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("events", ctypes.c_short), ("revents", ctypes.c_short)]


def _image(topics: int = 40, partitions: int = 25) -> MetadataImage:
    image, _ = cluster(5)
    for t in range(topics):
        tid = uuid.UUID(int=1000 + t)
        apply_records(image, [TopicRecord(name=f"t{t}", topic_id=tid)])
        apply_records(
            image,
            [
                PartitionRecord(
                    partition_id=p, topic_id=tid, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1 + p % 3
                )
                for p in range(partitions)
            ],
        )
    return image


def _plan(image: MetadataImage) -> SnapshotPlan:
    voters = VoterSet((ReplicaKey(1), ReplicaKey(2), ReplicaKey(3)))
    return SnapshotPlan(OffsetAndEpoch(image.offset + 1, 4), 1, voters, 1_700_000_000_000, 4096)


def test_the_child_writes_the_bytes_the_in_process_encoder_builds(tmp_path: Path) -> None:
    image = _image()
    plan = _plan(image)
    expected = plan.build(snapshot_values(image))
    snap, usage = asyncio.run(encode_in_child(image, plan, tmp_path, fsync=True))
    assert len(snap.batches) > 3  # several data batches of at most 4096 bytes
    assert snap == expected  # id, bytes, kraft.version, voters, timestamp
    on_disk = (tmp_path / snapshots.snapshot_name(plan.sid)).read_bytes()
    assert on_disk == expected.data
    assert read_snapshot(plan.sid, on_disk).values() == expected.values()  # a complete, CRC-valid snapshot
    assert usage.cpu_s >= 0 and usage.max_rss_mib > 0
    assert not list(tmp_path.glob("*.part"))


def test_the_loop_keeps_turning_while_the_encoder_holds_its_interpreter_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The encoder waits, holding its lock, until the loop has turned 100 times after the encoding began: in the
    loop's own process that wait never ends (the poll gives up after 10 s and the encode fails)."""
    r, w = os.pipe()

    def held(image: MetadataImage) -> list[bytes]:
        fd = _PollFd(r, 1, 0)  # POLLIN
        if _PY.poll(ctypes.byref(fd), 1, 10_000) != 1:
            raise RuntimeError("the loop did not turn while the encoder held its lock")
        return snapshot_values(image)

    monkeypatch.setattr(snapshot_child, "snapshot_values", held)
    image = _image(4, 5)
    plan = _plan(image)

    async def run() -> tuple[int, Any]:
        task = asyncio.ensure_future(encode_in_child(image, plan, tmp_path, fsync=False))
        turns = 0
        while turns < 100:
            await asyncio.sleep(0)
            turns += 1
        os.write(w, b"x")
        return turns, await task

    try:
        turns, (snap, _) = asyncio.run(run())
    finally:
        os.close(r)
        os.close(w)
    assert turns == 100
    assert snap == plan.build(snapshot_values(image))


def test_once_forked_the_parent_holds_no_reference_to_the_image(tmp_path: Path) -> None:
    """Contract 1a, through the snapshot writer's task: right after its first step (the fork; the child not yet
    reaped) neither the writer's frame nor ``encode_in_child``'s holds the image (before: both did, until the
    child exited and its file was read back), and the snapshot is still adopted."""
    image = _image()
    plan = _plan(image)
    storage = SimpleNamespace(partition_dir=tmp_path, log=SimpleNamespace(fsync_enabled=False))
    node = SimpleNamespace(storage=storage, config=SimpleNamespace(node_id=1), queue_tick=lambda: None)
    writer = SnapshotWriter(node, None)  # type: ignore[arg-type]

    async def run() -> int:
        unheld = sys.getrefcount(image)
        task = asyncio.ensure_future(writer._encode(plan.sid.offset, image, plan))
        await asyncio.sleep(0)  # the task's first step ran: forked, waiting for the child's exit
        held = sys.getrefcount(image) - unheld
        await task
        return held

    assert asyncio.run(run()) == 0
    assert writer._ready == plan.build(snapshot_values(image))


def test_a_failing_child_raises_and_leaves_no_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(image: MetadataImage) -> list[bytes]:
        raise RuntimeError("encoder broke")

    monkeypatch.setattr(snapshot_child, "snapshot_values", broken)
    image = _image(2, 2)
    with pytest.raises(SnapshotChildError, match="exit code 1"):
        asyncio.run(encode_in_child(image, _plan(image), tmp_path, fsync=False))
    assert snapshots.list_snapshots(tmp_path) == []


def test_a_cancelled_encode_kills_and_reaps_its_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r, w = os.pipe()

    def blocked(image: MetadataImage) -> list[bytes]:
        os.read(r, 1)  # nothing is ever written
        return []

    monkeypatch.setattr(snapshot_child, "snapshot_values", blocked)
    image = _image(2, 2)
    forked: list[int] = []
    fork = os.fork

    def recorded() -> int:
        pid = fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", recorded)

    async def run() -> None:
        task = asyncio.ensure_future(encode_in_child(image, _plan(image), tmp_path, fsync=False))
        while not forked:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(run())
    finally:
        os.close(r)
        os.close(w)
    with pytest.raises(ChildProcessError):  # reaped: no longer our child
        os.waitpid(forked[0], os.WNOHANG)
    assert snapshots.list_snapshots(tmp_path) == []


def test_the_child_encodes_at_the_lowest_cpu_priority(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "priority"

    def noted(image: MetadataImage) -> list[bytes]:
        seen.write_text(f"{os.getpriority(os.PRIO_PROCESS, 0)} {os.sched_getscheduler(0)}")
        return snapshot_values(image)

    monkeypatch.setattr(snapshot_child, "snapshot_values", noted)
    image = _image(2, 2)
    asyncio.run(encode_in_child(image, _plan(image), tmp_path, fsync=False))
    nice, policy = (int(v) for v in seen.read_text().split())
    assert nice == snapshot_child.CHILD_NICE == 19
    assert policy == os.SCHED_IDLE  # contract 2: a CPU running only the child counts as idle for a woken loop
    assert os.getpriority(os.PRIO_PROCESS, 0) < 19  # the parent's own priority is untouched
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


_ORPHAN = """
import asyncio, os, sys, time
from pathlib import Path
from kraftd.shell.raft import snapshot_child
from tests.controller.test_snapshot_child import _image, _plan

d = Path(sys.argv[1])

def blocked(image):
    (d / "child.part").write_text(str(os.getpid()))
    os.replace(d / "child.part", d / "child")
    time.sleep(3600)
    return []

snapshot_child.snapshot_values = blocked
image = _image(2, 2)
asyncio.run(snapshot_child.encode_in_child(image, _plan(image), d, fsync=False))
"""


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def test_the_child_dies_with_its_parent(tmp_path: Path) -> None:
    """A node killed with SIGKILL leaves no encoder behind (contract 2: PR_SET_PDEATHSIG)."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-c", _ORPHAN, str(tmp_path)], cwd=root, env=env)
    try:
        for _ in range(600):  # up to 60 s for the interpreter to start and fork
            if (tmp_path / "child").exists() or proc.poll() is not None:
                break
            time.sleep(0.1)
        child = int((tmp_path / "child").read_text())
        assert _state(child) not in ("gone", "Z")
    finally:
        proc.kill()
        proc.wait()
    for _ in range(600):
        if _state(child) in ("gone", "Z"):
            break
        time.sleep(0.1)
    assert _state(child) in ("gone", "Z")
