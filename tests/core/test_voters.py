"""KIP-853 voter set history and the start-of-epoch control records (as Kafka's LeaderState writes them)."""

from __future__ import annotations

import random
import uuid

from kraftd.core import QuorumConfig, RaftNode, ReplicaKey, VoterSet
from kraftd.core import effects as fx
from kraftd.core.batches import control_batch, data_batch
from kraftd.core.events import LogFlushed, Tick
from kraftd.core.log import LogBatch
from kraftd.core.types import ElectionState, Listener
from kraftd.core.voters import VoterHistory, control_entries, kraft_version_record, voters_record
from kwire.control import ControlRecordType as CT

D1, D2, D3 = (uuid.UUID(int=i) for i in (11, 12, 13))
ONE = VoterSet((ReplicaKey(1, D1),), ((1, (Listener("CONTROLLER", "127.0.0.1", 9001),)),))


def single(kraft_version: int, **kw: object) -> RaftNode:
    return RaftNode(
        local=ReplicaKey(1, D1),
        voters=ONE,
        config=QuorumConfig(),
        rng=random.Random(1),
        cluster_id="c",
        kraft_version=kraft_version,
        **kw,
    )


def kinds(n: RaftNode) -> list[list[CT]]:
    return [[k for _, k, _ in control_entries(b)] for b in n.log.batches]


def test_kraft_version_1_leader_rewrites_the_bootstrap_voters_into_its_first_epoch() -> None:
    n = single(1)
    out = n.step(Tick(0))
    assert n.epoch == 1
    (append,) = [e for e in out if isinstance(e, fx.AppendBatches)]
    assert kinds(n) == [[CT.LEADER_CHANGE, CT.KRAFT_VERSION, CT.KRAFT_VOTERS]]
    b = n.log.batches[0]
    assert (b.base_offset, b.last_offset, n.log.end_offset) == (0, 2, 3)
    entries = {k: v for _, k, v in control_entries(b)}
    assert entries[CT.KRAFT_VERSION].kraft_version == 1
    vr = entries[CT.KRAFT_VOTERS]
    assert [(v.voter_id, v.voter_directory_id) for v in vr.voters] == [(1, D1)]
    assert [(e.name, e.host, e.port) for e in vr.voters[0].endpoints] == [("CONTROLLER", "127.0.0.1", 9001)]
    assert n.voter_history.latest_offset() == 2  # the set now comes from the log
    n.step(LogFlushed(1, 3))
    assert n.high_watermark == 3


def test_a_later_epoch_whose_voters_are_in_the_log_writes_only_leader_change() -> None:
    first = single(1)
    first.step(Tick(0))
    again = single(1, log=first.log, election_state=ElectionState(1, -1))
    again.step(Tick(0))
    assert again.epoch == 2
    assert kinds(again) == [[CT.LEADER_CHANGE, CT.KRAFT_VERSION, CT.KRAFT_VOTERS], [CT.LEADER_CHANGE]]


def test_kraft_version_0_writes_only_leader_change() -> None:
    n = single(0)
    n.step(Tick(0))
    assert kinds(n) == [[CT.LEADER_CHANGE]]


def _voters_batch(base: int, epoch: int, vs: VoterSet) -> LogBatch:
    return control_batch(base, epoch, [(CT.KRAFT_VOTERS, voters_record(vs))], 0)


def test_history_follows_uncommitted_records_and_rolls_back_on_truncation() -> None:
    three = VoterSet((ReplicaKey(1, D1), ReplicaKey(2, D2), ReplicaKey(3, D3)))
    n = RaftNode(
        local=ReplicaKey(2, D2),
        voters=three,
        config=QuorumConfig(),
        rng=random.Random(1),
        kraft_version=1,
        election_state=ElectionState(1, 1),
    )
    n.log_append(control_batch(0, 1, [(CT.KRAFT_VERSION, kraft_version_record(1))], 0))
    n.log_append(data_batch(1, 1, [b"a"], 0))
    two = three.without(ReplicaKey(3, D3))
    n.log_append(_voters_batch(2, 1, two))
    assert n.voters.ids == (1, 2)  # in force at once, uncommitted (KIP-853)
    assert n.voter_history.committed(n.high_watermark).ids == (1, 2, 3)
    assert n.voter_history.has_uncommitted(n.high_watermark)
    n.log_truncate(2)
    assert n.voters.ids == (1, 2, 3)
    assert not n.voter_history.has_uncommitted(0)


def test_voters_records_below_kraft_version_1_are_ignored() -> None:
    h = VoterHistory(VoterSet.of(1, 2, 3), 0)
    h.observe(_voters_batch(0, 1, VoterSet.of(1)))
    assert h.latest().ids == (1, 2, 3)
    h.observe(control_batch(1, 1, [(CT.KRAFT_VERSION, kraft_version_record(1))], 0))
    h.observe(_voters_batch(2, 1, VoterSet.of(1)))
    assert h.latest().ids == (1,)
    assert h.committed(2).ids == (1, 2, 3) and h.committed(3).ids == (1,)
    assert h.committed_version(1) == 0 and h.committed_version(2) == 1
