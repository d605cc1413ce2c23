"""The shell in-process: persistence mapping, handler answers, a one-node quorum, fatal fsync failures."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from generated.describe_cluster_request import DescribeClusterRequest
from generated.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
from generated.metadata_request import MetadataRequest, MetadataRequestTopic
from kraftd.config import Endpoint, load_config
from kraftd.core import messages as core_messages
from kraftd.core.client import QuorumInfo, ReplicaInfo
from kraftd.core.effects import PersistElectionState, SendRequest
from kraftd.core.replication import NotLeaderError
from kraftd.core.types import ElectionState, ReplicaKey, VoterSet
from kraftd.shell.apis import handlers, table
from kraftd.shell.net.transport import KafkaServer, PeerConnection
from kraftd.shell.node import ControllerNode
from kraftd.shell.raft.persistence import QuorumSetup, to_core_state, to_record
from kraftd.storage import fsio
from kraftd.storage.errors import LogIOError
from kraftd.storage.layout import open_node_storage, partition_dir
from kraftd.storage.log import MetadataLog
from kraftd.storage.quorum_state import QuorumStateFile
from kraftd.storage.uuids import uuid_to_str
from kwire.errors import ErrorCode, KraftError
from kwire.metadata_frame import decode_metadata_record
from kwire.records import decode_batch
from tests.daemon.cluster import CLUSTER_ID, free_ports
from tests.daemon.conftest import write_properties
from tools.storage_cli import format_directory

DIR = uuid.UUID(int=77)


def test_election_state_maps_both_ways() -> None:
    dyn = QuorumSetup(VoterSet((ReplicaKey(1, DIR),)), {}, 1)
    static = QuorumSetup(VoterSet.of(1, 2, 3), {}, 0)
    state = ElectionState(4, -1, ReplicaKey(2, DIR))
    rec = to_record(state, dyn)
    assert (rec.data_version, rec.leader_epoch, rec.voted_id, rec.voted_directory_id) == (1, 4, 2, DIR)
    assert to_core_state(rec) == state
    rec0 = to_record(ElectionState(5, 3, None), static)
    assert (rec0.data_version, rec0.leader_id, rec0.voted_id, rec0.current_voters) == (0, 3, -1, (1, 2, 3))
    assert to_core_state(rec0) == ElectionState(5, 3, None)
    assert to_core_state(to_record(ElectionState(1, -1, ReplicaKey(3)), static)) == ElectionState(
        1, -1, ReplicaKey(3)
    )


VIEW = handlers.ClusterView(
    "cid",
    {1: (Endpoint("CONTROLLER", "127.0.0.1", 9001),), 2: (Endpoint("CONTROLLER", "127.0.0.1", 9002),)},
    2,
)


def test_describe_quorum_answers() -> None:
    req = DescribeQuorumRequest([TopicData("__cluster_metadata", [PartitionData(0)])])
    info = QuorumInfo(2, 7, 30, (ReplicaInfo(2, DIR, 31, 5, 5), ReplicaInfo(1, None, 29, 4, 3)), ())
    resp = handlers.describe_quorum_response(req, info, VIEW)
    part = resp.topics[0].partitions[0]
    assert (part.error_code, part.leader_id, part.leader_epoch, part.high_watermark) == (0, 2, 7, 30)
    assert [(v.replica_id, v.replica_directory_id, v.log_end_offset) for v in part.current_voters] == [
        (2, DIR, 31),
        (1, uuid.UUID(int=0), 29),
    ]
    assert [(n.node_id, n.listeners[0].port) for n in resp.nodes] == [(2, 9002), (1, 9001)]
    not_leader = handlers.describe_quorum_response(req, None, VIEW).topics[0].partitions[0]
    assert not_leader.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    wrong = DescribeQuorumRequest([TopicData("other", [PartitionData(0)])])
    assert handlers.describe_quorum_response(wrong, info, VIEW).topics[0].partitions[0].error_code == 3


def test_describe_cluster_and_metadata_answers() -> None:
    resp = handlers.describe_cluster_response(DescribeClusterRequest(endpoint_type=2), VIEW)
    assert (resp.endpoint_type, resp.cluster_id, resp.controller_id) == (2, "cid", 2)
    assert [(b.broker_id, b.port) for b in resp.brokers] == [(1, 9001), (2, 9002)]
    md = handlers.metadata_response(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), VIEW)
    assert (md.cluster_id, md.controller_id, len(md.brokers)) == ("cid", 2, 2)
    assert [(t.name, t.error_code) for t in md.topics] == [("t", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert handlers.metadata_response(MetadataRequest(topics=None), VIEW).topics == []


def single_node(tmp_path: Path) -> ControllerNode:
    cfg = tmp_path / "s.properties"
    if not cfg.exists():  # the first call formats; later calls restart the same node
        (port,) = free_ports(1)
        write_properties(
            cfg,
            1,
            port,
            tmp_path / "d",
            voters=f"1@127.0.0.1:{port}",
            extra={"controller.quorum.append.linger.ms": "0"},
        )
        format_directory(load_config(cfg), CLUSTER_ID)
    return ControllerNode(load_config(cfg), seed=1)


def test_single_node_commits_and_persists(tmp_path: Path) -> None:
    async def run() -> list[int]:
        node = single_node(tmp_path)
        await node.start()
        try:
            leader = await node.wait_for_leader(10)
            assert leader.leader_id == 1
            offsets = await asyncio.gather(*(node.append([b"r%d" % i]) for i in range(20)))
            conn = PeerConnection("127.0.0.1", node.port, client_id="t", timeout_ms=3000)
            try:
                resp = await conn.request(
                    DescribeQuorumRequest([TopicData("__cluster_metadata", [PartitionData(0)])])
                )
            finally:
                await conn.close()
            assert resp.topics[0].partitions[0].high_watermark > max(offsets)
            return offsets
        finally:
            await node.stop()

    offsets = asyncio.run(run())
    assert sorted(offsets) == offsets and len(set(offsets)) == 20
    state = QuorumStateFile(partition_dir(tmp_path / "d")).read()
    assert state is not None and state.leader_id == 1 and state.data_version == 0
    log = MetadataLog(partition_dir(tmp_path / "d"), 1 << 30)
    assert log.end_offset > max(offsets)
    log.close()


def test_failed_fsync_stops_the_node_without_acknowledging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def run() -> BaseException | None:
        node = single_node(tmp_path)
        await node.start()
        await node.wait_for_leader(10)
        await node.append([b"before"])

        def broken(fd: int) -> None:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(fsio.os, "fsync", broken)
        with pytest.raises(NotLeaderError):
            await asyncio.wait_for(node.append([b"after"]), 10)
        with pytest.raises(LogIOError):
            await asyncio.wait_for(node.wait_stopped(), 10)
        monkeypatch.undo()
        open_node_storage(node.config).close()  # the stopped node released its directory lock
        return node.fatal

    assert isinstance(asyncio.run(run()), LogIOError)


def test_restart_recovers_log_and_quorum_state(tmp_path: Path) -> None:
    async def run_once(values: list[bytes]) -> tuple[int, int]:
        node = single_node(tmp_path)
        await node.start()
        try:
            leader = await node.wait_for_leader(10)
            last = -1
            for v in values:
                last = await node.append([v])
            return leader.epoch, last
        finally:
            await node.stop(graceful=False)

    epoch1, last1 = asyncio.run(run_once([b"a", b"b"]))
    epoch2, last2 = asyncio.run(run_once([b"c"]))
    assert epoch2 > epoch1  # the persisted epoch survived: a restart never reuses an epoch
    assert last2 > last1
    log = MetadataLog(partition_dir(tmp_path / "d"), 1 << 30)
    values = []
    for raw in log.batches():
        batch = decode_batch(raw)
        if not batch.is_control:
            values += [r.value for r in batch.records]
    log.close()
    # The first leader also wrote the bootstrap records (once: the restarted leader found metadata.version).
    metadata = []
    for v in values:
        try:
            metadata.append(type(decode_metadata_record(v)[2]).__name__)
        except KraftError:
            continue
    assert [v for v in values if v in (b"a", b"b", b"c")] == [b"a", b"b", b"c"]
    assert len(values) == 3 + len(metadata) and metadata.count("BeginTransactionRecord") == 1


def test_dynamic_quorum_from_initial_controllers(tmp_path: Path) -> None:
    ports = free_ports(3)
    dirs = [uuid.UUID(int=1000 + i) for i in range(3)]
    spec = ",".join(
        f"{i + 1}@127.0.0.1:{p}:{uuid_to_str(d)}" for i, (p, d) in enumerate(zip(ports, dirs, strict=True))
    )
    configs = []
    for i, port in enumerate(ports):
        cfg = write_properties(tmp_path / f"{i}.properties", i + 1, port, tmp_path / f"d{i}")
        format_directory(load_config(cfg), CLUSTER_ID, initial_controllers=spec)
        configs.append(load_config(cfg))

    async def run() -> tuple[int, list[tuple[int, uuid.UUID]], list[int]]:
        nodes = [ControllerNode(c, seed=i) for i, c in enumerate(configs)]
        for n in nodes:
            await n.start()
        try:
            leader = await nodes[0].wait_for_leader(15)
            conn = PeerConnection("127.0.0.1", ports[0], client_id="t", timeout_ms=3000)
            try:
                for _ in range(50):
                    resp = await conn.request(
                        DescribeQuorumRequest([TopicData("__cluster_metadata", [PartitionData(0)])])
                    )
                    part = resp.topics[0].partitions[0]
                    if part.error_code == 0:
                        break
                    await asyncio.sleep(0.1)
            finally:
                await conn.close()
            voters = sorted((v.replica_id, v.replica_directory_id) for v in part.current_voters)
            return leader.leader_id, voters, sorted(n.node_id for n in resp.nodes)
        finally:
            for n in nodes:
                await n.stop()

    leader, voters, node_ids = asyncio.run(run())
    assert leader in (1, 2, 3)
    assert voters == [(1, dirs[0]), (2, dirs[1]), (3, dirs[2])]
    assert node_ids == [1, 2, 3]
    state = QuorumStateFile(partition_dir(tmp_path / "d0")).read()
    assert state is not None and state.data_version == 1


def test_no_voter_set_starts_as_an_observer_that_asks_the_bootstrap_servers(tmp_path: Path) -> None:
    """--no-initial-controllers (KIP-853): no voter set, so an observer; with only itself as bootstrap server it
    finds no leader and stays an unattached observer (it neither elects itself nor stops)."""
    (port,) = free_ports(1)
    cfg = write_properties(tmp_path / "s.properties", 1, port, tmp_path / "d")
    format_directory(load_config(cfg), CLUSTER_ID, no_initial_controllers=True)

    async def run() -> tuple[bool, str, int]:
        node = ControllerNode(load_config(cfg))
        await node.start()
        try:
            await asyncio.sleep(0.5)
            return node.core.is_voter, node.core.role.value, node.core.leader_id()
        finally:
            await node.stop()

    assert asyncio.run(run()) == (False, "unattached", -1)


class _Recorder:
    def __init__(self, order: list[str], fail: bool = False) -> None:
        self.order = order
        self.fail = fail

    def apply(self, effect: object) -> None:
        if self.fail:
            raise LogIOError("fsync of quorum-state failed")
        self.order.append(type(effect).__name__)


def test_persist_happens_before_send_and_a_failed_persist_sends_nothing(tmp_path: Path) -> None:
    node = single_node(tmp_path)
    order: list[str] = []

    def spawn(coro: Any) -> None:
        order.append("send")
        coro.close()

    node._spawn = spawn  # type: ignore[method-assign]
    node.mirror = _Recorder(order)  # type: ignore[assignment]
    vote = core_messages.VoteRequest()
    node._execute([PersistElectionState(ElectionState(3, -1, ReplicaKey(1))), SendRequest(2, 1, vote)])
    assert order == ["PersistElectionState", "send"]
    order.clear()
    node.mirror = _Recorder(order, fail=True)  # type: ignore[assignment]
    with pytest.raises(LogIOError):
        node._execute([PersistElectionState(ElectionState(4, -1, ReplicaKey(1))), SendRequest(2, 2, vote)])
    assert order == []


def test_end_quorum_epoch_opens_the_connection_to_a_preferred_successor_before_any_request(
    tmp_path: Path,
) -> None:
    """kraftd.shell.net.membership contract 4: told by leader 2 that it resigns, node 1 connects to voter 3 (the
    first preferred successor) at once, not when its first Vote or Fetch needs it. Node 1 is second of two, so
    it waits (election backoff max / 2 = 5 s here) before its own pre-votes: nothing else uses that
    connection in the meantime. Before contract 4 no connection was made until a request needed it."""
    ports = free_ports(3)
    voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(ports))
    slow = {
        "controller.quorum.election.timeout.ms": "10000",
        "controller.quorum.election.backoff.max.ms": "10000",
    }
    cfg = write_properties(tmp_path / "1.properties", 1, ports[0], tmp_path / "d", voters, slow)
    format_directory(load_config(cfg), CLUSTER_ID)
    seen: list[int] = []

    async def record(header: Any, body: Any, info: Any) -> Any:
        seen.append(header.request_api_key)
        raise KraftError("the stand-in for voter 3 answers nothing")

    async def run() -> tuple[int, list[int]]:
        peer3 = KafkaServer(record, table.supported_versions(), port=ports[2])
        await peer3.start()
        node = ControllerNode(load_config(cfg), seed=1)
        await node.start()
        conn = PeerConnection("127.0.0.1", node.port, client_id="t", timeout_ms=3000)
        try:
            end = core_messages.end_quorum_request(CLUSTER_ID, 2, 1, [ReplicaKey(3), ReplicaKey(1)])
            resp = await conn.request(end)
            assert resp.error_code == ErrorCode.NONE
            for _ in range(300):
                if peer3.stats.connections_total:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # a request on it, had there been one, would have arrived by now
            return peer3.stats.connections_total, list(seen)
        finally:
            await conn.close()
            await node.stop(graceful=False)
            await peer3.close()

    connections, requests = asyncio.run(run())
    assert connections == 1 and requests == []
