"""The one transition table: every legal pair passes, everything else raises a typed error."""

from __future__ import annotations

import itertools

import pytest

from kraftd.core.transitions import (
    KEEP_EPOCH,
    OBSERVER_ROLES,
    SAME_EPOCH,
    TRANSITIONS,
    IllegalTransitionError,
    check_transition,
)
from kraftd.core.types import Role
from kwire.errors import KraftError, LocalProtocolError

PAIRS = list(itertools.product(Role, Role))


@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=lambda r: r.value)
def test_table_is_the_only_authority(src: Role, dst: Role) -> None:
    epoch = 0 if dst in KEEP_EPOCH else 1
    if dst in TRANSITIONS[src]:
        check_transition(src, dst, 0, epoch, is_voter=True)
    else:
        with pytest.raises(IllegalTransitionError):
            check_transition(src, dst, 0, epoch, is_voter=True)


def test_kafka_shape_of_the_table() -> None:
    assert TRANSITIONS[Role.LEADER] == {Role.UNATTACHED, Role.RESIGNED, Role.FOLLOWER}
    assert Role.CANDIDATE not in TRANSITIONS[Role.UNATTACHED]  # always through Prospective (KIP-996)
    assert Role.LEADER not in TRANSITIONS[Role.PROSPECTIVE]
    # Resigned -> Prospective only for the only voter at start-up (Kafka 4.3.1's KafkaRaftClient.initialize).
    assert TRANSITIONS[Role.RESIGNED] == {Role.UNATTACHED, Role.PROSPECTIVE, Role.FOLLOWER}


@pytest.mark.parametrize("dst", [Role.PROSPECTIVE, Role.CANDIDATE, Role.LEADER, Role.RESIGNED])
def test_observers_never_campaign(dst: Role) -> None:
    for src in (s for s in Role if dst in TRANSITIONS[s] and (s, dst) != (Role.LEADER, Role.RESIGNED)):
        with pytest.raises(IllegalTransitionError, match="observer"):
            check_transition(src, dst, 1, 1 if dst in KEEP_EPOCH else 2, is_voter=False)


def test_a_leader_removed_from_the_voters_may_resign() -> None:
    check_transition(
        Role.LEADER, Role.RESIGNED, 3, 3, is_voter=False
    )  # KIP-853: it steps down after the commit


def test_observer_roles() -> None:
    assert OBSERVER_ROLES == {Role.UNATTACHED, Role.FOLLOWER}
    check_transition(Role.UNATTACHED, Role.FOLLOWER, 1, 1, is_voter=False)


def test_epoch_never_decreases() -> None:
    with pytest.raises(IllegalTransitionError, match="epoch"):
        check_transition(Role.FOLLOWER, Role.UNATTACHED, 5, 4, is_voter=True)


def test_same_epoch_needs_listing() -> None:
    assert (Role.FOLLOWER, Role.FOLLOWER) not in SAME_EPOCH  # one leader per epoch
    with pytest.raises(IllegalTransitionError, match="higher epoch"):
        check_transition(Role.FOLLOWER, Role.FOLLOWER, 3, 3, is_voter=True)
    check_transition(Role.FOLLOWER, Role.FOLLOWER, 3, 4, is_voter=True)


def test_prospective_and_resigned_keep_the_epoch() -> None:
    with pytest.raises(IllegalTransitionError, match="keep epoch"):
        check_transition(Role.FOLLOWER, Role.PROSPECTIVE, 3, 4, is_voter=True)
    with pytest.raises(IllegalTransitionError, match="keep epoch"):
        check_transition(Role.LEADER, Role.RESIGNED, 3, 4, is_voter=True)


def test_error_is_typed() -> None:
    assert issubclass(IllegalTransitionError, LocalProtocolError)
    assert issubclass(IllegalTransitionError, KraftError)
