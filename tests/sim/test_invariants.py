"""Each invariant check fires on a hand-made violation (so a quiet sweep means something)."""

from __future__ import annotations

import uuid

import pytest

from kraftd.core.batches import control_batch, data_batch
from kraftd.core.log import LogBatch
from kraftd.core.types import ElectionState, ReplicaKey, VoterSet
from kraftd.core.voters import voters_record
from kraftd.sim.invariants import Checker, InvariantViolation
from kwire.control import ControlRecordType as CT


def _checker() -> Checker:
    return Checker((0, 1, 2))


def test_single_leader_per_epoch() -> None:
    c = _checker()
    c.on_persist(0, ElectionState(), ElectionState(3, 0))
    c.on_persist(1, ElectionState(), ElectionState(3, 0))
    with pytest.raises(InvariantViolation, match=r"\(1\)"):
        c.on_persist(2, ElectionState(), ElectionState(3, 2))


def test_log_matching() -> None:
    c = _checker()
    a, b = data_batch(0, 1, [b"a"], 0), data_batch(0, 1, [b"b"], 0)
    c.on_append(0, [a], 1)
    with pytest.raises(InvariantViolation, match=r"\(2\)"):
        c.on_append(1, [b], 1)


def test_committed_batches_never_truncated_or_replaced() -> None:
    c = _checker()
    a = data_batch(0, 1, [b"a"], 0)
    c.on_apply(0, (a,), [a])
    with pytest.raises(InvariantViolation, match=r"\(4\)"):
        c.on_truncate(1, [a], 1)
    with pytest.raises(InvariantViolation, match=r"\(4\)"):
        c.on_apply(1, (data_batch(0, 2, [b"x"], 0),), [])
    c.on_truncate(1, [data_batch(0, 2, [b"x"], 0)], 1)  # an uncommitted copy at the same offset may go
    c.on_truncate(2, [a], 0)  # a node that never learned a is committed may drop it (a stale leader said so)


def test_new_leader_has_committed_data() -> None:
    c = _checker()
    a = data_batch(0, 1, [b"a"], 0)
    c.on_apply(0, (a,), [a])
    c.on_new_leader(1, 2, [a])
    with pytest.raises(InvariantViolation, match=r"\(3\)"):
        c.on_new_leader(2, 3, [])


def test_hwm_monotonic_and_durable_on_majority() -> None:
    c = _checker()
    c.on_leader_hwm(0, 1, 5)
    with pytest.raises(InvariantViolation, match=r"\(5\)"):
        c.on_leader_hwm(0, 1, 4)
    a, b = data_batch(0, 1, [b"a"] * 3, 0), data_batch(3, 1, [b"b"] * 2, 0)
    log = [a, b]
    c.check_durable({0: log, 1: log, 2: []}, [(0, 5, log)])
    with pytest.raises(InvariantViolation, match=r"\(7\)"):
        c.check_durable({0: log, 1: [a], 2: []}, [(0, 5, log)])
    other = [a, data_batch(3, 2, [b"x"] * 2, 0)]  # same length, different data: does not count
    with pytest.raises(InvariantViolation, match=r"\(7\)"):
        c.check_durable({0: log, 1: other, 2: other}, [(0, 5, log)])
    c.on_apply(0, (a, b), log)
    with pytest.raises(InvariantViolation, match=r"\(4\)"):
        c.check_durable({0: log, 1: other, 2: []}, [])


def test_epoch_monotonic_and_prevote_epoch() -> None:
    c = _checker()
    with pytest.raises(InvariantViolation, match=r"\(6\)"):
        c.on_persist(0, ElectionState(4), ElectionState(3))
    c.on_prevote_sent(0, 3, 3)
    with pytest.raises(InvariantViolation, match=r"\(8\)"):
        c.on_prevote_sent(0, 4, 3)


def test_execution_contract_persist_before_send() -> None:
    from kraftd.core import effects as fx
    from kraftd.core.events import Tick
    from kraftd.sim.harness import Harness

    h = Harness(1)
    c = h.setup(3)
    n = c.nodes[0]
    assert n.core is not None
    bad = [fx.SendResponse(999, None), fx.PersistElectionState(ElectionState(9))]
    with pytest.raises(InvariantViolation, match=r"\(0\)"):
        c._execute(n, n.core, bad, Tick(0))


def _voters_batch(offset: int, ids: list[int]) -> LogBatch:
    keys = tuple(ReplicaKey(i, uuid.UUID(int=i + 1)) for i in ids)
    return control_batch(offset, 1, [(CT.KRAFT_VOTERS, voters_record(VoterSet(keys)))], 0)


def test_committed_voter_sets_differ_by_one_voter() -> None:
    c = Checker((0,))
    first, grown = _voters_batch(0, [0]), _voters_batch(1, [0, 1])
    c.on_apply(0, (first, grown), [first, grown])
    assert c.committed_voters == (0, 1) and c.voter_sets == [(0,), (0, 1)] and c.voters_changed
    jump = _voters_batch(2, [0, 1, 2, 3])
    with pytest.raises(InvariantViolation, match=r"\(10\).*committed voter sets"):
        c.on_apply(0, (jump,), [first, grown, jump])


def test_voter_change_rules_and_kafka_19850() -> None:
    c = Checker((0,))
    k = {i: ReplicaKey(i, uuid.UUID(int=i + 1)) for i in range(4)}
    with pytest.raises(InvariantViolation, match=r"own epoch"):
        c.on_voter_change(0, False, 1, {k[0]}, {k[0], k[1]})
    with pytest.raises(InvariantViolation, match=r"2 uncommitted"):
        c.on_voter_change(0, True, 2, {k[0]}, {k[0], k[1]})
    with pytest.raises(InvariantViolation, match=r"changed voters"):
        c.on_voter_change(0, True, 1, {k[0]}, {k[0], k[1], k[2]})
    # node 1 was a committed voter, then removed: an operator may add it back, its own auto-join may not
    c.on_apply(0, (_voters_batch(0, [0, 1]), _voters_batch(1, [0])), [])
    c.on_voter_change(0, True, 1, {k[0]}, {k[0], k[1]}, auto_join=False)
    c.on_voter_change(0, True, 1, {k[0]}, {k[0], k[2]}, auto_join=True)  # never a voter: fine
    assert c.auto_joins == 1
    with pytest.raises(InvariantViolation, match=r"KAFKA-19850"):
        c.on_voter_change(0, True, 1, {k[0]}, {k[0], k[1]}, auto_join=True)


def test_durability_counts_the_voter_set_in_force() -> None:
    """(4) and (7) with a changing voter set: the leader's newest set for (7), the committed set for (4), and
    once a change happened the holders need only meet every majority (4 voters: 2 holders, not 3)."""
    c = Checker((0, 1, 2))
    a = data_batch(0, 1, [b"a"], 0)
    log = [a]
    c.check_durable({0: log, 3: log}, [(0, 1, log)], leader_voters={0: (0, 3)})  # the leader's set is {0, 3}
    with pytest.raises(InvariantViolation, match=r"\(7\)"):
        c.check_durable({0: log, 1: log}, [(0, 1, log)], leader_voters={0: (0, 3)})
    with pytest.raises(InvariantViolation, match=r"\(7\)"):  # a fixed set of 4 needs 3
        c.check_durable({0: log, 1: log, 2: []}, [(0, 1, log)], leader_voters={0: (0, 1, 2, 3)})
    c.voters_changed = True  # a Voters record changed the set: 2 of 4 meet every majority of 4
    c.check_durable({0: log, 1: log, 2: []}, [(0, 1, log)], leader_voters={0: (0, 1, 2, 3)})
    with pytest.raises(InvariantViolation, match=r"\(7\)"):
        c.check_durable({0: log}, [(0, 1, log)], leader_voters={0: (0, 1, 2, 3)})
    grown = _voters_batch(1, [0, 1, 2, 3])
    c.on_apply(0, (a, grown), [a, grown])
    full = [a, grown]
    c.check_durable({0: full, 3: full}, [])
    with pytest.raises(InvariantViolation, match=r"\(4\)"):
        c.check_durable({0: full, 1: log, 2: log}, [])
