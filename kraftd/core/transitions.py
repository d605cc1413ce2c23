"""The one table of legal role transitions (Kafka's QuorumState, KIP-595 + KIP-996).

Invariants:
1. Every role change of a node goes through :func:`check_transition`; anything not in ``TRANSITIONS`` raises
   :class:`IllegalTransitionError`.
2. Observers (replicas outside the voter set) only ever hold UNATTACHED or FOLLOWER, except that a leader
   removed from the voter set (KIP-853) resigns: Leader -> Resigned.
3. The epoch never decreases; a transition that keeps the epoch must be listed in ``SAME_EPOCH``
   (e.g. Prospective -> Follower of the already-known leader, Candidate -> Follower of the winner).
4. Entering Prospective or Resigned never changes the epoch (``KEEP_EPOCH``).
"""

from __future__ import annotations

from kraftd.core.types import Role
from kwire.errors import LocalProtocolError

U, P, C, L, F, R = (
    Role.UNATTACHED,
    Role.PROSPECTIVE,
    Role.CANDIDATE,
    Role.LEADER,
    Role.FOLLOWER,
    Role.RESIGNED,
)

TRANSITIONS: dict[Role, frozenset[Role]] = {
    U: frozenset({U, P, F}),  # higher epoch or a granted vote; election timeout; a leader
    P: frozenset({U, C, F}),  # higher epoch or lost; majority of pre-votes; a leader
    C: frozenset({U, P, L, F}),  # higher epoch; timeout or loss after backoff; majority; the winner
    L: frozenset({U, R, F}),  # higher epoch; check-quorum/shutdown; a higher-epoch leader
    F: frozenset({U, P, F}),  # higher epoch (observers: fetch timeout); fetch timeout; a new leader
    R: frozenset({U, P, F}),  # higher epoch or election timeout; the only voter; a higher-epoch leader
}

# Transitions allowed without raising the epoch (invariant 3).
SAME_EPOCH: frozenset[tuple[Role, Role]] = frozenset(
    {(U, U), (U, P), (U, F), (P, U), (P, C), (P, F), (C, P), (C, L), (C, F), (L, R), (R, P), (F, P), (F, U)}
)

OBSERVER_ROLES = frozenset({U, F})

# Entering these never changes the epoch (KIP-996: pre-vote is epoch-neutral; resigning keeps the term).
KEEP_EPOCH = frozenset({P, R})


class IllegalTransitionError(LocalProtocolError):
    """A role change the table forbids (a bug in the core, never a peer's fault)."""


def check_transition(src: Role, dst: Role, src_epoch: int, dst_epoch: int, is_voter: bool) -> None:
    if dst not in TRANSITIONS[src]:
        raise IllegalTransitionError(f"{src.value} -> {dst.value} is not a legal transition")
    if not is_voter and dst not in OBSERVER_ROLES and (src, dst) != (L, R):  # a removed leader resigns
        raise IllegalTransitionError(f"an observer cannot become {dst.value}")
    if dst_epoch < src_epoch:
        raise IllegalTransitionError(f"{src.value} -> {dst.value}: epoch {src_epoch} -> {dst_epoch}")
    if dst in KEEP_EPOCH and dst_epoch != src_epoch:
        raise IllegalTransitionError(f"entering {dst.value} must keep epoch {src_epoch}, not {dst_epoch}")
    if dst_epoch == src_epoch and (src, dst) not in SAME_EPOCH:
        raise IllegalTransitionError(f"{src.value} -> {dst.value} requires a higher epoch than {src_epoch}")
