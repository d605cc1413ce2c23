"""kraft.version 0 -> 1 on the leader (kraftd.core.kraft_upgrade): voters report their directory ids and ranges
with UpdateRaftVoter to each new leader; the upgrade needs all of them; a downgrade is refused with Kafka's
message; success writes KRaftVersion(1) and Voters in one control batch, and every replica then uses the log's
voter set (with directory ids)."""

from __future__ import annotations

import uuid

from kraftd.core import QuorumConfig, ReplicaKey, VoterSet
from kraftd.core.types import Listener
from kraftd.core.voters import control_entries
from kwire.control import ControlRecordType as CT
from kwire.errors import ErrorCode
from tests.core.pump import Pump

DIRS = {i: uuid.UUID(int=40 + i) for i in (1, 2, 3)}


def quorum(report: bool = True) -> Pump:
    cfg = QuorumConfig(report_to_leader=report, local_listeners=(Listener("CONTROLLER", "127.0.0.1", 9000),))
    p = Pump(VoterSet.of(1, 2, 3), cfg, kraft_version=0)
    for i in (1, 2, 3):
        p.add(ReplicaKey(i, DIRS[i]))
    p.run(20_000, stop=lambda: p.leader() is not None and p.leader().high_watermark > 0)  # type: ignore[union-attr]
    p.run(p.now + 5000)
    return p


def test_upgrade_after_every_voter_reported_writes_one_batch_and_every_replica_follows() -> None:
    p = quorum()
    lead = p.leader()
    assert lead is not None and set(lead.volatile_voters) == {1, 2, 3} - {lead.local.id}
    assert lead.upgrade_kraft_version(1, validate_only=True) == (ErrorCode.NONE, None)
    assert lead.voter_history.kraft_version == 0  # validate-only writes nothing
    assert lead.upgrade_kraft_version(1, validate_only=False) == (ErrorCode.NONE, None)
    p.run(p.now + 3000)
    last = [b for b in lead.log.batches if b.is_control][-1]
    assert [k for _, k, _ in control_entries(last)] == [CT.KRAFT_VERSION, CT.KRAFT_VOTERS]
    for n in p.nodes.values():
        assert n.voter_history.kraft_version == 1
        assert sorted((k.id, k.directory_id) for k in n.voters.voters) == sorted(DIRS.items())
    assert lead.upgrade_kraft_version(1, False) == (ErrorCode.NONE, None)  # already there: a no-op
    code, msg = lead.upgrade_kraft_version(0, False)
    assert code == ErrorCode.INVALID_UPDATE_VERSION
    assert msg == (
        "Invalid upgrade of kraft.version from version KRAFT_VERSION_1 to KRAFT_VERSION_0 because the new version "
        "is a downgrade"
    )


def test_without_the_voters_reports_the_upgrade_is_refused() -> None:
    p = quorum(report=False)
    lead = p.leader()
    assert lead is not None and lead.volatile_voters == {}
    code, msg = lead.upgrade_kraft_version(1, False)
    assert code == ErrorCode.INVALID_UPDATE_VERSION
    assert msg == "Invalid upgrade of kraft.version from version KRAFT_VERSION_0 to KRAFT_VERSION_1"
    assert lead.upgrade_kraft_version(2, False)[0] == ErrorCode.INVALID_UPDATE_VERSION
    assert lead.voter_history.kraft_version == 0


def test_a_follower_is_not_the_one_to_upgrade() -> None:
    p = quorum()
    follower = next(n for n in p.nodes.values() if n is not p.leader())
    assert follower.upgrade_kraft_version(1, False)[0] == ErrorCode.NOT_CONTROLLER
