"""KIP-853 growth across kinds: a mixed quorum (Kafka 4.3.1 controllers and kraftd) grows 1 -> 3 -> 5 and shrinks
back to 1 under load with Kafka's own ``kafka-metadata-quorum add-controller/remove-controller`` and kraftd's
``kraft-metadata-quorum`` taking turns, starting once from a kraftd ``--standalone`` leader and once from a Kafka
one (3 + 2 of the two kinds), so each tool adds and removes controllers of both kinds through leaders of both kinds.
The joining controllers are formatted ``--no-initial-controllers`` (observers that find the leader through
``controller.quorum.bootstrap.servers``). With five voters the leadership is moved to the other kind; at the end the
removed controllers, still fetching as observers, hold the last voter's log byte for byte up to the high watermark,
and every write acknowledged along the way is in every log."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from pathlib import Path

import pytest

from generated.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kraftd.testing.broker_load import metadata_records
from kwire.client import KafkaClient
from kwire.control import ControlRecordType, decode_control_records
from kwire.quorum_client import fetch_quorum
from kwire.records import decode_batch
from tests.helpers.interop import (
    added_line,
    committed_batches,
    format_node,
    kafkas,
    lead_with,
    ours,
    remove_args,
    retried,
    wait_voters,
)
from tests.interop.kafka import (
    MixedQuorum,
    Node,
    classpath,
    protocol_complaints,
)

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(300)]


BROKER_RESOURCE, CONFIG_RECORD = 4, 4


class ConfigWriter:
    """Metadata load through whichever controller leads, of either kind.

    Contracts:
    1. One thread keeps one IncrementalAlterConfigs in flight: a SET of the cluster-wide ``log.retention.ms``
       (BROKER resource "") to a value never sent before. Both kinds serve it on the controller listener (KIP-919)
       and answer only once the ConfigRecord is committed, so a write answered with error 0 is acknowledged and
       its value must be in every replica's log. (kraftd's own load generators append with kraftd's private
       KraftdAppend RPC, which a Kafka leader does not serve.)
    2. Any other outcome (an error code, a timeout, a closed connection) leaves the write unknown; the writer
       then asks DescribeQuorum for the leader again. ``leaders`` holds every leader it wrote through.
    """

    FIRST_VALUE = 600_000_000

    def __init__(self, q: MixedQuorum) -> None:
        self.q = q
        self.acked: list[str] = []
        self.unknown = 0
        self.leaders: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._run()), name="config-writer", daemon=True
        )
        self._thread.start()

    async def _run(self) -> None:
        seq, leader, client = 0, -1, None
        while not self._stop.is_set():
            if client is None:
                try:
                    live = [("127.0.0.1", n.port) for n in self.q.nodes if n.alive()]
                    _, info = await fetch_quorum(live, 2, 2000)
                    leader = info.leader_id
                    client = KafkaClient(
                        "127.0.0.1", self.q.node(leader).port, client_id="config-writer", request_timeout=5.0
                    )
                except Exception:  # noqa: BLE001 - no leader known yet: ask again
                    await asyncio.sleep(0.1)
                    continue
            seq += 1
            value = str(self.FIRST_VALUE + seq)
            req = IncrementalAlterConfigsRequest(
                resources=[
                    AlterConfigsResource(
                        resource_type=BROKER_RESOURCE,
                        resource_name="",
                        configs=[AlterableConfig(name="log.retention.ms", config_operation=0, value=value)],
                    )
                ]
            )
            try:
                code = (await asyncio.wait_for(client.send(req), 6.0)).responses[0].error_code
            except Exception:  # noqa: BLE001 - an unanswered write is unknown (contract 2)
                code = -1
            if code == 0:
                self.acked.append(value)
                self.leaders.add(leader)
                await asyncio.sleep(0.005)
                continue
            self.unknown += 1
            with contextlib.suppress(Exception):
                await client.close()
            client = None
            await asyncio.sleep(0.05)
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    def wait_more(self, count: int, timeout: float = 60) -> None:
        goal = len(self.acked) + count
        deadline = time.monotonic() + timeout
        while len(self.acked) < goal:
            assert time.monotonic() < deadline, f"only {len(self.acked)} of {goal} writes acknowledged"
            assert self._thread.is_alive(), "the writer died"
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), "the writer did not stop"


def config_values(node: Node) -> list[str]:
    """Every log.retention.ms value of a ConfigRecord in the node's log, in offset order."""
    return [
        d.record.value
        for _, d in metadata_records(node.metadata_dir)
        if d.api_key == CONFIG_RECORD and d.record.name == "log.retention.ms"
    ]


def voter_history(batches: list[tuple[int, bytes]]) -> list[list[int]]:
    """The voter ids of every VotersRecord among ``batches`` (raw, in offset order)."""
    out = []
    for _, raw in batches:
        batch = decode_batch(raw)
        if batch.is_control:
            for kind, rec in decode_control_records(batch):
                if kind == ControlRecordType.KRAFT_VOTERS:
                    out.append(sorted(v.voter_id for v in rec.voters))
    return out


@pytest.mark.timeout(480)
@pytest.mark.parametrize("first", ["kraftd", "kafka"])
def test_mixed_quorum_grows_to_five_and_back_to_one_under_load(tmp_path: Path, first: str) -> None:
    classpath()
    other = "kafka" if first == "kraftd" else "kraftd"
    q = MixedQuorum(
        tmp_path,
        [first, other, first, other, first],
        bootstrap="kip853",
        format_nodes=False,
        extra={"controller.quorum.auto.join.enable": "false"},
    )
    tools = [kafkas, ours]  # alternated: each tool adds and removes controllers of both kinds
    with q:
        one, *rest = q.nodes
        format_node(q, one, "--standalone")
        for n in rest:
            format_node(q, n, "--no-initial-controllers")
        q.start_all()
        wait_voters(q, [1], "the standalone leader")
        q.wait_for(
            "four observers", lambda i: {o.replica_id for o in i.observers} == {2, 3, 4, 5}, timeout=120
        )
        writer = ConfigWriter(q)
        writer.wait_more(20)
        leaders = {1}
        members = [1]
        for step, n in enumerate(rest):  # 1 -> 2 -> 3 -> 4 -> 5, one voter at a time
            tool = tools[step % 2]
            out = retried(
                functools.partial(tool, q, "--command-config", str(n.config), "add-controller"),
                f"add {n.node_id}",
                q,
            )
            assert out.stdout == added_line(n)
            members.append(n.node_id)
            leaders.add(wait_voters(q, members, f"{len(members)} voters"))
            writer.wait_more(10)
        # Five voters: kill -9 leaders until one of the other kind leads (each restarted; 4 of 5 stay up).
        leader = q.wait_leader().leader_id
        # Which follower wins is whichever times out first (both kinds pre-vote at once on a fetch timeout): with
        # 3 Kafka voters of 5 a Kafka node often wins, so allow as many rounds as test_snapshots does.
        leaders.add(lead_with(q, "kafka" if q.node(leader).kind == "kraftd" else "kraftd", attempts=20))
        wait_voters(q, members, "five voters after the leader moved")
        writer.wait_more(10)
        assert {q.node(i).kind for i in leaders} == {"kafka", "kraftd"}, leaders
        # 5 -> 1: first the leader itself (it resigns once the change commits), then followers.
        for step in range(4):
            leader = q.wait_leader().leader_id
            gone = leader if step == 0 else next(i for i in reversed(members) if i != leader)
            tool = tools[step % 2]
            retried(functools.partial(tool, q, *remove_args(q, gone)), f"remove {gone}", q)
            members.remove(gone)
            leaders.add(wait_voters(q, members, f"{len(members)} voters"))
            writer.wait_more(10)
        writer.stop()
        assert len(writer.acked) >= 100, "the writer barely ran"
        assert {q.node(i).kind for i in writer.leaders} == {"kafka", "kraftd"}, writer.leaders
        # Every replica (the last voter and the four removed ones, now observers) reaches the high watermark ...
        (last,) = members
        info = q.wait_for(
            "every replica at the high watermark",
            lambda i: (
                i.leader_id == last
                and [v.replica_id for v in i.voters] == [last]
                and {o.replica_id for o in i.observers} == set(range(1, 6)) - {last}
                and all(r.log_end_offset >= i.high_watermark for r in (*i.voters, *i.observers))
            ),
            timeout=90,
        )
        # ... and holds the same batches below it (control records too: the same voter set history).
        logs = {n.node_id: committed_batches(q, n.node_id, info.high_watermark) for n in q.nodes}
        for i in range(2, 6):
            assert logs[i] == logs[1], (
                f"node {i} ({q.node(i).kind}) differs from node 1 below {info.high_watermark}"
            )
        # The voter set history they agree on: one voter added or removed at a time, up to five and down to the
        # last (a leader may write the set it started its epoch with again: repeats are collapsed).
        written = voter_history(logs[1])
        history = [v for k, v in enumerate(written) if k == 0 or v != written[k - 1]]
        assert [len(v) for v in history][-8:] == [2, 3, 4, 5, 4, 3, 2, 1] and history[-1] == [last], history
        assert all(len(set(a) ^ set(b)) == 1 for a, b in zip(history, history[1:], strict=False)), history
        # Every acknowledged write is in every log, exactly once.
        for n in q.nodes:
            values = config_values(n)
            assert len(values) == len(set(values)), f"node {n.node_id} holds a value twice"
            missing = set(writer.acked) - set(values)
            assert not missing, (
                f"node {n.node_id} lost {len(missing)} acknowledged writes, e.g. {sorted(missing)[:3]}"
            )
        for n in q.nodes:
            if n.kind == "kafka":
                assert protocol_complaints(n.log_text()) == [], n.tail()
